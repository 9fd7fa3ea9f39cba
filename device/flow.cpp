#include "device/flow.hpp"

#include <mutex>

#include "device/abi_guard.hpp"
#include "device/context.hpp"
#include "device/flow_spec.hpp"
#include "device/qp_roles.hpp"
#include "device/verb_faults.hpp"

namespace rdmasim::device {

namespace {

datapath::RuleKind rule_kind(ibv_flow_attr_type t) noexcept {
    switch (t) {
    case IBV_FLOW_ATTR_NORMAL:
        return datapath::RuleKind::normal;
    case IBV_FLOW_ATTR_MC_DEFAULT:
        return datapath::RuleKind::mc_default;
    case IBV_FLOW_ATTR_SNIFFER:
        return datapath::RuleKind::sniffer;
    default:
        return datapath::RuleKind::all_default;
    }
}

} // namespace

ibv_flow* create_flow(ibv_qp* q, ibv_flow_attr* attr) noexcept {
    return guard_ptr<ibv_flow>([&]() -> ibv_flow* {
        if (q == nullptr || attr == nullptr) return fail<ibv_flow>(EINVAL);
        Qp& qp = *from_verbs(q);
        Device& dev = *qp.ctx->device;
        if (int e = injected_failure(dev, Verb::create_flow)) return fail<ibv_flow>(e);
        // Frames are steered to raw-packet QPs only (the kernel's
        // ib_uverbs_ex_create_flow refuses the others' types).
        if (qp.ops->flow_target == nullptr) return fail<ibv_flow>(EINVAL);
        auto flow = std::make_unique<Flow>();
        datapath::SteeringEntry& e = flow->entry;
        if (int err = parse_flow_attr(*attr, kMaxFlowBytes, e.rule)) return fail<ibv_flow>(err);
        if (attr->type == IBV_FLOW_ATTR_MC_DEFAULT) {
            // Multicast default: frames whose destination MAC has the group bit.
            e.rule.has_eth = true;
            e.rule.eth_value.dst_mac[0] |= 0x01;
            e.rule.eth_mask.dst_mac[0] |= 0x01;
        }
        flow->qp = &qp;
        e.kind = rule_kind(attr->type);
        e.priority = attr->priority;
        // Delivered, and on to the rules below (sniffers never trap anyway).
        e.dont_trap = e.kind == datapath::RuleKind::normal &&
                      (attr->flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP) != 0;
        e.owner = &qp;
        e.target = qp.ops->flow_target(qp);
        flow->ibflow.context = q->context;
        flow->ibflow.handle = dev.next_handle.fetch_add(1);
        {
            std::lock_guard lock(dev.port.mutex());
            if (dev.port.rule_count() >= dev.caps.max_flows) return fail<ibv_flow>(ENOMEM);
            dev.port.add_rule(e);
        }
        qp.flows.fetch_add(1);
        qp.ctx->live_objects.fetch_add(1);
        if (dev.hooks) dev.hooks->on_receiver_ready(dev);
        return &flow.release()->ibflow;
    });
}

int destroy_flow(ibv_flow* f) noexcept {
    if (f == nullptr) return EINVAL;
    Flow* flow = from_verbs(f);
    Device& dev = *flow->qp->ctx->device;
    {
        std::lock_guard lock(dev.port.mutex());
        dev.port.remove_rule(flow->entry);
    }
    flow->qp->flows.fetch_sub(1);
    object_destroyed(*flow->qp->ctx);
    delete flow;
    return 0;
}

} // namespace rdmasim::device
