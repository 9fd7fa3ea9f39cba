// The frame faults of a plan (sim/README.md, "Fault injection"), apart from
// where the frames come from or go: frames are offered one at a time and
// taken back out, dropped (marked lost), corrupted, flipped, truncated,
// duplicated, held back behind later frames (reorder) or moved later in time
// (delay). FaultStage runs one on the way into a port, FaultySink one on
// the way out.
//
// Every decision comes from one generator per fault, seeded from the plan's
// seed, the fault's position and the side, and from counts of the frames
// offered: the same frames and plan give the same frames out, in the same
// order, every run.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "net/frame_source.hpp"
#include "net/result.hpp"
#include "sim/fault_plan.hpp"
#include "sim/fault_rng.hpp"

struct bpf_program;

namespace rdmasim::sim {
class Trace;
}

namespace rdmasim::sim {

// How many times each kind fired, indexed by FaultKind.
using FaultCounts = std::vector<std::uint64_t>;

class FrameFaults {
public:
    // What a fault of another kind (a device fault, counted in frames) does
    // to the frame it fired on; the owner's hook fires it and says.
    enum class Effect {
        none,       // the frame goes on to the next fault
        lose,       // the frame, as changed so far, is lost (port-down)
        lose_alone, // the frame as it came is lost, duplicates and all (device-fatal)
    };
    using Hook = std::function<Effect(const FaultSpec&)>;

    // For device `device`'s `side` (rx or tx): its own streams per side, so
    // the two sides of a dir=both item draw independently. `trace`, when
    // not null, hears of every fault that fires (frame faults with "dir").
    FrameFaults(std::uint32_t device, Direction side, Trace* trace = nullptr, Hook hook = {});
    ~FrameFaults();
    FrameFaults(const FrameFaults&) = delete;
    FrameFaults& operator=(const FrameFaults&) = delete;

    // Adds the plan's item at `position`, in plan order; an error for a
    // filter libpcap cannot compile. Other kinds than frame faults go to the
    // hook when they fire.
    Result<void> add(const FaultPlan& plan, std::size_t position);
    [[nodiscard]] std::size_t size() const noexcept { return faults_.size(); }
    // The stream of the plan's item at `position` on `side`: the receive
    // side's is fault_stream_seed(seed, position); the transmit side's mixes
    // the seed with a constant first, so neither side's draws depend on the
    // other's frames.
    [[nodiscard]] static std::uint64_t stream_seed(std::uint64_t seed, std::size_t position,
                                                   Direction side) noexcept;

    // One frame in. `lost`: it is gone before any fault (a port down, a dead
    // device) and only keeps its place. False when no fault fired and
    // nothing waits: the caller hands `f` on itself, nothing was copied.
    // True: the results, if any, are queued for pop(). Throws bad_alloc.
    bool offer(const net::Frame& f, bool lost = false);
    // The next frame due, valid until the next pop(); false: none.
    bool pop(net::Frame& out) noexcept;
    // Makes every frame still held back due (the end of the frames).
    void flush();
    // Frames held back (reordered or delayed) that no pop() hands over yet.
    [[nodiscard]] bool holding() const noexcept { return !held_.empty(); }
    [[nodiscard]] std::size_t held() const noexcept { return held_.size(); }
    // Nothing queued at all: pop() is false until the next offer().
    [[nodiscard]] bool empty() const noexcept { return ready_.empty() && held_.empty(); }
    [[nodiscard]] std::uint64_t offered() const noexcept { return frames_; }
    // Faults fired so far, by kind.
    [[nodiscard]] const FaultCounts& injected() const noexcept { return injected_; }

private:
    struct Active {
        FaultSpec spec;
        FaultRng rng;
        std::uint64_t candidates = 0; // frames it was asked about (after its filter)
        std::unique_ptr<bpf_program> filter;
    };
    // A frame the faults changed, duplicated or held back: its own bytes.
    struct Owned {
        std::vector<std::uint8_t> bytes;
        net::Frame frame; // data points into bytes once handed over
        std::uint64_t release_after = 0; // reorder: frames offered to pass first
        bool by_time = false;            // delay: released by timestamp instead
    };

    bool fires(Active& a, const net::Frame& f) noexcept;
    // Applies every fault to one frame and queues the results; false when
    // none changed it (nothing queued, nothing copied).
    bool apply(const net::Frame& f);
    // apply()'s steps: counts and traces a fault that fired; does a frame
    // fault's work on `cur`, the frame's copy (a duplicate adds to `copies`);
    // queues `cur` and its duplicates.
    void count_fired(const FaultSpec& spec);
    void change(Active& a, Owned& cur, unsigned& copies);
    static void corrupt_fcs(Owned& cur);
    void queue(Owned cur, unsigned copies);
    enum class Release { delayed, reordered, all };
    // Moves held frames that are due into ready_: delayed ones whose time
    // has come, reordered ones whose frames have passed, or all (the end).
    void release(Release which);
    static Owned copy(const net::Frame& f);

    std::uint32_t device_;
    Direction side_;
    Trace* trace_;
    Hook hook_;
    std::vector<Active> faults_;
    std::deque<Owned> ready_; // handed over before the next offered frame
    std::vector<Owned> held_; // reordered or delayed, waiting
    Owned current_;           // the frame last handed over
    std::uint64_t frames_ = 0;  // offered
    std::uint64_t last_ts_ = 0; // of the last frame offered
    FaultCounts injected_;
};

} // namespace rdmasim::sim
