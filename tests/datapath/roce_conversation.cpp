// A scripted RoCE conversation between two transport endpoints, every frame
// written to a pcap in the order it was sent (as --tx-capture records it),
// for tests/tools/roce_transport_test.py to decode with tshark and scapy.
// (datapath/README.md, "RoCE transport")
//
// Usage: roce_conversation OUT.pcap
// RC QP 0x11 (sq_psn 100) talks to RC QP 0x22, path MTU 1024; then UD QP
// 0x33 (sq_psn 7) sends to UD QP 0x44. In order: a 2500-byte SEND, a
// 1500-byte WRITE with immediate, a 3000-byte READ, a FETCH_ADD, a 3000-byte
// SEND whose MIDDLE is lost on the wire (a NAK sequence error, then the
// MIDDLE and LAST again), a SEND that finds no receive WQE (an RNR NAK, then
// the SEND again after the 10 us RNR timer), a UD SEND.
#include <infiniband/verbs.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <vector>

#include "datapath/roce/port.hpp"
#include "datapath/roce/qp.hpp"
#include "net/pcap_writer.hpp"

using namespace rdmasim;

namespace {

struct Wire;

struct Host final : datapath::TransportHost {
    int pd_token = 0;
    datapath::MrTable mrs{8};
    datapath::RecvRing rq;
    Wire* wire = nullptr;
    int side = 0;
    std::size_t send_done = 0, recv_done = 0;
    datapath::RocePort port{1u << 16, 64};
    datapath::CqRing scq, rcq;
    Host();
    // Counts the completions written since the last call.
    void poll() {
        for (; !scq.empty(); scq.pop()) {
            if (scq.front().status != IBV_WC_SUCCESS)
                std::fprintf(stderr, "send status %d\n", scq.front().status);
            ++send_done;
        }
        for (; !rcq.empty(); rcq.pop()) ++recv_done;
    }
    bool peek_recv(datapath::RecvView& v) noexcept override {
        if (rq.empty()) return false;
        v = {&rq.front(), rq.front_sges()};
        return true;
    }
    void pop_recv() noexcept override { rq.pop(); }
    void event(datapath::TransportEvent) noexcept override {}
    std::uint32_t reg(std::vector<std::uint8_t>& v) {
        datapath::MrEntry e;
        e.addr = e.host = reinterpret_cast<std::uint64_t>(v.data());
        e.length = v.size();
        e.pd = &pd_token;
        e.local_write = e.remote_read = e.remote_write = e.remote_atomic = true;
        return mrs.add(e);
    }
    void post_recv(std::vector<std::uint8_t>& buf, std::uint32_t lkey) {
        datapath::Wqe& w = rq.next_wqe();
        w.num_sge = 1;
        w.total_len = static_cast<std::uint32_t>(buf.size());
        rq.next_sges()[0] = {reinterpret_cast<std::uint64_t>(buf.data()), w.total_len, lkey};
        rq.publish();
    }
};

struct Wire {
    net::PcapWriter* pcap = nullptr;
    std::deque<std::pair<int, std::vector<std::uint8_t>>> fifo; // (to side, frame)
    int lose_next = -1; // the index (from now) of a frame sent by side 0 to lose
    void send(int from, std::span<const std::uint8_t> f, std::uint64_t now) {
        pcap->write(f, now);
        if (from == 0 && lose_next >= 0 && lose_next-- == 0) return;
        fifo.emplace_back(1 - from, std::vector<std::uint8_t>(f.begin(), f.end()));
    }
};

Host::Host() {
    scq.init(64);
    rcq.init(64);
    port.set_wire({[](void* h, std::span<std::uint8_t> f, std::uint64_t now) noexcept {
                       auto* host = static_cast<Host*>(h);
                       host->wire->send(host->side, f, now);
                   },
                   this});
}

datapath::TransportAttrs attrs(datapath::QpTransport type, std::uint32_t qpn, std::uint32_t dest,
                               std::uint32_t sq_psn, std::uint32_t rq_psn, const void* pd) {
    datapath::TransportAttrs t;
    t.type = type;
    t.qpn = qpn;
    t.dest_qpn = dest;
    t.sq_psn = sq_psn;
    t.rq_psn = rq_psn;
    t.min_rnr_timer = 1;
    t.qkey = 0x1234;
    t.pd = pd;
    t.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    const std::uint8_t a[4] = {192, 0, 2, 1}, b[4] = {192, 0, 2, 2};
    const bool first = qpn == 0x11 || qpn == 0x33;
    t.path.sgid = net::ipv4_mapped_gid(first ? a : b);
    t.path.dgid = net::ipv4_mapped_gid(first ? b : a);
    t.path.src_mac = {2, 0, 0, 0, 0, static_cast<std::uint8_t>(first ? 1 : 2)};
    t.path.dst_mac = {2, 0, 0, 0, 0, static_cast<std::uint8_t>(first ? 2 : 1)};
    t.path.udp_src_port = net::roce_udp_src_port(net::roce_flow_label(qpn, dest));
    return t;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: roce_conversation OUT.pcap\n");
        return 2;
    }
    auto w = net::PcapWriter::open(argv[1]);
    if (!w) {
        std::fprintf(stderr, "roce_conversation: %s: %s\n", argv[1], w.error().message.c_str());
        return 1;
    }
    Wire wire;
    wire.pcap = w.value().get();
    Host ha, hb, hc, hd;
    for (Host* h : {&ha, &hb, &hc, &hd}) {
        h->rq.init(16, 1);
        h->wire = &wire;
    }
    hb.side = hd.side = 1;
    datapath::TransportLimits lim;
    auto make = [](Host& h) { return datapath::QpRings{&h.scq, &h.rcq}; };
    datapath::RoceQp a(ha, ha.port, ha.mrs, lim, make(ha)), b(hb, hb.port, hb.mrs, lim, make(hb));
    datapath::RoceQp c(hc, hc.port, hc.mrs, lim, make(hc)), d(hd, hd.port, hd.mrs, lim, make(hd));
    const auto ta = attrs(datapath::QpTransport::rc, 0x11, 0x22, 100, 500, &ha.pd_token);
    const auto tb = attrs(datapath::QpTransport::rc, 0x22, 0x11, 500, 100, &hb.pd_token);
    const auto tc = attrs(datapath::QpTransport::ud, 0x33, 0, 7, 0, &hc.pd_token);
    const auto td = attrs(datapath::QpTransport::ud, 0x44, 0, 9, 0, &hd.pd_token);
    for (auto st : {datapath::TransportState::init, datapath::TransportState::rtr,
                    datapath::TransportState::rts}) {
        a.modify(ta, st, 0);
        b.modify(tb, st, 0);
        c.modify(tc, st, 0);
        d.modify(td, st, 0);
    }
    if (!ha.port.attach(a) || !hb.port.attach(b) || !hc.port.attach(c) || !hd.port.attach(d)) return 1;
    std::vector<std::uint8_t> src(4096), dst(4096), rbuf(4096), atom(8, 0), remote(8192);
    for (std::size_t i = 0; i < src.size(); ++i)
        src[i] = static_cast<std::uint8_t>(i);
    const std::uint32_t slk = ha.reg(src), dlk = ha.reg(dst), alk = ha.reg(atom);
    const std::uint32_t rlk = hb.reg(rbuf), rkey = hb.reg(remote);
    std::uint64_t now = 0;
    datapath::RoceQp* qps[2][2] = {{&a, &b}, {&c, &d}};
    int pair = 0;
    // Delivers everything in flight, one frame every microsecond; then the
    // timers (the RNR wait) until nothing is left.
    auto run = [&] {
        for (;;) {
            for (Host* h : {&ha, &hb, &hc, &hd}) { // a burst: the requesters' next turn
                h->port.new_turn();
                h->port.resume_waiting(now);
            }
            while (!wire.fifo.empty()) {
                auto [to, f] = std::move(wire.fifo.front());
                wire.fifo.pop_front();
                now += 1000;
                net::RocePacket p;
                if (net::parse_roce_frame(f, p) != net::RoceDrop::none) {
                    std::fprintf(stderr, "roce_conversation: a frame did not parse\n");
                    std::exit(1);
                }
                qps[pair][to]->receive(p, now);
            }
            const std::uint64_t dl = qps[pair][0]->next_deadline_ns();
            if (dl == datapath::kNoDeadline) return;
            now = std::max(now, dl);
            qps[pair][0]->service(now);
        }
    };
    auto post = [&](datapath::SendOp op, std::uint32_t len, std::uint64_t raddr, std::uint32_t key,
                    std::uint32_t lkey, std::uint8_t* local) {
        datapath::SendWr wr;
        wr.op = op;
        wr.remote_addr = raddr;
        wr.rkey = key;
        wr.imm = 0xabcd;
        wr.compare_add = 5;
        const datapath::Sge s{reinterpret_cast<std::uint64_t>(local), len, lkey};
        if (a.post_send(wr, {&s, 1}, now) != 0) std::exit(1);
    };
    const auto rva = reinterpret_cast<std::uint64_t>(remote.data());
    hb.post_recv(rbuf, rlk);
    post(datapath::SendOp::send, 2500, 0, 0, slk, src.data());
    run();
    hb.post_recv(rbuf, rlk);
    post(datapath::SendOp::write_imm, 1500, rva, rkey, slk, src.data());
    run();
    post(datapath::SendOp::read, 3000, rva, rkey, dlk, dst.data());
    run();
    post(datapath::SendOp::fetch_add, 8, rva + 4096, rkey, alk, atom.data());
    run();
    hb.post_recv(rbuf, rlk);
    wire.lose_next = 1; // the MIDDLE
    post(datapath::SendOp::send, 3000, 0, 0, slk, src.data());
    run();
    // No receive WQE: RNR NAK. One is posted while the requester waits.
    post(datapath::SendOp::send, 100, 0, 0, slk, src.data());
    while (!wire.fifo.empty()) {
        auto [to, f] = std::move(wire.fifo.front());
        wire.fifo.pop_front();
        now += 1000;
        net::RocePacket p;
        (void)net::parse_roce_frame(f, p);
        qps[0][to]->receive(p, now);
    }
    hb.post_recv(rbuf, rlk);
    run();
    // UD.
    pair = 1;
    std::vector<std::uint8_t> ubuf(1024);
    hd.post_recv(ubuf, hd.reg(ubuf));
    datapath::SendWr u;
    u.ud_path = tc.path;
    u.remote_qpn = 0x44;
    u.remote_qkey = 0x1234;
    const std::uint32_t clk = hc.reg(src);
    const datapath::Sge us{reinterpret_cast<std::uint64_t>(src.data()), 200, clk};
    if (c.post_send(u, {&us, 1}, now) != 0) return 1;
    run();
    for (Host* h : {&ha, &hb, &hc, &hd}) h->poll();
    if (ha.send_done != 6 || hb.recv_done != 4 || hd.recv_done != 1) {
        std::fprintf(stderr, "roce_conversation: %zu sends, %zu + %zu receives completed\n",
                     ha.send_done, hb.recv_done, hd.recv_done);
        return 1;
    }
    if (auto r = w.value()->close(); !r) {
        std::fprintf(stderr, "roce_conversation: %s\n", r.error().message.c_str());
        return 1;
    }
    return 0;
}
