// Where a run's trace hears of the completions a program takes (sim/README.md,
// "Fault injection", --trace): the runtime plugs a TraceHook into a device;
// the poll verbs call it once per completion handed to the program, in the
// order polled. Without --trace the hook is null: one predictable branch per
// completion.
#pragma once

#include <cstdint>

#include "datapath/cq_ring.hpp"

namespace rdmasim::device {

class TraceHook {
public:
    virtual ~TraceHook() = default;
    // `cqe` taken from the CQ whose ibv_cq.handle is `cq_handle`. Called
    // under that CQ's poll lock; any program thread.
    virtual void completion(std::uint32_t cq_handle, const datapath::Cqe& cqe) noexcept = 0;
};

} // namespace rdmasim::device
