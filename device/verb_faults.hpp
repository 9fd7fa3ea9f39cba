// Verbs that a fault plan can make fail (sim/README.md, "Fault injection"):
// the runtime plugs a VerbFaultHook into a device, and each of these verbs
// asks it, once per call from the program, after its own argument checks,
// whether to fail the way the real verb fails (NULL and errno, or the
// errno returned, `bad_wr` naming the first WR). Without a plan the hook is
// null: one predictable branch per call.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "device/objects.hpp"

namespace rdmasim::device {

enum class Verb : std::uint8_t {
    open_device,
    alloc_pd,
    reg_mr,
    create_cq,
    create_cq_ex,
    create_wq,
    modify_wq,
    destroy_wq,
    create_rwq_ind_table,
    create_qp,
    create_qp_ex,
    modify_qp,
    create_flow,
    post_wq_recv,
    post_recv,
    post_send,
    req_notify_cq,
    // rdma_cm's calls (device/rdmacm/): -1 and errno, asked of the id's device.
    rdma_resolve_addr,
    rdma_resolve_route,
    rdma_listen,
    rdma_connect,
    rdma_accept,
    rdma_create_qp,
};

// The verbs in enum order, by their names: ibv_'s without "ibv_", rdma_cm's whole.
inline constexpr std::array<std::string_view, 23> kVerbNames{
    "open_device",        "alloc_pd",       "reg_mr",
    "create_cq",          "create_cq_ex",   "create_wq",
    "modify_wq",          "destroy_wq",     "create_rwq_ind_table",
    "create_qp",          "create_qp_ex",   "modify_qp",
    "create_flow",        "post_wq_recv",   "post_recv",
    "post_send",          "req_notify_cq",  "rdma_resolve_addr",
    "rdma_resolve_route", "rdma_listen",    "rdma_connect",
    "rdma_accept",        "rdma_create_qp",
};

class VerbFaultHook {
public:
    virtual ~VerbFaultHook() = default;
    // The errno this call of `verb` fails with, or 0. Any program thread.
    virtual int fail(Verb verb) noexcept = 0;
};

inline int injected_failure(const Device& dev, Verb verb) noexcept {
    VerbFaultHook* hook = dev.verb_faults.load(std::memory_order_acquire);
    return hook == nullptr ? 0 : hook->fail(verb);
}

} // namespace rdmasim::device
