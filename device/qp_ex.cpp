#include "device/qp_ex.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "device/qp_ib.hpp"

namespace rdmasim::device {

namespace {

IbQp& qp_of(ibv_qp_ex* x) noexcept { return ib_qp(*reinterpret_cast<Qp*>(x)); }
WrBuilder& builder(ibv_qp_ex* x) noexcept { return *qp_of(x).wr_builder; }

// A new WR from the QP's wr_id and wr_flags; nullptr (the error recorded)
// outside wr_start .. wr_complete or when the send queue's worth is built.
ibv_send_wr* begin_wr(ibv_qp_ex* x, ibv_wr_opcode op) noexcept {
    WrBuilder& b = builder(x);
    if (!b.open || b.err != 0) {
        if (b.err == 0) b.err = EINVAL;
        return nullptr;
    }
    if (b.wrs.size() == b.wrs.capacity()) {
        b.err = ENOMEM;
        return nullptr;
    }
    const std::size_t i = b.wrs.size();
    ibv_send_wr& w = b.wrs.emplace_back();
    w.wr_id = x->wr_id;
    w.send_flags = x->wr_flags & ~static_cast<unsigned>(IBV_SEND_INLINE); // inline: wr_set_inline_data
    w.opcode = op;
    w.sg_list = &b.sges[i * b.max_sge];
    return &w;
}

// The WR the data setters apply to; nullptr (nothing to do) after an error.
ibv_send_wr* current(ibv_qp_ex* x) noexcept {
    WrBuilder& b = builder(x);
    if (b.err != 0) return nullptr;
    if (!b.open || b.wrs.empty()) {
        b.err = EINVAL;
        return nullptr;
    }
    return &b.wrs.back();
}

void wr_send(ibv_qp_ex* x) { (void)begin_wr(x, IBV_WR_SEND); }
void wr_send_imm(ibv_qp_ex* x, __be32 imm) {
    if (ibv_send_wr* w = begin_wr(x, IBV_WR_SEND_WITH_IMM)) w->imm_data = imm;
}
void wr_send_inv(ibv_qp_ex* x, uint32_t invalidate_rkey) {
    if (ibv_send_wr* w = begin_wr(x, IBV_WR_SEND_WITH_INV)) w->invalidate_rkey = invalidate_rkey;
}
void wr_local_inv(ibv_qp_ex* x, uint32_t invalidate_rkey) {
    if (ibv_send_wr* w = begin_wr(x, IBV_WR_LOCAL_INV)) w->invalidate_rkey = invalidate_rkey;
}
void wr_bind_mw(ibv_qp_ex* x, ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info* info) {
    if (info == nullptr) {
        if (builder(x).err == 0) builder(x).err = EINVAL;
        return;
    }
    if (ibv_send_wr* w = begin_wr(x, IBV_WR_BIND_MW)) {
        w->bind_mw.mw = mw;
        w->bind_mw.rkey = rkey;
        w->bind_mw.bind_info = *info;
    }
}
void rdma(ibv_qp_ex* x, ibv_wr_opcode op, uint32_t rkey, uint64_t addr, __be32 imm) {
    if (ibv_send_wr* w = begin_wr(x, op)) {
        w->wr.rdma.rkey = rkey;
        w->wr.rdma.remote_addr = addr;
        w->imm_data = imm;
    }
}
void wr_rdma_write(ibv_qp_ex* x, uint32_t rkey, uint64_t addr) { rdma(x, IBV_WR_RDMA_WRITE, rkey, addr, 0); }
void wr_rdma_write_imm(ibv_qp_ex* x, uint32_t rkey, uint64_t addr, __be32 imm) {
    rdma(x, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}
void wr_rdma_read(ibv_qp_ex* x, uint32_t rkey, uint64_t addr) { rdma(x, IBV_WR_RDMA_READ, rkey, addr, 0); }
void atomic(ibv_qp_ex* x, ibv_wr_opcode op, uint32_t rkey, uint64_t addr, uint64_t compare_add,
            uint64_t swap) {
    if (ibv_send_wr* w = begin_wr(x, op)) {
        w->wr.atomic.rkey = rkey;
        w->wr.atomic.remote_addr = addr;
        w->wr.atomic.compare_add = compare_add;
        w->wr.atomic.swap = swap;
    }
}
void wr_atomic_cmp_swp(ibv_qp_ex* x, uint32_t rkey, uint64_t addr, uint64_t compare, uint64_t swap) {
    atomic(x, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}
void wr_atomic_fetch_add(ibv_qp_ex* x, uint32_t rkey, uint64_t addr, uint64_t add) {
    atomic(x, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

// The 8 bytes travel in the WR's compare_add, as memory holds them (device/transport_translate.hpp).
void wr_atomic_write(ibv_qp_ex* x, uint32_t rkey, uint64_t addr, const void* atomic_wr) {
    if (ibv_send_wr* w = begin_wr(x, IBV_WR_ATOMIC_WRITE)) {
        w->wr.atomic.rkey = rkey;
        w->wr.atomic.remote_addr = addr;
        std::memcpy(&w->wr.atomic.compare_add, atomic_wr, 8);
        w->num_sge = 0;
    }
}

void wr_set_xrc_srqn(ibv_qp_ex* x, uint32_t remote_srqn) {
    if (ibv_send_wr* w = current(x)) w->qp_type.xrc.remote_srqn = remote_srqn;
}

void wr_set_ud_addr(ibv_qp_ex* x, ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
    if (ibv_send_wr* w = current(x)) {
        w->wr.ud.ah = ah;
        w->wr.ud.remote_qpn = remote_qpn;
        w->wr.ud.remote_qkey = remote_qkey;
    }
}

void wr_set_sge_list(ibv_qp_ex* x, size_t n, const ibv_sge* list) {
    ibv_send_wr* w = current(x);
    if (w == nullptr) return;
    WrBuilder& b = builder(x);
    if (n > b.max_sge || (n > 0 && list == nullptr)) {
        b.err = EINVAL;
        return;
    }
    std::copy_n(list, n, w->sg_list);
    w->num_sge = static_cast<int>(n);
}
void wr_set_sge(ibv_qp_ex* x, uint32_t lkey, uint64_t addr, uint32_t length) {
    const ibv_sge s{addr, length, lkey};
    wr_set_sge_list(x, 1, &s);
}

void wr_set_inline_data_list(ibv_qp_ex* x, size_t n, const ibv_data_buf* bufs) {
    ibv_send_wr* w = current(x);
    if (w == nullptr) return;
    WrBuilder& b = builder(x);
    std::size_t total = 0;
    for (size_t i = 0; i < n; ++i) total += bufs[i].length;
    if (total > b.max_inline || (n > 0 && bufs == nullptr)) {
        b.err = EINVAL;
        return;
    }
    // Copied now, as the verbs promise; posted as one inline SGE.
    std::uint8_t* dst = &b.inline_bytes[(b.wrs.size() - 1) * b.max_inline];
    std::size_t off = 0;
    for (size_t i = 0; i < n; ++i) {
        if (bufs[i].length != 0) std::memcpy(dst + off, bufs[i].addr, bufs[i].length);
        off += bufs[i].length;
    }
    w->sg_list[0] = {reinterpret_cast<std::uint64_t>(dst), static_cast<uint32_t>(total), 0};
    w->num_sge = 1;
    w->send_flags |= IBV_SEND_INLINE;
}
void wr_set_inline_data(ibv_qp_ex* x, void* addr, size_t length) {
    const ibv_data_buf buf{addr, length};
    wr_set_inline_data_list(x, 1, &buf);
}

void wr_start(ibv_qp_ex* x) {
    WrBuilder& b = builder(x);
    b.wrs.clear();
    b.err = 0;
    b.open = true;
}

void wr_abort(ibv_qp_ex* x) {
    WrBuilder& b = builder(x);
    b.wrs.clear();
    b.err = 0;
    b.open = false;
}

int wr_complete(ibv_qp_ex* x) {
    WrBuilder& b = builder(x);
    int err = b.open ? b.err : EINVAL;
    if (err == 0 && !b.wrs.empty()) {
        for (std::size_t i = 0; i + 1 < b.wrs.size(); ++i) b.wrs[i].next = &b.wrs[i + 1];
        b.wrs.back().next = nullptr;
        ibv_send_wr* bad = nullptr;
        err = post_ib_send(qp_of(x), b.wrs.data(), &bad, true);
    }
    wr_abort(x);
    return err;
}

} // namespace

int make_extended(IbQp& qp, std::uint64_t ops) noexcept {
    std::uint64_t allowed = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
    if (qp.ibqp.qp_type != IBV_QPT_UD)
        allowed |= IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
    const bool xrc = qp.ibqp.qp_type == IBV_QPT_XRC_SEND;
    if (qp.ibqp.qp_type == IBV_QPT_RC || qp.ibqp.qp_type == IBV_QPT_UC)
        allowed |= IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
    if (qp.ibqp.qp_type == IBV_QPT_RC || xrc)
        allowed |= IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
    if (qp.ibqp.qp_type == IBV_QPT_RC) allowed |= IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_SEND_WITH_INV;
    if (ops == 0 || qp.ibqp.qp_type == IBV_QPT_XRC_RECV) return EINVAL; // TGT: no send queue
    if (ops & ~allowed) return EOPNOTSUPP; // TSO, flush: not emulated
    auto* b = new (std::nothrow) WrBuilder;
    if (b == nullptr) return ENOMEM;
    try {
        const std::uint32_t n = std::max<std::uint32_t>(qp.max_send_wr, 1);
        b->max_sge = std::max<std::uint32_t>(qp.max_send_sge, 1);
        b->max_inline = qp.max_inline;
        b->wrs.reserve(n);
        b->sges.resize(static_cast<std::size_t>(n) * b->max_sge);
        b->inline_bytes.resize(static_cast<std::size_t>(n) * b->max_inline);
    } catch (...) {
        delete b;
        return ENOMEM;
    }
    qp.wr_builder = b;
    ibv_qp_ex& x = qp.qpx;
    x.comp_mask = 0;
    x.wr_start = wr_start;
    x.wr_complete = wr_complete;
    x.wr_abort = wr_abort;
    x.wr_set_sge = wr_set_sge;
    x.wr_set_sge_list = wr_set_sge_list;
    x.wr_set_inline_data = wr_set_inline_data;
    x.wr_set_inline_data_list = wr_set_inline_data_list;
    if (qp.ibqp.qp_type == IBV_QPT_UD) x.wr_set_ud_addr = wr_set_ud_addr;
    if (xrc) x.wr_set_xrc_srqn = wr_set_xrc_srqn;
    if (ops & IBV_QP_EX_WITH_SEND) x.wr_send = wr_send;
    if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM) x.wr_send_imm = wr_send_imm;
    if (ops & IBV_QP_EX_WITH_RDMA_WRITE) x.wr_rdma_write = wr_rdma_write;
    if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM) x.wr_rdma_write_imm = wr_rdma_write_imm;
    if (ops & IBV_QP_EX_WITH_RDMA_READ) x.wr_rdma_read = wr_rdma_read;
    if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP) x.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
    if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD) x.wr_atomic_fetch_add = wr_atomic_fetch_add;
    if (ops & IBV_QP_EX_WITH_ATOMIC_WRITE) x.wr_atomic_write = wr_atomic_write;
    if (ops & IBV_QP_EX_WITH_SEND_WITH_INV) x.wr_send_inv = wr_send_inv;
    if (ops & IBV_QP_EX_WITH_LOCAL_INV) x.wr_local_inv = wr_local_inv;
    if (ops & IBV_QP_EX_WITH_BIND_MW) x.wr_bind_mw = wr_bind_mw;
    return 0;
}

ibv_qp_ex* qp_to_qp_ex(ibv_qp* q) noexcept {
    if (q == nullptr) return nullptr;
    // make_extended filled in the ibv_wr_* operations, wr_start always; a QP
    // created without send ops (or a raw-packet one) has none.
    ibv_qp_ex& x = from_verbs(q)->qpx;
    if (x.wr_start == nullptr) errno = EOPNOTSUPP;
    return x.wr_start != nullptr ? &x : nullptr;
}

} // namespace rdmasim::device
