// Steps of the hostile peer (roce_peer.hpp): decoding, the frames and the
// verbs (the checks of what the device sent back: roce_peer_checks.cpp).
//
// A step is 8 bytes b0..b7; b0 & 15 picks it:
//  0-6  a frame: b1 QP (bits 7-6: RC, UC, UD, XRC), AckReq (bit 5), opcode
//       (bits 4-0, kOps); b2 PSN delta (int8) from the peer's next PSN; b3
//       the key (pick_key); b4 the VA near the key's range; b5 the DMA
//       length; b6 the payload length (frame_step); b7 payload pattern and flags (bit 0
//       SE, bit 1 compare with memory, bit 6 wrong XRC SRQ, bit 7 wrong Q_Key)
//  7    post_recv      8 dereg_mr     9 reg_mr       10 rereg_mr
//  11   bind_mw        12 LOCAL_INV   13 dealloc / alloc_mw
//  14   modify to ERR  15 destroy and re-create a QP
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "tests/fuzz/roce_peer_impl.hpp"

namespace rdmasim::test {

using namespace roce_peer;

namespace {

// Request opcodes in RC numbering; the frequent ones twice.
constexpr std::uint8_t kOps[32] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
                                   0x0b, 0x0c, 0x13, 0x14, 0x16, 0x17, 0x1d, 0x06, 0x07, 0x08, 0x0a,
                                   0x0c, 0x04, 0x00, 0x02, 0x13, 0x14, 0x0a, 0x0c, 0x07, 0x08};
constexpr std::uint32_t kLens[8] = {0, 8, 256, 512, 0x80000000u, 0xffffffffu, 0x40000001u, 768};
constexpr const char* kVerbs[16] = {"",
                                    "",
                                    "",
                                    "",
                                    "",
                                    "",
                                    "",
                                    "post_recv",
                                    "ibv_dereg_mr",
                                    "ibv_reg_mr",
                                    "ibv_rereg_mr",
                                    "bind_mw",
                                    "LOCAL_INV",
                                    "dealloc/alloc_mw",
                                    "modify_qp(ERR)",
                                    "destroy+create_qp"};

Need need_of(std::uint8_t op) {
    if (op <= 0x05 || op == 0x16 || op == 0x17) return Need::recv;
    if ((op >= 0x06 && op <= 0x0b) || op == 0x1d) return Need::write;
    if (op == 0x13 || op == 0x14) return Need::atomic;
    return Need::none;
}

std::uint8_t wire_opcode(int q, std::uint8_t op) {
    switch (q) {
    case kUc:
        return op <= 0x0b ? static_cast<std::uint8_t>(op | 0x20) : op;
    case kUd:
        return op == 0x03 || op == 0x05 ? 0x65 : op <= 0x05 ? 0x64 : op;
    case kXrc:
        return static_cast<std::uint8_t>(op | 0xa0);
    default:
        return op;
    }
}

int access_of(std::uint8_t bits) { // bit 0 LW, 1 RW, 2 RR, 3 RA; MW_BIND always
    int a = IBV_ACCESS_MW_BIND;
    if (bits & 1) a |= IBV_ACCESS_LOCAL_WRITE;
    if (bits & 2) a |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    if (bits & 4) a |= IBV_ACCESS_REMOTE_READ;
    if (bits & 8) a |= IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE;
    return a;
}

} // namespace

std::uint32_t RocePeerHarness::Impl::pick_key(std::uint8_t sel, std::uint8_t*& lo,
                                              std::size_t& len) const {
    const MrModel& mr = mrs[sel & 3];
    lo = mr.addr;
    len = mr.len;
    switch (sel >> 5) {
    case 3:
    case 5: {
        const MwModel& w = mws[sel & 1];
        if (w.addr) lo = w.addr, len = w.len;
        return (sel >> 5) == 3 ? w.key : w.prev_key;
    }
    case 4:
        lo = mem.area(4) + 256;
        len = 2048;
        return foreign_mr->rkey;
    case 6:
        return mr.key ^ (1u + ((sel >> 2) & 7)); // a generation that is not live
    case 7:
        return mrs[(sel >> 2) & 3].key; // a live key on another MR's range
    default:
        return mr.key;
    }
}

std::string RocePeerHarness::Impl::step(int index, std::span<const std::uint8_t, kStepLen> s,
                                        Mask& allowed, const char*& what) {
    if ((s[0] & 15) <= 6) return frame_step(index, s, allowed, what);
    what = kVerbs[s[0] & 15];
    verb_step(s, what);
    drain_cq();
    Request none;
    return check_sent(index, none); // a verb makes the device send no data
}

