// A live Ethernet interface through an AF_PACKET socket: receive from a
// TPACKET_V3 memory-mapped ring, send with non-blocking send(2) on the same
// socket (net/README.md, "Live interfaces").
//
// Receive: every frame the interface receives (ETH_P_ALL), never the ones
// sent from this host (PACKET_IGNORE_OUTGOING, and PACKET_OUTGOING frames
// skipped should the kernel not honour it). The kernel strips the outer VLAN
// tag and reports it beside the frame; next() puts it back after the source
// MAC, as the wire carried it. Frames carry no FCS. Timestamps are the
// kernel's, in ns since the epoch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "net/frame_sink.hpp"
#include "net/frame_source.hpp"
#include "net/result.hpp"
#include "net/send_counters.hpp"
#include "net/tx_backlog.hpp"

namespace rdmasim::net {

struct AfPacketOptions {
    std::string iface;                   // interface name, e.g. "eth0"
    bool promisc = false;                // PACKET_MR_PROMISC, dropped when the socket closes
    std::uint32_t block_bytes = 1 << 18; // ring block size: a power of two, >= the page size
    std::uint32_t blocks = 32;           // ring blocks (8 MiB by default)
    std::uint32_t retire_ms = 1;         // a partly filled block goes to user space after this
};

class AfPacketPort final : public FrameSource, public FrameSink {
public:
    // Errors, each naming the interface: ENODEV (no such interface), EPERM
    // (no CAP_NET_RAW), EINVAL (not an Ethernet interface, bad ring sizes),
    // or the errno of the failing call. Nothing stays open after an error.
    static Result<std::unique_ptr<AfPacketPort>> open(const AfPacketOptions& options);
    ~AfPacketPort() override;
    AfPacketPort(const AfPacketPort&) = delete;
    AfPacketPort& operator=(const AfPacketPort&) = delete;

    // The next frame of the ring. A block goes back to the kernel at the
    // first call after its last frame was handed over, so a frame's bytes
    // stay valid until the next call. Reads the kernel's drop count
    // (PACKET_STATISTICS) whenever a block goes back, and every 10 ms or so
    // while the ring is empty.
    bool next(Frame& out) noexcept override;
    // A live interface never ends.
    [[nodiscard]] bool exhausted() const noexcept override { return false; }
    // "interface eth0 (AF_PACKET, TPACKET_V3 ring 32 x 256 KiB, promiscuous)".
    [[nodiscard]] std::string describe() const override;
    [[nodiscard]] const SourceCounters& counters() const noexcept override { return counters_; }
    // The socket: readable when a ring block is ready.
    [[nodiscard]] int wait_fd() const noexcept override { return fd_; }
    [[nodiscard]] bool shared_across_fork() const noexcept override { return true; }

    // One frame out of the interface, MSG_DONTWAIT. A full socket buffer or
    // device queue (EAGAIN, ENOBUFS) is a pause: the frame waits in the
    // backlog, in order, until flush() (net/README.md, "Lossless links");
    // any other refusal is counted in send_counters() and the frame lost.
    void send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept override;
    std::size_t flush() noexcept override;
    [[nodiscard]] bool congested() const noexcept override { return backlog_.congested(); }
    [[nodiscard]] bool unread() const noexcept override { return !backlog_.empty(); }
    [[nodiscard]] const TxBacklogCounters* backlog_counters() const noexcept override {
        return &backlog_.counters();
    }
    [[nodiscard]] const SendCounters& send_counters() const noexcept { return sent_; }
    [[nodiscard]] const std::string& iface() const noexcept { return options_.iface; }
    // Whether PACKET_QDISC_BYPASS was accepted (sends skip the qdisc layer).
    [[nodiscard]] bool qdisc_bypass() const noexcept { return qdisc_bypass_; }

private:
    AfPacketPort() = default;
    bool take_block() noexcept;   // the current block, if the kernel handed it over
    void return_block() noexcept; // back to the kernel; advances to the next block
    void read_statistics() noexcept;
    bool try_send(std::span<const std::uint8_t> frame) noexcept; // false: no room now

    AfPacketOptions options_;
    int fd_ = -1;
    int ifindex_ = 0;
    bool qdisc_bypass_ = false;
    std::uint8_t* ring_ = nullptr;
    std::size_t ring_bytes_ = 0;
    std::uint32_t block_ = 0;           // index of the block being read
    bool owned_ = false;                // block_ belongs to us (TP_STATUS_USER seen)
    std::uint32_t left_ = 0;            // frames of block_ not handed over yet
    const std::uint8_t* packet_ = nullptr; // the next of them (a tpacket3_hdr)
    std::uint64_t next_stats_ns_ = 0;   // CLOCK_MONOTONIC_COARSE time of the next idle read
    std::vector<std::uint8_t> scratch_; // a frame with its VLAN tag put back
    SourceCounters counters_;
    SendCounters sent_;
    TxBacklog backlog_; // under the port lock, as send()
};

} // namespace rdmasim::net
