// verb-fail faults of a plan (sim/README.md, "Fault injection"): the hook a
// device asks on each call of a failable verb. Calls of one verb are counted
// across all the program's threads; the decision for the Nth call is the
// same every run (p= draws from the fault's own seeded stream, in call order).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "device/verb_faults.hpp"
#include "sim/fault_plan.hpp"
#include "sim/fault_rng.hpp"
#include "sim/trace.hpp"

namespace rdmasim::sim {

class VerbFaults final : public device::VerbFaultHook {
public:
    // The plan's verb-fail items for device `index`; `trace`, when not
    // null, hears of every call failed.
    VerbFaults(const FaultPlan& plan, std::uint32_t index, Trace* trace = nullptr);
    [[nodiscard]] bool empty() const noexcept { return faults_.empty(); }
    int fail(device::Verb verb) noexcept override;
    // Calls failed so far.
    [[nodiscard]] std::uint64_t injected() const;
    // Calls failed so far, by device::Verb.
    [[nodiscard]] std::vector<std::uint64_t> injected_by_verb() const;

private:
    struct Active {
        device::Verb verb;
        FaultTrigger when;
        int err;
        FaultRng rng;
    };
    mutable std::mutex mu_;
    std::vector<Active> faults_;
    std::vector<std::uint64_t> calls_;  // by Verb
    std::vector<std::uint64_t> failed_; // by Verb
    std::uint64_t injected_ = 0;
    std::uint32_t index_;
    Trace* trace_;
};

} // namespace rdmasim::sim
