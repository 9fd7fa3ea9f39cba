#include "device/flow.hpp"

#include <algorithm>

#include "device/abi_guard.hpp"
#include "device/flow_spec.hpp"

namespace rdmasim::device {

namespace {

// Match order: NORMAL rules before the multicast default before the all
// default (mlx5 keeps the defaults in later tables); within a kind, lower
// priority value first; then creation order.
int type_rank(ibv_flow_attr_type t) noexcept {
    switch (t) {
    case IBV_FLOW_ATTR_NORMAL:
        return 0;
    case IBV_FLOW_ATTR_MC_DEFAULT:
        return 1;
    default:
        return 2;
    }
}

bool before(const Flow* a, const Flow* b) noexcept {
    if (type_rank(a->type) != type_rank(b->type)) return type_rank(a->type) < type_rank(b->type);
    if (a->priority != b->priority) return a->priority < b->priority;
    return a->seq < b->seq;
}

} // namespace

ibv_flow* create_flow(ibv_qp* q, ibv_flow_attr* attr) noexcept {
    return guard_ptr<ibv_flow>([&]() -> ibv_flow* {
        if (q == nullptr || attr == nullptr) return fail<ibv_flow>(EINVAL);
        Qp& qp = *from_verbs(q);
        Device& dev = *qp.ctx->device;
        auto flow = std::make_unique<Flow>();
        if (int err = parse_flow_attr(*attr, kMaxFlowBytes, flow->rule)) return fail<ibv_flow>(err);
        if (attr->type == IBV_FLOW_ATTR_MC_DEFAULT) {
            // Multicast default: frames whose destination MAC has the group bit.
            flow->rule.has_eth = true;
            flow->rule.eth_value.dst_mac[0] |= 0x01;
            flow->rule.eth_mask.dst_mac[0] |= 0x01;
        }
        flow->qp = &qp;
        flow->type = attr->type;
        flow->priority = attr->priority;
        flow->ibflow.context = q->context;
        flow->ibflow.handle = dev.next_handle.fetch_add(1);
        {
            std::lock_guard lock(dev.port.lock);
            if (dev.port.flows.size() + dev.port.sniffers.size() >= dev.caps.max_flows)
                return fail<ibv_flow>(ENOMEM);
            flow->seq = dev.port.flow_seq++;
            auto& list = attr->type == IBV_FLOW_ATTR_SNIFFER ? dev.port.sniffers : dev.port.flows;
            list.insert(std::upper_bound(list.begin(), list.end(), flow.get(), before), flow.get());
        }
        qp.flows.fetch_add(1);
        qp.ctx->live_objects.fetch_add(1);
        if (dev.hooks) dev.hooks->on_flow_attached(dev);
        return &flow.release()->ibflow;
    });
}

int destroy_flow(ibv_flow* f) noexcept {
    if (f == nullptr) return EINVAL;
    Flow* flow = from_verbs(f);
    Device& dev = *flow->qp->ctx->device;
    {
        std::lock_guard lock(dev.port.lock);
        std::erase(dev.port.flows, flow);
        std::erase(dev.port.sniffers, flow);
    }
    flow->qp->flows.fetch_sub(1);
    flow->qp->ctx->live_objects.fetch_sub(1);
    delete flow;
    return 0;
}

} // namespace rdmasim::device
