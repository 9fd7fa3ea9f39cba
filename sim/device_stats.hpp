// What a device's statistics need beyond the counters that live in the port
// (sim/README.md, "Statistics"): the final counters of every receive queue
// the program destroyed (a device::StatsHook), and what the port sent (a
// FrameSink the Simulator attaches to the port before any other). Built only
// with --stats: without it nothing is attached and nothing costs.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "datapath/counters.hpp"
#include "device/stats_hook.hpp"
#include "net/frame_sink.hpp"

namespace rdmasim::sim {

class DeviceStats final : public device::StatsHook, public net::FrameSink {
public:
    // Keeps the queue's queue_json() (sim/stats.hpp), marked destroyed.
    void queue_detached(const datapath::RxQueue& queue) noexcept override;
    // Counts one frame the port sent (after its loopback, before the other sinks).
    void send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept override;

    // The destroyed queues, oldest first. Read under the port lock (written under it).
    [[nodiscard]] const std::vector<nlohmann::json>& destroyed() const noexcept { return destroyed_; }
    // Queues whose record could not be kept (no memory): 0 unless the process ran out.
    [[nodiscard]] std::uint64_t unrecorded() const noexcept { return unrecorded_; }
    [[nodiscard]] std::uint64_t sent_frames() const noexcept { return sent_frames_.get(); }
    [[nodiscard]] std::uint64_t sent_bytes() const noexcept { return sent_bytes_.get(); }

private:
    std::vector<nlohmann::json> destroyed_;
    std::uint64_t unrecorded_ = 0;
    datapath::Counter sent_frames_; // written under the port lock, read from any thread
    datapath::Counter sent_bytes_;
};

} // namespace rdmasim::sim
