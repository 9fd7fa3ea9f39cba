#include "device/mw.hpp"

#include <memory>
#include <mutex>

#include "device/abi_guard.hpp"
#include "device/context.hpp"
#include "device/import.hpp"
#include "device/qp_ib.hpp"

namespace rdmasim::device {

namespace {

constexpr unsigned kBindAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                 IBV_ACCESS_ZERO_BASED;
// set_bind_wr (providers/mlx5/qp.c): a KLM describes at most 2 GiB.
constexpr std::uint64_t kMaxWindow = 1ull << 31;

bool covers(const datapath::MrEntry& mr, std::uint64_t addr, std::uint64_t length) noexcept {
    return addr >= mr.addr && length <= mr.length && addr - mr.addr <= mr.length - length;
}

// Binds `e` (the window's entry) to `b` on `qp`; false, `e` unusable, when
// the HCA refuses the bind (IBA 10.6.7: an MR of the window's PD with
// MW_BIND, the range inside it, remote write or atomic only over a locally
// writable MR; a type 2 window must be free; a QP of the window's PD).
bool bind_entry(const Qp& qp, const Mw& mw, const ibv_mw_bind_info& b,
                datapath::MrEntry& e) noexcept {
    const Device& dev = *qp.ctx->device;
    const bool type2 = mw.ibmw.type == IBV_MW_TYPE_2;
    if (protection_domain(qp.pd) != e.pd) return false;
    if (b.length == 0) { // unbind: a type 2 window only by the QP it is bound to
        if (type2 && (!e.bound || e.qpn != qp.ibqp.qp_num)) return false;
        e.bound = false;
        return true;
    }
    if (type2 && e.bound) return false;
    if (b.mr == nullptr || b.mr->context != qp.ibqp.context) return false;
    const datapath::MrEntry* mr = dev.mrs.live(b.mr->lkey);
    const int access = from_verbs(b.mr)->access;
    if (mr == nullptr || mr->window || mr->pd != e.pd || !(access & IBV_ACCESS_MW_BIND) ||
        !covers(*mr, b.addr, b.length))
        return false;
    if ((b.mw_access_flags & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(access & IBV_ACCESS_LOCAL_WRITE))
        return false;
    e.bound = true;
    e.mr_key = b.mr->lkey;
    e.base = b.addr;
    e.addr = (b.mw_access_flags & IBV_ACCESS_ZERO_BASED) ? 0 : b.addr;
    e.length = b.length;
    e.remote_read = b.mw_access_flags & IBV_ACCESS_REMOTE_READ;
    e.remote_write = b.mw_access_flags & IBV_ACCESS_REMOTE_WRITE;
    e.remote_atomic = b.mw_access_flags & IBV_ACCESS_REMOTE_ATOMIC;
    e.qpn = type2 ? qp.ibqp.qp_num : datapath::MrEntry::kAnyQp;
    return true;
}

} // namespace

ibv_mw* alloc_mw(ibv_pd* p, ibv_mw_type type) noexcept {
    return guard_ptr<ibv_mw>([&]() -> ibv_mw* {
        if (p == nullptr) return fail<ibv_mw>(EINVAL);
        const std::int64_t t = raw_enum(type);
        if (t != IBV_MW_TYPE_1 && t != IBV_MW_TYPE_2)
            return fail<ibv_mw>(EINVAL); // ib_uverbs_alloc_mw
        Pd* pd = kernel_pd(p);           // an imported PD: the one it names
        if (pd == nullptr) return fail<ibv_mw>(EINVAL);
        Context& ctx = *from_verbs(p->context);
        Device& dev = *ctx.device;
        auto mw = std::make_unique<Mw>();
        datapath::MrEntry entry;
        entry.window = true;
        entry.pd = protection_domain(pd);
        const std::uint32_t key = dev.mrs.add(entry);
        if (key == 0) return fail<ibv_mw>(ENOMEM); // MRs and windows share max_mr slots
        mw->pd = pd;
        mw->key = key;
        ibv_mw& m = mw->ibmw;
        m.context = p->context;
        m.pd = p;
        m.rkey = key;
        m.handle = dev.next_handle.fetch_add(1);
        m.type = static_cast<ibv_mw_type>(t);
        pd->users.fetch_add(1);
        ctx.live_objects.fetch_add(1);
        return &mw.release()->ibmw;
    });
}

int dealloc_mw(ibv_mw* m) noexcept {
    if (m == nullptr) return EINVAL;
    Mw* mw = from_verbs(m);
    Context& ctx = *from_verbs(m->context);
    {
        // Bound or not (mlx5_ib_dealloc_mw destroys the mkey either way); the
        // transports read windows under the port lock.
        std::lock_guard lock(ctx.device->port.mutex());
        ctx.device->mrs.remove(mw->key);
    }
    mw->pd->users.fetch_sub(1);
    delete mw;
    object_destroyed(ctx);
    return 0;
}

int bind_mw(ibv_qp* q, ibv_mw* mw, ibv_mw_bind* mw_bind) noexcept {
    return guard_errno([&]() -> int {
        if (q == nullptr || mw == nullptr || mw_bind == nullptr) return EINVAL;
        const ibv_mw_bind_info& b = mw_bind->bind_info;
        // mlx5_bind_mw: no zero-based windows, nor windows on zero-based MRs.
        if (b.mw_access_flags & IBV_ACCESS_ZERO_BASED) return EINVAL;
        if (b.mr != nullptr && (from_verbs(b.mr)->access & IBV_ACCESS_ZERO_BASED)) return EINVAL;
        ibv_send_wr wr{};
        wr.wr_id = mw_bind->wr_id;
        wr.opcode = IBV_WR_BIND_MW;
        wr.send_flags = mw_bind->send_flags;
        wr.bind_mw.mw = mw;
        wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
        wr.bind_mw.bind_info = b;
        ibv_send_wr* bad = nullptr;
        const int err = ibv_post_send(q, &wr, &bad);
        if (err == 0) mw->rkey = wr.bind_mw.rkey;
        return err;
    });
}

int check_bind_wr(const Qp& qp, const ibv_send_wr& wr) noexcept {
    const ibv_mw* mw = wr.bind_mw.mw;
    if (mw == nullptr || mw->context != qp.ibqp.context) return EINVAL;
    const ibv_mw_bind_info& b = wr.bind_mw.bind_info;
    if (b.mw_access_flags & ~kBindAccess) return EINVAL;
    if (b.length > kMaxWindow) return EOPNOTSUPP;
    return 0;
}

std::uint8_t execute_window_wr(Qp& qp, const ibv_send_wr& wr) noexcept {
    if (wr.opcode == IBV_WR_LOCAL_INV)
        return invalidate_window(qp, wr.invalidate_rkey) ? IBV_WC_SUCCESS : IBV_WC_MW_BIND_ERR;
    Device& dev = *qp.ctx->device;
    Mw& mw = *from_verbs(wr.bind_mw.mw);
    const datapath::MrEntry* cur = dev.mrs.live(mw.key);
    if (cur == nullptr) return IBV_WC_MW_BIND_ERR; // cannot happen: a window's slot lives with it
    datapath::MrEntry e = *cur;
    if (!bind_entry(qp, mw, wr.bind_mw.bind_info, e)) return IBV_WC_MW_BIND_ERR;
    // The new key byte is the WR's (mlx5 takes rkey & 0xff into the mkey).
    const std::uint32_t key = (mw.key & ~0xffu) | (wr.bind_mw.rkey & 0xffu);
    if (!dev.mrs.rekey(mw.key, key, e)) return IBV_WC_MW_BIND_ERR;
    mw.key = key;
    return IBV_WC_SUCCESS;
}

bool invalidate_window(Qp& qp, std::uint32_t rkey) noexcept {
    Device& dev = *qp.ctx->device;
    const datapath::MrEntry* e = dev.mrs.live(rkey);
    if (e == nullptr || !e->window || !e->bound || e->qpn != qp.ibqp.qp_num ||
        e->pd != protection_domain(qp.pd))
        return false;
    datapath::MrEntry n = *e;
    n.bound = false;
    return dev.mrs.replace(rkey, n);
}

} // namespace rdmasim::device
