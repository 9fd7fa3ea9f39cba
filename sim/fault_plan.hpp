// A fault plan: which faults to inject, where and when (sim/README.md,
// "Fault injection"). One language in three spellings: the text form
// `seed=7; drop:p=0.01; wq-fatal:wq=0,after=500` (RDMASIM_FAULTS, --faults),
// and TOML `[[fault]]` tables, each turned into one item of that text.
// Parsing only: the injection lives beside the sources, sinks and verbs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/result.hpp"

namespace rdmasim::sim {

enum class FaultKind : std::uint8_t {
    // frames, on the way into a port (rx) or out of it (tx)
    drop,
    corrupt_fcs,
    flip,
    truncate,
    duplicate,
    reorder,
    delay,
    // the device
    out_of_buffer,
    cqe_error,
    wq_fatal,
    cq_overrun,
    delay_drop_timeout,
    port_down,
    device_fatal,
    // verbs
    verb_fail,
};

// The plan's spelling of a kind ("corrupt-fcs").
[[nodiscard]] std::string_view fault_kind_name(FaultKind kind) noexcept;
[[nodiscard]] bool is_frame_fault(FaultKind kind) noexcept;

enum class Direction : std::uint8_t { rx, tx, both };

// When a fault fires, counted over its candidates (the frames it may touch,
// the calls of its verb). Exactly one is set.
struct FaultTrigger {
    double p = 0;           // each candidate with this probability (seeded)
    std::uint64_t every = 0; // every Nth candidate: N, 2N, ...
    std::uint64_t nth = 0;   // the Nth candidate only
    std::uint64_t after = 0; // once, when N frames have entered the device's port
};

struct FaultSpec {
    FaultKind kind = FaultKind::drop;
    FaultTrigger when;
    // Targets; unset: any.
    std::optional<std::uint32_t> device;
    std::optional<std::uint32_t> wq; // the device's WQ by creation order, from 0
    std::optional<std::uint32_t> qp; // a raw-packet QP's qp_num
    Direction dir = Direction::rx;
    std::string filter; // frame faults: only frames this BPF expression matches
    // Parameters, by kind.
    std::uint32_t bytes = 1;      // flip: bytes flipped
    std::uint32_t len = 60;       // truncate: bytes kept
    std::uint32_t window = 4;     // reorder: frames held back and shuffled
    std::uint64_t delay_ns = 0;   // delay: extra time before the frame arrives
    std::uint32_t frames = 1;     // out-of-buffer: burst length; port-down: frames missed while down
    int status = 0;               // cqe-error: an ibv_wc_status
    std::string verb;             // verb-fail: the verb's name without "ibv_"
    int err = 0;                  // verb-fail: the errno it fails with
    std::size_t column = 0;       // where the item starts in the text (1-based)
};

struct FaultPlan {
    std::uint64_t seed = 0;
    std::vector<FaultSpec> faults;

    [[nodiscard]] bool empty() const noexcept { return faults.empty(); }
    // Parses the text form. An error names the column, the text there and
    // the reason; an unknown kind or key lists the valid ones.
    static Result<FaultPlan> parse(std::string_view text);
};

// The verbs verb-fail can name, in the plan's spelling ("create_wq").
[[nodiscard]] const std::vector<std::string_view>& failable_verbs();

} // namespace rdmasim::sim
