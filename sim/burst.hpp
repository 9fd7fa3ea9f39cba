// One engine step, shared by both engines (sim/README.md, "Engines"): up to
// `limit` frames from a source, through the fault stage when the plan has
// one for the device, enter a device's port in order, then the device is
// serviced (delay-drop release and expiry, completion notifications). What
// differs between engines, the clock and the pacing, comes in through Pacing.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "device/objects.hpp"
#include "net/frame_source.hpp"

namespace rdmasim::sim {

class FaultStage; // sim/fault_stage.hpp

class Pacing {
public:
    virtual ~Pacing() = default;
    // The times at which `frames`, about to enter the port in order, enter
    // it, written to out[0..n): n, the count of the leading frames that are
    // due (the rest stay pending for a later burst). Called once per batch,
    // just before the n frames enter (never for more than enter in this
    // burst): no virtual call per frame.
    virtual std::uint32_t arrivals(std::span<const net::Frame> frames, std::uint64_t* out) noexcept = 0;
    // The time at which the device is serviced after a burst that moved `frames`.
    virtual std::uint64_t service_time(std::uint32_t frames) noexcept = 0;
    // The burst's end, still under the port lock: record what must be
    // consistent with the port (held frames, idleness).
    virtual void burst_done(const struct BurstResult& result) noexcept = 0;
    // At most how many frames to pull from the source at once. A frame pulled
    // counts as handed over by the source; a paced engine pulls one at a time
    // so that frames not yet due are not counted ahead of the port.
    [[nodiscard]] virtual std::uint32_t pull_limit() const noexcept = 0;
};

// Frames pulled from a source that have not entered the port yet, in order.
// Their bytes stay valid: the source is pulled again only once all entered.
struct FrameBatch {
    static constexpr std::uint32_t kCapacity = 32;
    std::array<net::Frame, kCapacity> frames;
    std::array<std::uint64_t, kCapacity> arrival; // of frames [head, due): Pacing::arrivals
    std::uint32_t head = 0;  // the next frame to enter
    std::uint32_t due = 0;   // frames [head, due) have their arrival time
    std::uint32_t count = 0; // frames pulled
    [[nodiscard]] bool empty() const noexcept { return head == count; }
};

struct BurstResult {
    std::uint32_t frames = 0;                   // frames that entered the port
    bool pending = false;                       // frames pulled are not due yet
    bool held = false;                          // frames wait for WQEs after the burst
    bool exhausted = false;                     // the source, read once after the burst: the
                                                // engine decides idle and its next wait on one answer
    std::uint64_t next_deadline_ns = UINT64_MAX; // earliest delay-drop timeout or ARP retry
    bool tx_waiting = false;                    // frames wait for room on a wire: retry soon
    bool tx_ready = false;                      // requesters wait for the next burst only: run one
};

// Moves frames from `source` (after `pending`, frames pulled earlier and not
// yet due) into `dev`'s port. With `faults`, each frame pulled goes through
// that stage first (pull_through), one at a time: the stage fires device
// faults as it pulls, each before the frame it counts enters. A delay-drop timeout that falls due before a
// frame arrives fires first: the frame must not join, and die with, frames
// that timed out before it came, and a device that the timeout disarmed
// must see it disarmed (datapath/README.md, "Offloads, byte by byte").
// Takes the port lock for the whole burst; call it holding no lock.
BurstResult run_burst(device::Device& dev, net::FrameSource& source,
                      FrameBatch& pending, std::uint32_t limit,
                      Pacing& pacing, FaultStage* faults = nullptr) noexcept;
// The same, called holding the port lock (a program's poll that took it:
// sim/README.md, "Progress").
BurstResult run_burst_locked(device::Device& dev, net::FrameSource& source,
                             FrameBatch& pending, std::uint32_t limit,
                             Pacing& pacing, FaultStage* faults = nullptr) noexcept;

// The fault stage's pull, one frame: what the stage hands out first, else
// the next frame of `source` offered to the stage (passed through untouched,
// or what it became), until a frame comes out or the source has none now.
// False also when the stage could not copy a frame (out of memory): the
// frame is not handed over. Called under the device's port lock when the
// stage has device faults.
bool pull_through(net::FrameSource& source, FaultStage& faults, net::Frame& out) noexcept;

} // namespace rdmasim::sim
