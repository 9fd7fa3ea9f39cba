// RocePeerHarness (roce_peer.hpp): the device and the target's verbs
// objects, the model of what the program granted, and the run of one input.
#include "tests/fuzz/roce_peer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string_view>

#include "net/arp.hpp"
#include "tests/fuzz/roce_peer_impl.hpp"

namespace rdmasim::test {

using namespace roce_peer;

namespace {

constexpr int kRemoteAll =
    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
const net::MacAddress kPeerMac{0x02, 0, 0, 0, 0, 0x09};
const net::Ipv4Address kPeerIp{192, 0, 2, 9};

std::uint64_t u64(const std::uint8_t* p) {
    return reinterpret_cast<std::uint64_t>(p);
}

// Marks `bit` over [a, a + an) inside [b, b + bn).
void mark_both(const GuardedAreas& mem, Mask& m, const std::uint8_t* a, std::size_t an,
               const std::uint8_t* b, std::size_t bn, std::uint8_t bit) {
    const std::uint8_t* lo = std::max(a, b);
    const std::uint8_t* hi = std::min(a + an, b + bn);
    if (lo < hi) mem.mark(m, lo, static_cast<std::size_t>(hi - lo), bit);
}

std::uint8_t bit_of(Need need) {
    return need == Need::recv ? 1 : need == Need::write ? 2 : 4;
}

bool covers(std::uint64_t lo, std::uint64_t n, std::uint64_t va, std::uint32_t len) {
    return va >= lo && len <= n && va - lo <= n - len;
}

} // namespace

RocePeerHarness::RocePeerHarness() : impl_(std::make_unique<Impl>()) {}
RocePeerHarness::~RocePeerHarness() = default;
std::string RocePeerHarness::run(std::span<const std::uint8_t> input) {
    return impl_->run(input);
}

RocePeerHarness::Impl::Impl()
    : fx(std::vector<std::pair<std::string, std::string>>{
          {"mac", "02:00:00:00:00:01"}, {"ip", "192.0.2.1"}, {"mtu", "4096"}}) {
    auto& port = fx.device().port;
    {
        std::lock_guard lock(port.mutex());
        port.attach_sink(sink);
    }
    // The peer asks for our address: both ends know each other's MAC from here on.
    std::array<std::uint8_t, net::kMinFrameLen> arp{};
    net::build_arp(arp, net::kBroadcastMac, net::arp_request(kPeerMac, kPeerIp, {192, 0, 2, 1}));
    fx.offer({arp.begin(), arp.end()});
    fx.pump_all();
    sink.frames.clear();
    char name[] = "/tmp/rdmasim-fuzz-xrcd-XXXXXX";
    xrcd_fd = ::mkstemp(name);
    if (xrcd_fd < 0) throw std::runtime_error("roce_peer: mkstemp failed");
    ::unlink(name);
    ibv_xrcd_init_attr xa{};
    xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
    xa.fd = xrcd_fd;
    xa.oflags = O_CREAT;
    xrcd = ibv_open_xrcd(fx.ctx, &xa);
    if (xrcd == nullptr) throw std::runtime_error("roce_peer: ibv_open_xrcd failed");
    // ROCE_PEER_KNOWN="a;b": findings whose class contains a or b are not
    // findings (to look past a known bug, e.g. "after ibv_dereg_mr").
    if (const char* k = std::getenv("ROCE_PEER_KNOWN"))
        for (std::string_view v(k); !v.empty();) {
            const auto end = std::min(v.find(';'), v.size());
            if (end > 0) known.emplace_back(v.substr(0, end));
            v.remove_prefix(std::min(end + 1, v.size()));
        }
}

RocePeerHarness::Impl::~Impl() {
    ibv_close_xrcd(xrcd);
    ::close(xrcd_fd);
    auto& port = fx.device().port;
    std::lock_guard lock(port.mutex());
    port.detach_sink(sink);
}

bool RocePeerHarness::Impl::create_qp(int q) {
    QpModel& m = qps[q];
    if (q == kXrc) {
        ibv_qp_init_attr_ex a{};
        a.qp_type = IBV_QPT_XRC_RECV;
        a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
        a.xrcd = xrcd;
        m.qp = ibv_create_qp_ex(fx.ctx, &a);
    } else {
        ibv_qp_init_attr a{};
        a.qp_type = q == kRc ? IBV_QPT_RC : q == kUc ? IBV_QPT_UC : IBV_QPT_UD;
        a.send_cq = a.recv_cq = cq;
        a.cap = {8, 16, 2, 2, 0};
        m.qp = ibv_create_qp(fx.pd, &a);
    }
    if (m.qp == nullptr) std::abort(); // the set-up itself is not under test
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qkey = kQkey;
    a.qp_access_flags = m.access;
    const int common = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (ibv_modify_qp(m.qp, &a, common | (q == kUd ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)) != 0)
        std::abort();
    a.qp_state = IBV_QPS_RTR;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.hop_limit = 64;
    const auto peer_gid = net::ipv4_mapped_gid(kPeerIp.data());
    std::copy(peer_gid.begin(), peer_gid.end(), a.ah_attr.grh.dgid.raw);
    a.path_mtu = IBV_MTU_256;
    a.dest_qp_num = kPeerQpn + static_cast<std::uint32_t>(q);
    a.rq_psn = start_psn;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 1;
    const int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    const int rc_rtr = rtr | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    if (ibv_modify_qp(m.qp, &a, q == kUd ? IBV_QP_STATE : q == kUc ? rtr : rc_rtr) != 0)
        std::abort();
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 0x42;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    const int rts = q == kRc ? IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC
                    : q == kXrc ? IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN
                                : IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (ibv_modify_qp(m.qp, &a, rts) != 0) std::abort();
    m.open = true;
    m.psn = start_psn;
    m.targets.clear();
    m.atomic_psns.clear();
    return true;
}

void RocePeerHarness::Impl::destroy_qp(int q) {
    if (qps[q].qp == nullptr) return;
    if (ibv_destroy_qp(qps[q].qp) != 0) std::abort();
    qps[q].qp = nullptr;
    qps[q].open = false;
    if (q != kXrc) // its receives go with it; the SRQ's stay
        std::erase_if(recvs, [q](const RecvModel& r) { return r.qp == q; });
}

void RocePeerHarness::Impl::setup(std::uint8_t config) {
    mem.reset();
    recvs.clear();
    send_done.clear();
    foreign_pd = ibv_alloc_pd(fx.ctx);
    cq = ibv_create_cq(fx.ctx, 64, nullptr, nullptr, 0);
    ibv_srq_init_attr_ex sa{};
    sa.attr.max_wr = 16;
    sa.attr.max_sge = 2;
    sa.srq_type = IBV_SRQT_XRC;
    sa.pd = fx.pd;
    sa.xrcd = xrcd;
    sa.cq = cq;
    sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
                   IBV_SRQ_INIT_ATTR_CQ;
    srq = ibv_create_srq_ex(fx.ctx, &sa);
    if (foreign_pd == nullptr || cq == nullptr || srq == nullptr ||
        ibv_get_srq_num(srq, &srqn) != 0)
        std::abort();
    const int lw = IBV_ACCESS_LOCAL_WRITE;
    qps[kRc].access = lw | (kRemoteAll & ~((config & 1 ? IBV_ACCESS_REMOTE_WRITE : 0) |
                                           (config & 2 ? IBV_ACCESS_REMOTE_READ : 0) |
                                           (config & 4 ? IBV_ACCESS_REMOTE_ATOMIC : 0)));
    qps[kXrc].access = lw | (kRemoteAll & ~((config & 8 ? IBV_ACCESS_REMOTE_WRITE : 0) |
                                            (config & 16 ? IBV_ACCESS_REMOTE_READ : 0)));
    qps[kUc].access = lw | (config & 32 ? 0 : IBV_ACCESS_REMOTE_WRITE);
    qps[kUd].access = 0;
    start_psn = config & 0x80 ? 0xfffffa : 0x100;
    for (int q = 0; q < kQps; ++q)
        create_qp(q);
    static constexpr int kMrAccess[kMrSlots] = {
        IBV_ACCESS_LOCAL_WRITE | kRemoteAll | IBV_ACCESS_MW_BIND,
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND,
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND,
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND,
    };
    for (int i = 0; i < kMrSlots; ++i) {
        MrModel& m = mrs[i];
        m = MrModel{};
        m.addr = mem.area(i) + 256;
        m.len = 2048;
        m.access = kMrAccess[i];
        m.mr = ibv_reg_mr(fx.pd, m.addr, m.len, m.access);
        if (m.mr == nullptr) std::abort();
        m.key = m.mr->rkey;
    }
    foreign_mr =
        ibv_reg_mr(foreign_pd, mem.area(4) + 256, 2048, IBV_ACCESS_LOCAL_WRITE | kRemoteAll);
    for (int w = 0; w < 2; ++w) {
        mws[w] = MwModel{};
        mws[w].type = w == 0 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2;
        mws[w].mw = ibv_alloc_mw(fx.pd, mws[w].type);
        if (mws[w].mw == nullptr) std::abort();
        mws[w].key = mws[w].prev_key = mws[w].mw->rkey;
    }
    if (foreign_mr == nullptr) std::abort();
}

void RocePeerHarness::Impl::teardown() {
    for (int q = 0; q < kQps; ++q)
        destroy_qp(q);
    if (ibv_destroy_srq(srq) != 0) std::abort();
    for (auto& w : mws)
        if (w.mw) (void)ibv_dealloc_mw(w.mw);
    for (auto& m : mrs)
        if (m.mr) (void)ibv_dereg_mr(m.mr);
    (void)ibv_dereg_mr(foreign_mr);
    if (ibv_destroy_cq(cq) != 0 || ibv_dealloc_pd(foreign_pd) != 0) std::abort();
    srq = nullptr;
    cq = nullptr;
    foreign_pd = nullptr;
}

void RocePeerHarness::Impl::drain_cq() {
    ibv_wc wc[16];
    for (int got; (got = ibv_poll_cq(cq, 16, wc)) > 0;) {
        for (int i = 0; i < got; ++i) {
            const auto r = std::find_if(recvs.begin(), recvs.end(),
                                        [&](const RecvModel& x) { return x.wr_id == wc[i].wr_id; });
            if (r == recvs.end()) {
                send_done.emplace_back(wc[i].wr_id, wc[i].status);
                continue;
            }
            recvs.erase(r);
            // SEND with invalidate: the program learns here that the window is gone.
            if (wc[i].status == IBV_WC_SUCCESS && (wc[i].wc_flags & IBV_WC_WITH_INV))
                for (auto& w : mws)
                    if (w.mw && w.bound && w.key == wc[i].invalidated_rkey) w.bound = false;
        }
    }
}

int RocePeerHarness::Impl::wait_send(std::uint64_t wr_id) {
    for (int tries = 0; tries < 64; ++tries) {
        drain_cq();
        for (const auto& [id, status] : send_done)
            if (id == wr_id) return status;
    }
    return -1;
}

bool RocePeerHarness::Impl::has(int q, int right) const {
    return qps[q].qp != nullptr && qps[q].open && (qps[q].access & right) != 0;
}

void RocePeerHarness::Impl::grants(Mask& m, int q, Need need) const {
    if (need == Need::recv) {
        if (qps[q].qp == nullptr || !qps[q].open) return;
        for (const RecvModel& r : recvs) {
            if (r.qp != q) continue;
            for (const MrModel& mr : mrs)
                if (mr.mr && mr.key == r.lkey && !mr.foreign &&
                    (mr.access & IBV_ACCESS_LOCAL_WRITE))
                    mark_both(mem, m, r.addr, r.len, mr.addr, mr.len, 1);
        }
        return;
    }
    if (need != Need::write && need != Need::atomic) return;
    const int right = need == Need::write ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_ATOMIC;
    if (!has(q, right)) return;
    // What is granted now, within what the QP's requests were granted.
    for (const auto& [lo, n] : qps[q].targets) {
        for (const MrModel& mr : mrs)
            if (mr.mr && !mr.foreign && (mr.access & right))
                mark_both(mem, m, lo, n, mr.addr, mr.len, bit_of(need));
        for (const MwModel& w : mws) {
            const MrModel& mr = mrs[w.mr];
            if (!(w.mw && w.bound && (w.access & right) && mr.mr && mr.key == w.mr_key &&
                  !mr.foreign && (w.type == IBV_MW_TYPE_1 || w.qpn == qps[q].qp->qp_num)))
                continue;
            const std::uint8_t* wlo = std::max(w.addr, mr.addr);
            const std::uint8_t* whi = std::min(w.addr + w.len, mr.addr + mr.len);
            if (wlo < whi)
                mark_both(mem, m, lo, n, wlo, static_cast<std::size_t>(whi - wlo), bit_of(need));
        }
    }
}

// Everything any frame may change: what a revocation takes away is what
// leaves this set.
void RocePeerHarness::Impl::all_grants(Mask& m) const {
    m.clear();
    for (int q = 0; q < kQps; ++q)
        grants(m, q, Need::recv);
    for (const int right : {IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_ATOMIC}) {
        const std::uint8_t bit = right == IBV_ACCESS_REMOTE_WRITE ? 2 : 4;
        for (const MrModel& mr : mrs)
            if (mr.mr && !mr.foreign && (mr.access & right)) mem.mark(m, mr.addr, mr.len, bit);
        for (const MwModel& w : mws) {
            const MrModel& mr = mrs[w.mr];
            if (w.mw && w.bound && (w.access & right) && mr.mr && mr.key == w.mr_key && !mr.foreign)
                mark_both(mem, m, w.addr, w.len, mr.addr, mr.len, bit);
        }
    }
}

bool RocePeerHarness::Impl::granted(int q, std::uint32_t rkey, std::uint64_t va, std::uint32_t len,
                                    int right) const {
    if (!has(q, right)) return false;
    for (const MrModel& mr : mrs)
        if (mr.mr && mr.key == rkey && !mr.foreign && (mr.access & right))
            return covers(u64(mr.addr), mr.len, va, len);
    for (const MwModel& w : mws) {
        const MrModel& mr = mrs[w.mr];
        if (w.mw && w.bound && w.key == rkey && (w.access & right) && mr.mr && mr.key == w.mr_key &&
            !mr.foreign && (w.type == IBV_MW_TYPE_1 || w.qpn == qps[q].qp->qp_num))
            return covers(u64(w.addr), w.len, va, len) && covers(u64(mr.addr), mr.len, va, len);
    }
    return false;
}

// ROCE_PEER_TRACE=1: one line per step on stderr (what it was, the bytes it
// changed, the opcodes the device sent, the peer's next PSN per QP).
void RocePeerHarness::Impl::trace_step(int index, const char* what) const {
    std::fprintf(stderr, "step %2d %-34s changed %5zu sent", index, what, mem.changed);
    for (const auto& f : sink.frames) {
        net::RocePacket p;
        if (net::parse_roce_frame(f, p) == net::RoceDrop::none)
            std::fprintf(stderr, " %02x/%06x/%02x", p.headers.bth.opcode, p.headers.bth.psn,
                         p.headers.aeth.syndrome);
    }
    std::fprintf(stderr, " | psn %06x %06x %06x %06x, recvs %zu\n", qps[0].psn, qps[1].psn,
                 qps[2].psn, qps[3].psn, recvs.size());
}

std::string RocePeerHarness::Impl::run(std::span<const std::uint8_t> input) {
    if (input.empty()) return {};
    setup(input[0]);
    all_grants(before);
    names.assign(1, "set-up");
    std::string finding, kind;
    const std::size_t steps = std::min((input.size() - 1) / kStepLen, kMaxSteps);
    for (std::size_t i = 0; i < steps && finding.empty(); ++i) {
        const int index = static_cast<int>(i) + 1;
        const char* what = "";
        allowed.clear();
        sink.frames.clear();
        finding = step(index, input.subspan(1 + i * kStepLen).first<kStepLen>(), allowed, what);
        names.emplace_back(what);
        if (!finding.empty()) {
            kind = std::string("sent: ") + why_sent;
            break;
        }
        finding = mem.check(allowed, index, what);
        if (trace) trace_step(index, what);
        kind = names.back() +
               (mem.revoked_by ? " after " + names[mem.revoked_by] : " outside its grants");
        all_grants(after);
        mem.refill_revoked(before, after, index);
        std::swap(before, after);
    }
    teardown();
    sink.frames.clear();
    if (finding.empty()) return {};
    for (const std::string& k : known)
        if (kind.find(k) != std::string::npos) return {};
    return finding + " [class: " + kind + "]";
}

} // namespace rdmasim::test
