// A device port plugged into a shared-memory wire, shm://PATH (net/README.md,
// "Shared-memory wire"): programs on one host map one file, each holds a
// host slot with one receive ring, and a learning switch in the same file
// sends each frame to the ring of the host behind its destination MAC (or
// floods it). One object, the device's source and one of its sinks.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "net/frame_sink.hpp"
#include "net/frame_source.hpp"
#include "net/result.hpp"
#include "net/shm_ring.hpp"
#include "net/shm_segment.hpp"
#include "net/tx_backlog.hpp"

namespace rdmasim::net {

struct ShmWireOptions {
    // Mode of the files the wire creates (the segment, the doorbells).
    // Owner read and write are required.
    std::uint32_t mode = 0600;
    // A wire that is not a switch (a device's family bus, sim/family_bus.hpp):
    // the host slot each frame goes to, kRouteFlood (every other live host)
    // or kRouteDrop (counted in tx_dropped). Called under the sender's lock,
    // again for a frame that waited in the backlog. Empty: the learning switch.
    std::function<int(std::span<const std::uint8_t>)> route;
    // Map this host's ring, and each peer's when first seen alive, before
    // the first frame (shm::Segment::prefault_ring). Off, the first lap of
    // a ring costs faults instead: for a wire that may carry nothing.
    bool prefault = true;
};
inline constexpr int kRouteFlood = -1;
inline constexpr int kRouteDrop = -2;

// What went through, and what was lost, readable from any thread.
struct ShmWireCounters {
    std::atomic<std::uint64_t> tx_frames{0};  // frames put into a ring (a flood counts once)
    std::atomic<std::uint64_t> tx_bytes{0};
    std::atomic<std::uint64_t> tx_floods{0};  // of them, broadcast, multicast or unknown unicast
    std::atomic<std::uint64_t> tx_no_peer{0}; // lost: the host behind the MAC is gone, nobody else plugged in
    std::atomic<std::uint64_t> tx_dropped{0}; // lost: shorter than a MAC header or longer than kMaxFrame,
                                              // to one of our own MACs, or a flood's ring filled meanwhile
    std::atomic<std::uint64_t> doorbells{0};  // sleeping readers woken
    std::atomic<std::uint64_t> rx_corrupt{0}; // ring entries not trusted (bad length, index, stalled claim)
    std::atomic<std::uint64_t> peers_seen{0}; // hosts seen arriving on the wire
    std::atomic<std::uint64_t> peers_gone{0}; // hosts seen leaving (pulled cables)

    // A frame sent. The sender holds the port lock (one writer at a time):
    // a load and a store, not a locked add, which would wait for the
    // frame's bytes to leave the store buffer at every frame.
    void sent(std::size_t len) noexcept {
        tx_frames.store(tx_frames.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        tx_bytes.store(tx_bytes.load(std::memory_order_relaxed) + len, std::memory_order_relaxed);
    }
};

class ShmWire final : public FrameSource, public FrameSink {
public:
    static constexpr std::uint32_t kMaxFrame = shm::kMaxFrame;
    // How often the sender looks at which host slots are held (one fcntl each).
    static constexpr std::chrono::milliseconds kPeerRefresh{50};

    // `url` is shm://PATH. Errors: EINVAL (another scheme, no path, a file
    // at PATH that is not a segment), the directory's (check_socket_directory),
    // EBUSY (every host slot taken), the system's, each naming the URL.
    static Result<std::unique_ptr<ShmWire>> open(const std::string& url, const ShmWireOptions& options = {});
    ~ShmWire() override;
    ShmWire(const ShmWire&) = delete;
    ShmWire& operator=(const ShmWire&) = delete;

    // --- source: frames from this host's ring, zero-copy: the bytes lie in
    // the ring slot (length as read once and checked), valid until the next
    // next()/next_burst(), which hands the slots back. Never exhausted ---
    bool next(Frame& out) noexcept override;
    std::uint32_t next_burst(std::span<Frame> out) noexcept override;
    [[nodiscard]] bool exhausted() const noexcept override { return false; }
    [[nodiscard]] std::string describe() const override;
    [[nodiscard]] const SourceCounters& counters() const noexcept override { return counters_; }
    // The doorbell FIFO, readable after a writer woke this reader.
    [[nodiscard]] int wait_fd() const noexcept override { return bell_fd_; }
    [[nodiscard]] bool shared_across_fork() const noexcept override { return true; }
    // Drains the doorbell, raises the `sleeping` flag, looks at the ring
    // again: false (flag down) when something came meanwhile.
    [[nodiscard]] bool prepare_wait() noexcept override;