std::string RocePeerHarness::Impl::frame_step(int index, std::span<const std::uint8_t, kStepLen> s,
                                              Mask& allowed, const char*& what) {
    const int q = s[1] >> 6;
    const std::uint8_t op = kOps[s[1] & 31];
    static char name[48];
    std::snprintf(name, sizeof name, "frame to %s, opcode 0x%02x", kQpNames[q], wire_opcode(q, op));
    what = name;
    std::uint8_t* lo = nullptr;
    std::size_t len = 0;
    Request req;
    req.qp = q;
    req.op = op;
    req.rkey = pick_key(s[3], lo, len);
    const std::uint64_t base = reinterpret_cast<std::uint64_t>(lo);
    const std::uint32_t v4 = s[4] & 63, v5 = s[5] & 63;
    switch (s[4] >> 6) {
    case 0:
        req.va = base + v4 * 8;
        break;
    case 1:
        req.va = base - v4 - 1;
        break;
    case 2:
        req.va = base + len - v4 * 8;
        break;
    default:
        req.va = base + len + v4 - 32;
        break;
    }
    switch (s[5] >> 6) {
    case 0:
        req.dma_len = v5 * 64;
        break;
    case 1:
        req.dma_len = v5;
        break;
    case 2:
        req.dma_len = static_cast<std::uint32_t>(base + len - req.va + v5 - 32);
        break;
    default:
        req.dma_len = kLens[v5 & 7];
        break;
    }
    req.psn =
        (qps[q].psn + static_cast<std::uint32_t>(static_cast<std::int8_t>(s[2]))) & net::kPsnMask;
    const bool read_op = op == 0x0c && q != kUd && q != kUc;
    req.readable = read_op && granted(q, req.rkey, req.va, req.dma_len, IBV_ACCESS_REMOTE_READ);
    // A WRITE that starts a message, or an atomic, names its target.
    const bool starts = op == 0x06 || op == 0x0a || op == 0x0b || op == 0x1d;
    const bool atomic = op == 0x13 || op == 0x14;
    const std::uint32_t span_len = atomic ? 8 : req.dma_len;
    if ((starts || atomic) && q != kUd &&
        granted(q, req.rkey, req.va, span_len,
                atomic ? IBV_ACCESS_REMOTE_ATOMIC : IBV_ACCESS_REMOTE_WRITE))
        qps[q].targets.emplace_back(reinterpret_cast<std::uint8_t*>(req.va), span_len);
    // An atomic at a PSN one ran at before may be answered from its saved
    // result (a duplicate): only a first one must show the memory's value.
    auto& sent = qps[q].atomic_psns;
    req.fresh = std::find(sent.begin(), sent.end(), req.psn) == sent.end();
    if (atomic && granted(q, req.rkey, req.va, 8, IBV_ACCESS_REMOTE_ATOMIC))
        sent.push_back(req.psn);
    if (atomic && mem.find(reinterpret_cast<const std::uint8_t*>(req.va), 8) >= 0) {
        std::memcpy(&req.orig, reinterpret_cast<const void*>(req.va), 8); // host order, as executed
        req.orig_known = true;
    }

    std::array<std::uint8_t, 400> payload;
    // b6: 0-127 bytes; 0x80-0xbf: 256 down to 193; 0xc0-0xff: 256 up to 382 (over the MTU).
    const std::size_t plen = s[6] < 0x80   ? s[6]
                             : s[6] < 0xc0 ? 256u - (s[6] & 63u)
                                           : 256u + (s[6] & 63u) * 2;
    for (std::size_t j = 0; j < plen; ++j)
        payload[j] = static_cast<std::uint8_t>(s[7] + j * 13);
    std::uint64_t pattern = 0;
    std::memcpy(&pattern, payload.data(), 8);
    net::RoceHeaders h;
    h.bth.opcode = wire_opcode(q, op);
    h.bth.dest_qp = qps[q].qp->qp_num;
    h.bth.psn = req.psn;
    h.bth.ack_req = (s[1] & 0x20) != 0;
    h.bth.solicited = (s[7] & 1) != 0;
    h.reth = {req.va, req.rkey, req.dma_len};
    h.atomic_eth.va = req.va;
    h.atomic_eth.rkey = req.rkey;
    h.atomic_eth.swap_add = pattern;
    h.atomic_eth.compare = pattern;
    const auto* at = reinterpret_cast<const std::uint8_t*>(req.va);
    if ((s[7] & 2) && mem.find(at, 8) >= 0) std::memcpy(&h.atomic_eth.compare, at, 8);
    h.deth = {s[7] & 0x80 ? kQkey ^ 1 : kQkey, kPeerQpn + kUd};
    h.xrceth.srqn = s[7] & 0x40 ? srqn + 1 : srqn;
    h.imm.value = 0x1234abcd;
    h.ieth.rkey = req.rkey;
    net::RocePath path;
    path.dst_mac = {0x02, 0, 0, 0, 0, 0x01};
    path.src_mac = {0x02, 0, 0, 0, 0, 0x09};
    const std::uint8_t peer[4] = {192, 0, 2, 9}, own[4] = {192, 0, 2, 1};
    path.sgid = net::ipv4_mapped_gid(peer);
    path.dgid = net::ipv4_mapped_gid(own);
    std::span<const std::uint8_t> body(payload.data(), plen);
    frame.resize(net::roce_frame_len(path, h.bth.opcode, plen) + 64);
    auto built = net::build_roce_frame(path, h, body, frame);
    if (built.error == net::RoceBuildError::payload_not_allowed) {
        body = {};
        built = net::build_roce_frame(path, h, body, frame);
    }
    if (built.error != net::RoceBuildError::none) return {}; // an opcode the QP type lacks
    frame.resize(built.len);

    grants(allowed, q, need_of(op)); // what the frame may change, from the model before it
    fx.offer(frame);
    fx.pump_all();
    drain_cq();
    const std::uint32_t npkts =
        read_op ? std::max<std::uint32_t>(1, (req.dma_len + kMtu - 1) / kMtu) : 1;
    // The peer's next PSN never moves back: a duplicate leaves the responder where it was.
    const std::uint32_t next = (req.psn + npkts) & net::kPsnMask;
    if (net::psn_diff(next, qps[q].psn) > 0) qps[q].psn = next;
    return check_sent(index, req);
}

