// RSS QPs (device/qp_roles.hpp, RssQp): raw-packet QPs whose flows hash
// into an indirection table's WQs; they have no queue of their own
// (device/README.md, "Indirection tables and RSS QPs").
#include <memory>
#include <mutex>

#include "device/abi_guard.hpp"
#include "device/qp_roles.hpp"

namespace rdmasim::device {

namespace {

int validate_rss(const ibv_qp_init_attr_ex& a, ibv_context* context) {
    if (!(a.comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) || !(a.comp_mask & IBV_QP_INIT_ATTR_RX_HASH))
        return EINVAL;
    if (a.rwq_ind_tbl == nullptr || a.rwq_ind_tbl->context != context) return EINVAL;
    const ibv_rx_hash_conf& h = a.rx_hash_conf;
    if (h.rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ) return EOPNOTSUPP;
    if (h.rx_hash_key_len != datapath::Toeplitz::kKeyLen || h.rx_hash_key == nullptr) return EINVAL;
    const std::uint64_t f = h.rx_hash_fields_mask;
    if (f & ~datapath::kRssKnownFields) return EOPNOTSUPP;
    if (f == 0 && from_verbs(a.rwq_ind_tbl)->log_size != 0) return EINVAL;
    if ((f & datapath::kRssIpv4Fields) && (f & datapath::kRssIpv6Fields)) return EINVAL;
    if ((f & datapath::kRssTcpFields) && (f & datapath::kRssUdpFields)) return EINVAL;
    return 0;
}

// The state only: no queue follows it, no CQ is purged (device/README.md,
// "Differences from mlx5").
int modify(Qp& qp, ibv_qp_attr& attr, int mask) noexcept {
    Device& dev = *qp.ctx->device;
    if (mask & ~kPacketQpAttrBits) return EINVAL;
    std::lock_guard port_lock(dev.port.mutex());
    ibv_qp_state next;
    if (int err = packet_qp_transition(qp, attr, mask, next)) return err;
    store_packet_qp(qp, attr, mask, next);
    return 0;
}

void query(Qp& qp, ibv_qp_attr& attr, ibv_qp_init_attr& init) noexcept {
    fill_query(qp, qp.attr, false, attr, init);
}

int destroy(Qp& base) noexcept {
    RssQp& qp = rss_qp(base);
    wait_for_qp_events(qp);
    qp.table->qp_refs.fetch_sub(1);
    qp.pd->users.fetch_sub(1);
    end_qp(qp);
    delete &qp;
    return 0;
}

// An RSS QP sends nothing and receives through its WQs.
int post_send(Qp&, ibv_send_wr* wr, ibv_send_wr** bad_wr) noexcept {
    *bad_wr = wr;
    return EINVAL;
}
int post_recv(Qp&, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    *bad_wr = wr;
    return EINVAL;
}

datapath::Target flow_target(Qp& qp) noexcept {
    datapath::Target t;
    t.rss = &rss_qp(qp).rss_group;
    return t;
}

constexpr QpOps kOps{modify, query, destroy, post_send, post_recv, flow_target};

} // namespace

ibv_qp* create_rss_qp(Context& ctx, ibv_qp_init_attr_ex& attr) noexcept {
    return guard_ptr<ibv_qp>([&]() -> ibv_qp* {
        if (int err = validate_rss(attr, &ctx.vctx.context)) return fail<ibv_qp>(err);
        auto qp = std::make_unique<RssQp>();
        init_qp(*qp, ctx, attr, IBV_QPT_RAW_PACKET, kOps);
        qp->table = from_verbs(attr.rwq_ind_tbl);
        datapath::RssGroup& g = qp->rss_group;
        g.configure(std::span<const std::uint8_t, datapath::Toeplitz::kKeyLen>(
                        attr.rx_hash_conf.rx_hash_key, datapath::Toeplitz::kKeyLen),
                    attr.rx_hash_conf.rx_hash_fields_mask, qp->table->log_size);
        g.table.reserve(qp->table->entries.size());
        for (Wq* wq : qp->table->entries) g.table.push_back(&wq->recv.rx);
        qp->table->qp_refs.fetch_add(1);
        qp->attr.cap = attr.cap;
        qp->pd->users.fetch_add(1);
        ctx.live_objects.fetch_add(1);
        return &qp.release()->ibqp;
    });
}

} // namespace rdmasim::device