    // --- sink: a frame goes into the ring of the host its destination MAC
    // was learned from, or into every other live host's (flood). A ring
    // that is full (or contended) keeps the frame, in order, in the backlog.
    // A sleeping reader is woken by the flush() after the frames (the
    // FrameSink contract: the port flushes after every burst and verb) ---
    void send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept override;
    std::size_t flush() noexcept override;
    // One copy: room in the ring of the host `dst_mac` was learned from, if
    // it is alive, nothing waits in the backlog and the ring has room (else
    // empty: send() floods, drops and queues). commit() publishes it and
    // counts it as send() does; the source MAC is learned from the bytes
    // written (read once, before the publish).
    [[nodiscard]] std::span<std::uint8_t> claim(std::size_t size, const std::uint8_t* dst_mac) noexcept override;
    void commit(std::size_t len, std::uint64_t ts_ns) noexcept override;
    [[nodiscard]] bool congested() const noexcept override { return backlog_.congested(); }
    // Frames in the backlog, or in a live peer's ring not yet released by its reader.
    [[nodiscard]] bool unread() const noexcept override;
    [[nodiscard]] const TxBacklogCounters* backlog_counters() const noexcept override {
        return &backlog_.counters();
    }

    [[nodiscard]] const ShmWireCounters& wire_counters() const noexcept { return wire_; }
    [[nodiscard]] const std::string& url() const noexcept { return url_; }
    [[nodiscard]] std::uint32_t host() const noexcept { return seg_.host(); }
    [[nodiscard]] std::size_t backlog_frames() const noexcept { return backlog_.frames(); }

private:
    enum class Delivery { done, wait }; // done: delivered or lost (counted); wait: keep it
    ShmWire(std::string url, shm::Segment seg, ShmWireOptions options) noexcept;
    Delivery deliver(std::span<const std::uint8_t> frame) noexcept;
    Delivery routed(std::span<const std::uint8_t> frame) noexcept; // by route_
    Delivery unicast(std::uint32_t h, std::span<const std::uint8_t> frame) noexcept;
    Delivery flood(std::span<const std::uint8_t> frame) noexcept;
    // A frame published to host h: its reader, if it sleeps, is woken at
    // the next flush() (as the port's sinks are flushed after every burst
    // and verb), once for the whole batch.
    void published(std::uint32_t h) noexcept { bells_due_ |= 1u << h; }
    void ring_bells() noexcept; // wakes the sleeping readers of bells_due_'s hosts
    [[nodiscard]] bool peer_alive(std::uint32_t h) noexcept;
    void refresh_peers() noexcept;
    void note_peer(std::uint32_t h, bool alive) noexcept;
    bool arm() noexcept;
    // The next frame's bytes from the ring, if one is there.
    bool pull(const std::uint8_t*& data, std::uint32_t& len) noexcept;
    void hand_over(Frame& out, const std::uint8_t* data, std::uint32_t len, std::uint64_t ts) noexcept;

    struct Claimed { // the slot claim() handed out, until commit()
        std::uint8_t* slot = nullptr;
        std::uint64_t pos = 0;
        std::uint32_t host = 0;
    };

    std::string url_;
    shm::Segment seg_;
    std::function<int(std::span<const std::uint8_t>)> route_; // ShmWireOptions::route
    bool prefault_;                                           // ShmWireOptions::prefault
    Claimed claimed_;
    shm::RingReader reader_;
    int bell_fd_ = -1;
    // Sender's view of the other hosts (under the port lock).
    std::array<int, shm::kHostSlots> peer_bells_{};
    std::array<std::uint32_t, shm::kHostSlots> peer_gen_{};
    std::array<bool, shm::kHostSlots> peer_alive_{};
    std::chrono::steady_clock::time_point peers_checked_{};
    // This sender's last read of each ring's `consumer` (shm::ring_claim).
    std::array<std::uint64_t, shm::kHostSlots> consumer_seen_{};
    std::uint32_t bells_due_ = 0; // hosts published to since the last ring_bells()
    TxBacklog backlog_;
    ShmWireCounters wire_;
    SourceCounters counters_;
};

} // namespace rdmasim::net
