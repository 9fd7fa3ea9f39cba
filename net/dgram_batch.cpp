#include "net/dgram_batch.hpp"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>

namespace rdmasim::net {

RecvBatch::RecvBatch(std::size_t slot_bytes) : slot_(slot_bytes), bytes_(kSlots * slot_bytes) {
    for (std::size_t i = 0; i < kSlots; ++i) {
        iov_[i] = {bytes_.data() + i * slot_, slot_};
        msgs_[i].msg_hdr.msg_iov = &iov_[i];
        msgs_[i].msg_hdr.msg_iovlen = 1;
    }
}

int RecvBatch::read(int fd, std::size_t max) noexcept {
    const std::size_t n = std::min(max, kSlots);
    for (std::size_t i = 0; i < n; ++i) { // the kernel rewrites these per call
        msgs_[i].msg_hdr.msg_name = &names_[i];
        msgs_[i].msg_hdr.msg_namelen = sizeof names_[i];
        msgs_[i].msg_hdr.msg_flags = 0;
        msgs_[i].msg_len = 0;
    }
    return ::recvmmsg(fd, msgs_.data(), static_cast<unsigned>(n), MSG_DONTWAIT | MSG_TRUNC,
                      nullptr);
}

std::size_t RecvBatch::length(std::size_t i) const noexcept {
    // With MSG_TRUNC a datagram's msg_len is its full length; the flag in
    // msg_flags says it was cut, so a cut one never reads as slot_ exactly.
    const std::size_t len = msgs_[i].msg_len;
    if ((msgs_[i].msg_hdr.msg_flags & MSG_TRUNC) != 0 && len <= slot_) return slot_ + 1;
    return len;
}

SendBatch::SendBatch(std::size_t slot_bytes) : slot_(slot_bytes), bytes_(kSlots * slot_bytes) {
    for (std::size_t i = 0; i < kSlots; ++i) {
        msgs_[i].msg_hdr.msg_iov = &iov_[i];
        msgs_[i].msg_hdr.msg_iovlen = 1;
    }
}

void SendBatch::add(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept {
    std::uint8_t* slot = bytes_.data() + count_ * slot_;
    std::memcpy(slot, frame.data(), frame.size());
    iov_[count_] = {slot, frame.size()};
    ts_[count_] = ts_ns;
    ++count_;
}

SendBatch::Sent SendBatch::send(int fd) noexcept {
    Sent sent;
    while (!empty()) {
        const int n = ::sendmmsg(fd, msgs_.data() + first_, static_cast<unsigned>(count_ - first_),
                                 MSG_DONTWAIT);
        if (n <= 0) break; // errno: the refusal of front()
        for (const std::size_t end = first_ + static_cast<std::size_t>(n); first_ < end; ++first_) {
            ++sent.frames;
            sent.bytes += iov_[first_].iov_len;
        }
    }
    if (empty()) first_ = count_ = 0;
    return sent;
}

SendBatch::Sent
SendBatch::send_in_place(int fd, std::span<const std::span<const std::uint8_t>> frames) noexcept {
    // The stage's iovecs are borrowed: staged frames would be overwritten.
    // VdeWire keeps it so: it stages only while its backlog is empty.
    assert(empty());
    const std::size_t n = std::min(frames.size(), kSlots);
    for (std::size_t i = 0; i < n; ++i)
        iov_[i] = {const_cast<std::uint8_t*>(frames[i].data()),
                   frames[i].size()}; // sendmsg only reads
    count_ = n;
    Sent sent = send(fd);
    first_ = count_ = 0; // the frames stay the caller's
    return sent;
}

std::span<const std::uint8_t> SendBatch::front() const noexcept {
    return {static_cast<const std::uint8_t*>(iov_[first_].iov_base), iov_[first_].iov_len};
}

void SendBatch::pop() noexcept {
    if (++first_ == count_) first_ = count_ = 0;
}

} // namespace rdmasim::net
