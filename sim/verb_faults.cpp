#include "sim/verb_faults.hpp"

#include <algorithm>
#include <cstdio>

namespace rdmasim::sim {

VerbFaults::VerbFaults(const FaultPlan& plan, std::uint32_t index, Trace* trace)
    : calls_(device::kVerbNames.size(), 0), failed_(device::kVerbNames.size(), 0), index_(index), trace_(trace) {
    for (std::size_t i = 0; i < plan.faults.size(); ++i) {
        const FaultSpec& f = plan.faults[i];
        if (f.kind != FaultKind::verb_fail || (f.device && *f.device != index)) continue;
        const auto it = std::find(device::kVerbNames.begin(), device::kVerbNames.end(), f.verb);
        if (it == device::kVerbNames.end()) continue; // the parser knows only these names
        faults_.push_back({static_cast<device::Verb>(it - device::kVerbNames.begin()), f.when, f.err,
                           FaultRng(fault_stream_seed(plan.seed, i))});
    }
}

int VerbFaults::fail(device::Verb verb) noexcept {
    std::lock_guard lock(mu_);
    const std::uint64_t n = ++calls_[static_cast<std::size_t>(verb)];
    for (Active& a : faults_) {
        if (a.verb != verb) continue;
        bool fires;
        if (a.when.p > 0) fires = a.rng.unit() < a.when.p;
        else if (a.when.every) fires = n % a.when.every == 0;
        else if (a.when.nth) fires = n == a.when.nth;
        else fires = n == a.when.after + 1;
        if (fires) {
            ++injected_;
            ++failed_[static_cast<std::size_t>(verb)];
            if (trace_) {
                char extra[96];
                const auto name = device::kVerbNames[static_cast<std::size_t>(verb)];
                const int len = std::snprintf(extra, sizeof extra, "\"verb\":\"%.*s\",\"errno\":%d",
                                              static_cast<int>(name.size()), name.data(), a.err);
                trace_->fault(index_, "verb-fail", n,
                              std::string_view(extra, static_cast<std::size_t>(std::clamp(len, 0, 95))));
            }
            return a.err;
        }
    }
    return 0;
}

std::uint64_t VerbFaults::injected() const {
    std::lock_guard lock(mu_);
    return injected_;
}

std::vector<std::uint64_t> VerbFaults::injected_by_verb() const {
    std::lock_guard lock(mu_);
    return failed_;
}

} // namespace rdmasim::sim