void RocePeerHarness::Impl::verb_step(std::span<const std::uint8_t, kStepLen> s,
                                      const char*& what) {
    const int slot = s[1] & 3;
    MrModel& mr = mrs[slot];
    switch (s[0] & 15) {
    case 7: { // post_recv on a QP (XRC: its SRQ), an SGE in an MR's area
        const int q = s[1] & 3, slot2 = (s[1] >> 2) & 3;
        const bool foreign = s[1] & 0x10;
        std::uint8_t* addr = mem.area(foreign ? 4 : slot2) + s[2] * 16u;
        const std::uint32_t len = s[3] * 16u + (s[4] & 15u);
        const std::uint32_t lkey =
            foreign ? foreign_mr->lkey : mrs[slot2].key ^ (s[1] & 0x20 ? 1u : 0u);
        ibv_sge sge{reinterpret_cast<std::uint64_t>(addr), len, lkey};
        ibv_recv_wr wr{};
        wr.wr_id = next_wr++;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        ibv_recv_wr* bad = nullptr;
        if (q != kXrc && qps[q].qp == nullptr) return;
        recvs.push_back({wr.wr_id, q, addr, len, lkey});
        const int rc =
            q == kXrc ? ibv_post_srq_recv(srq, &wr, &bad) : ibv_post_recv(qps[q].qp, &wr, &bad);
        if (rc != 0) recvs.pop_back();
        return;
    }
    case 8:
        if (mr.mr && ibv_dereg_mr(mr.mr) == 0) mr.mr = nullptr;
        return;
    case 9: {
        if (mr.mr) return;
        const std::size_t off = s[2] * 16u % kAreaLen;
        const std::size_t len =
            std::min<std::size_t>(1 + s[3] * 16u + (s[4] & 15u), kAreaLen - off);
        const int access = access_of(s[5]);
        ibv_mr* m = ibv_reg_mr(fx.pd, mem.area(slot) + off, len, access);
        if (m) mr = MrModel{m, m->rkey, mem.area(slot) + off, len, access, false};
        return;
    }
    case 10: {
        if (!mr.mr) return;
        const int flags = (s[2] & 7) ? (s[2] & 7) : IBV_REREG_MR_CHANGE_ACCESS;
        const std::size_t off = s[3] * 16u % kAreaLen;
        const std::size_t len = std::min<std::size_t>(1 + s[4] * 16u, kAreaLen - off);
        ibv_pd* pd = (s[2] & 8) ? foreign_pd : fx.pd;
        const int access = access_of(s[5]);
        if (ibv_rereg_mr(mr.mr, flags, pd, mem.area(slot) + off, len, access) != 0) return;
        if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) mr.addr = mem.area(slot) + off, mr.len = len;
        if (flags & IBV_REREG_MR_CHANGE_PD) mr.foreign = pd == foreign_pd;
        if (flags & IBV_REREG_MR_CHANGE_ACCESS) mr.access = access;
        mr.key = mr.mr->rkey;
        return;
    }
    case 11: { // bind (length 0: unbind) a window through MR slot (b1 >> 1) & 3
        MwModel& w = mws[s[1] & 1];
        const int through = (s[1] >> 1) & 3, q = (s[1] & 8) ? kUc : kRc;
        if (!w.mw || !qps[q].qp) return;
        std::uint8_t* addr = mrs[through].addr + s[2] * 8 - 64;
        const std::size_t len = s[3] * 16u;
        const int access = (s[4] & 1 ? IBV_ACCESS_REMOTE_WRITE : 0) |
                           (s[4] & 2 ? IBV_ACCESS_REMOTE_READ : 0) |
                           (s[4] & 4 ? IBV_ACCESS_REMOTE_ATOMIC : 0);
        const std::uint64_t id = next_wr++;
        std::uint32_t key = 0;
        if (w.type == IBV_MW_TYPE_1) {
            ibv_mw_bind b{};
            b.wr_id = id;
            b.send_flags = IBV_SEND_SIGNALED;
            b.bind_info = {mrs[through].mr, reinterpret_cast<std::uint64_t>(addr), len,
                           static_cast<unsigned>(access)};
            if (ibv_bind_mw(qps[q].qp, w.mw, &b) != 0) return;
            key = w.mw->rkey;
        } else {
            ibv_send_wr wr{};
            wr.wr_id = id;
            wr.opcode = IBV_WR_BIND_MW;
            wr.send_flags = IBV_SEND_SIGNALED;
            wr.bind_mw.mw = w.mw;
            wr.bind_mw.rkey = (w.mw->rkey & ~0xffu) | next_key_byte++;
            wr.bind_mw.bind_info = {mrs[through].mr, reinterpret_cast<std::uint64_t>(addr), len,
                                    static_cast<unsigned>(access)};
            ibv_send_wr* bad = nullptr;
            if (ibv_post_send(qps[q].qp, &wr, &bad) != 0) return;
            key = wr.bind_mw.rkey;
        }
        if (wait_send(id) != IBV_WC_SUCCESS) return;
        if (len > 0) w.prev_key = w.key, w.key = key;
        w.bound = len > 0;
        w = MwModel{w.mw, w.type, w.key,  w.prev_key,       w.bound, through, mrs[through].key,
                    addr, len,    access, qps[q].qp->qp_num};
        return;
    }
    case 12: { // LOCAL_INV of the type 2 window's key, or of a picked key
        const int q = (s[1] & 1) ? kUc : kRc;
        if (!qps[q].qp) return;
        std::uint8_t* lo = nullptr;
        std::size_t len = 0;
        const std::uint32_t key = (s[1] & 2) ? pick_key(s[2], lo, len) : mws[1].key;
        ibv_send_wr wr{};
        wr.wr_id = next_wr++;
        wr.opcode = IBV_WR_LOCAL_INV;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.invalidate_rkey = key;
        ibv_send_wr* bad = nullptr;
        if (ibv_post_send(qps[q].qp, &wr, &bad) != 0 || wait_send(wr.wr_id) != IBV_WC_SUCCESS)
            return;
        for (auto& w : mws)
            if (w.mw && w.type == IBV_MW_TYPE_2 && w.key == key) w.bound = false;
        return;
    }
    case 13: {
        MwModel& w = mws[s[1] & 1];
        if (w.mw) {
            if (ibv_dealloc_mw(w.mw) == 0) w.mw = nullptr, w.bound = false;
        } else if ((w.mw = ibv_alloc_mw(fx.pd, w.type)) != nullptr) {
            w.prev_key = w.key;
            w.key = w.mw->rkey;
        }
        return;
    }
    case 14: {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_ERR;
        if (qps[slot].qp && ibv_modify_qp(qps[slot].qp, &a, IBV_QP_STATE) == 0)
            qps[slot].open = false;
        return;
    }
    default:
        destroy_qp(slot);
        create_qp(slot);
        (void)what;
        return;
    }
}

} // namespace rdmasim::test
