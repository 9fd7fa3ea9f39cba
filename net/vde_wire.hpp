// A device port plugged into a virtual Ethernet through libvdeplug
// (net/README.md, "Virtual wires"): frames other programs put on the wire
// come out of next(), frames the port sends go out through send(). One
// object, the device's source and one of its sinks.
#pragma once

#include <sys/types.h>
#include <sys/un.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "net/dgram_batch.hpp"
#include "net/frame_sink.hpp"
#include "net/frame_source.hpp"
#include "net/result.hpp"
#include "net/tx_backlog.hpp"

// libvdeplug's connection, declared at global scope as <libvdeplug.h> does.
struct vdeconn;

namespace rdmasim::net {

struct VdeWireOptions {
    // Mode of a socket file the wire creates (ptp:// ends, the data socket a
    // vde:// switch connects back to). Owner read and write are required.
    std::uint32_t mode = 0600;
};

// What went out, and what failed, readable from any thread.
struct WireCounters {
    std::atomic<std::uint64_t> tx_frames{0};
    std::atomic<std::uint64_t> tx_bytes{0};
    std::atomic<std::uint64_t> tx_failures{0}; // frames lost: vde_send refused them (no peer, peer gone, ...)
    std::atomic<int> tx_last_errno{0};         // errno of the latest failure
    std::atomic<std::uint64_t> rx_errors{0};   // vde_recv errors other than "nothing now"
    std::atomic<std::uint64_t> rx_empty{0};    // zero-byte datagrams, ignored
    std::atomic<std::uint64_t> rx_strangers{0}; // ptp: datagrams not from the peer, dropped
};

class VdeWire final : public FrameSource, public FrameSink {
public:
    // The largest frame a wire carries: libvdeplug's VDE_ETHBUFSIZE (9216-byte
    // MTU, Ethernet header and one 802.1Q tag). A longer datagram is handed
    // over cut to this length and marked truncated (the port drops it).
    static constexpr std::uint32_t kMaxFrame = 9216 + 14 + 4;
    // The longest ptp:// socket path: the peer's, one byte longer, must fit
    // a unix socket's 107-byte name (libvdeplug cuts longer ones silently).
    static constexpr std::size_t kMaxPtpPath = 106;

    // `url` is ptp://PATH, vde://PATH (a vde_switch's directory) or
    // vxvde://GROUP[/OPTION...]; any other scheme is EINVAL. Errors name the
    // URL and carry libvdeplug's errno text.
    static Result<std::unique_ptr<VdeWire>> open(const std::string& url,
                                                 const VdeWireOptions& options = {});
    ~VdeWire() override;
    VdeWire(const VdeWire&) = delete;
    VdeWire& operator=(const VdeWire&) = delete;

    // --- source: one datagram per call, never blocking. A zero-byte
    // datagram is ignored (rx_empty). On ptp:// only the peer's datagrams
    // pass: those sent from the other end's socket file (PATH+ for the end
    // that created PATH, PATH for the other; compared by inode, so two
    // spellings of one path agree); any other sender, unnamed ones too, is
    // dropped and counted (rx_strangers). The socket is read here, not by
    // libvdeplug, whose ptp module disconnects an end on an empty datagram
    // and then lets anyone in. On ptp:// next_burst() reads a burst in one
    // recvmmsg ---
    bool next(Frame& out) noexcept override;
    std::uint32_t next_burst(std::span<Frame> out) noexcept override;
    // True only after a vde_switch hung up (failure() says so).
    [[nodiscard]] bool exhausted() const noexcept override {
        return hung_up_.load(std::memory_order_acquire);
    }
    [[nodiscard]] std::string describe() const override;
    [[nodiscard]] const SourceCounters& counters() const noexcept override { return counters_; }
    [[nodiscard]] std::string_view failure() const noexcept override {
        return exhausted() ? std::string_view(hangup_) : std::string_view();
    }
    [[nodiscard]] int wait_fd() const noexcept override { return data_fd_; }
    [[nodiscard]] bool shared_across_fork() const noexcept override { return true; }

    // --- sink: one datagram per frame. On ptp://, once connected to the
    // peer, frames are staged and go in one sendmmsg when the stage is full
    // or at flush(), which the port calls after every verb and burst. A
    // frame the peer's queue cannot take
    // now waits in the backlog, in order, as a NIC's transmit queue waits
    // under Ethernet pause, and flush() sends it once there is room (net/README.md,
    // "Lossless links"). Any other refusal (no peer, a peer gone) loses the
    // frame and is counted in tx_failures ---
    void send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept override;
    std::size_t flush() noexcept override;
    [[nodiscard]] bool congested() const noexcept override { return backlog_.congested(); }
    // Frames staged, in the backlog, or in the socket's queue (SIOCOUTQ: not yet
    // read by the peer or the switch).
    [[nodiscard]] bool unread() const noexcept override;
    [[nodiscard]] std::size_t backlog_frames() const noexcept { return backlog_.frames(); }
    [[nodiscard]] const TxBacklogCounters* backlog_counters() const noexcept override {
        return &backlog_.counters();
    }

    [[nodiscard]] const WireCounters& wire_counters() const noexcept { return wire_; }
    [[nodiscard]] const std::string& url() const noexcept { return url_; }

private:
    VdeWire() = default;
    // After a read found nothing: did the switch close its control connection?
    void check_hangup() noexcept;
    // One datagram onto the wire: true when it went, or when it is lost
    // for good (counted); false when the peer's queue is full (EAGAIN).
    bool try_send(std::span<const std::uint8_t> frame) noexcept;
    // The staged frames onto the wire; what it cannot take now goes to the
    // backlog, in order.
    void send_staged() noexcept;
    // Frames from the backlog in one sendmmsg (and more while it takes
    // them): how many are gone, sent or lost for good.
    std::size_t send_batch(std::span<const std::span<const std::uint8_t>> frames) noexcept;
    // A datagram of `got` bytes at `data` handed over as a frame, counted.
    void hand_over(Frame& out, std::uint8_t* data, std::size_t got, std::uint64_t ts_ns) noexcept;
    // ptp://: did `from` come from the peer's socket file? Caches the
    // address last found to be the peer's, so a frame costs one compare.
    bool from_peer(const sockaddr_un& from, socklen_t len) noexcept;

    ::vdeconn* conn_ = nullptr;
    static constexpr std::uint32_t kRetryEvery = 16; // send(): see there
    std::uint32_t behind_ = 0;                       // sends made while the backlog waited
    int data_fd_ = -1;
    int ctl_fd_ = -1;
    std::string url_;
    std::vector<std::uint8_t> buf_; // kMaxFrame + 1: one byte more shows a longer datagram
    std::unique_ptr<RecvBatch> rx_; // ptp:// only: the datagrams of one next_burst()
    std::unique_ptr<SendBatch> tx_; // ptp:// only: frames staged for one sendmmsg
    SourceCounters counters_;
    WireCounters wire_;
    std::atomic<bool> hung_up_{false};
    TxBacklog backlog_;                // frames waiting for room on the wire; under the port lock
    std::string hangup_; // failure()'s text once hung up, made at open
    bool ptp_ = false;
    // vxvde://: libvdeplug's recv waits in epoll_wait(-1) whatever the
    // descriptor's flags, so next() polls its epoll descriptor first.
    bool poll_first_ = false;
    std::string peer_path_;            // ptp://: the socket file the peer binds
    bool connected_to_peer_ = false;   // ptp://: the kernel refuses strangers too
    sockaddr_un accepted_{};           // the sender address last found to be the peer
    socklen_t accepted_len_ = 0;       // 0: none yet
};

} // namespace rdmasim::net
