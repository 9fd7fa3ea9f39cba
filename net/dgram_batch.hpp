// Datagrams moved a batch per system call on a non-blocking socket
// (recvmmsg, sendmmsg): on ptp:// the system call, not the copy, is what a
// frame costs (net/README.md, "Virtual wires", "Batches").
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rdmasim::net {

// Up to kSlots datagrams read in one recvmmsg, each with its sender's
// address. A datagram longer than a slot is cut to slot_bytes (the kernel
// says so in MSG_TRUNC; length() is then slot_bytes + 1 or more).
class RecvBatch {
public:
    static constexpr std::size_t kSlots = 32;
    explicit RecvBatch(std::size_t slot_bytes);
    RecvBatch(const RecvBatch&) = delete;
    RecvBatch& operator=(const RecvBatch&) = delete;

    // Reads what is queued now, at most `max` datagrams (clamped to kSlots),
    // without waiting. The count read, or -1 with errno (EAGAIN: none). The
    // previous batch's bytes are overwritten.
    int read(int fd, std::size_t max) noexcept;
    // The i-th datagram of the last read: its bytes (at most slot_bytes), its
    // length on the wire, its sender.
    [[nodiscard]] std::uint8_t* data(std::size_t i) noexcept { return bytes_.data() + i * slot_; }
    [[nodiscard]] std::size_t length(std::size_t i) const noexcept;
    [[nodiscard]] const sockaddr_un& sender(std::size_t i) const noexcept { return names_[i]; }
    [[nodiscard]] socklen_t sender_len(std::size_t i) const noexcept {
        return msgs_[i].msg_hdr.msg_namelen;
    }

private:
    std::size_t slot_;
    std::vector<std::uint8_t> bytes_;
    std::array<mmsghdr, kSlots> msgs_{};
    std::array<iovec, kSlots> iov_{};
    std::array<sockaddr_un, kSlots> names_{};
};

// Frames copied in one at a time and sent in order with sendmmsg on a
// connected socket. What the socket refuses stays staged, in order, for
// the caller to move elsewhere.
class SendBatch {
public:
    static constexpr std::size_t kSlots = 32;
    explicit SendBatch(std::size_t slot_bytes);
    SendBatch(const SendBatch&) = delete;
    SendBatch& operator=(const SendBatch&) = delete;

    [[nodiscard]] bool empty() const noexcept { return count_ == first_; }
    [[nodiscard]] bool full() const noexcept { return count_ == kSlots; }
    [[nodiscard]] std::size_t slot_bytes() const noexcept { return slot_; }
    // Copies `frame` (at most slot_bytes) behind the staged ones; requires !full().
    void add(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept;
    struct Sent {
        std::size_t frames = 0;
        std::size_t bytes = 0;
    };
    // Sends the staged frames, oldest first, while the socket takes them;
    // stops at the first refusal, errno telling why (that frame is
    // front()). Frames sent are forgotten.
    Sent send(int fd) noexcept;
    // Sends `frames` (at most kSlots) where they are, oldest first, while
    // the socket takes them; requires empty(). errno as for send().
    Sent send_in_place(int fd, std::span<const std::span<const std::uint8_t>> frames) noexcept;
    // The oldest frame still staged, and its time; pop() forgets it.
    [[nodiscard]] std::span<const std::uint8_t> front() const noexcept;
    [[nodiscard]] std::uint64_t front_ts() const noexcept { return ts_[first_]; }
    void pop() noexcept;

private:
    std::size_t slot_;
    std::size_t first_ = 0; // staged: [first_, count_)
    std::size_t count_ = 0;
    std::vector<std::uint8_t> bytes_;
    std::array<mmsghdr, kSlots> msgs_{};
    std::array<iovec, kSlots> iov_{};
    std::array<std::uint64_t, kSlots> ts_{};
};

} // namespace rdmasim::net
