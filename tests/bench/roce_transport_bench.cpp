// RoCE transport cost (datapath/README.md, "RoCE transport"): two RC QPs
// back to back in one thread, frames handed over through a FIFO (build,
// ICRC, parse, transport, placement, ACKs; no port, no engine). Prints, per
// operation (SEND, RDMA WRITE), message size and path MTU, messages/s,
// request packets/s, payload Gbit/s and ns per request packet (both ends'
// work included); last, issue 31's figure: ns per packet of 64 KiB RC
// WRITEs at MTU 1024 and 4096.
// Usage: roce_transport_bench [messages [two-copies]]: frames are built
// straight into the wire's entries (one copy of the payload), or, with
// `two-copies`, into the QP's buffer and then copied (the path of a port
// whose sinks cannot claim room).
#include <infiniband/verbs.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <span>
#include <string_view>
#include <vector>

#include "datapath/roce/port.hpp"
#include "datapath/roce/qp.hpp"

using namespace rdmasim;

namespace {

// The bench's wire: frames copied in, in order. A frame's buffer is reused
// once read, so the figure is the transport's, not malloc's (a fresh vector
// per frame made a 64 KiB message at MTU 4096 cost 3 us per packet, most of
// it brk and page faults).
struct Fifo {
    std::deque<std::vector<std::uint8_t>> frames;
    std::vector<std::vector<std::uint8_t>> spare;

    void push(std::span<const std::uint8_t> f) {
        std::vector<std::uint8_t> v;
        if (!spare.empty()) {
            v = std::move(spare.back());
            spare.pop_back();
        }
        v.assign(f.begin(), f.end());
        frames.push_back(std::move(v));
    }
    // One copy (net::FrameSink::claim): the frame is built in the entry itself.
    std::vector<std::uint8_t> claimed;
    std::span<std::uint8_t> claim(std::size_t len) {
        if (!spare.empty()) {
            claimed = std::move(spare.back());
            spare.pop_back();
        }
        claimed.resize(len);
        return claimed;
    }
    void commit(std::size_t len) {
        claimed.resize(len);
        frames.push_back(std::move(claimed));
    }
    [[nodiscard]] bool empty() const noexcept { return frames.empty(); }
    std::vector<std::uint8_t>& front() noexcept { return frames.front(); }
    void pop() {
        spare.push_back(std::move(frames.front()));
        frames.pop_front();
    }
};

// Frames built into the wire's entries (RocePort::transmit_in_place), or
// built into the QP's buffer and copied in (argument `two-copies`).
bool one_copy = true;

struct Host final : datapath::TransportHost {
    int pd_token = 0;
    datapath::MrTable mrs{8};
    datapath::RecvRing rq;
    Fifo* wire = nullptr;
    std::uint64_t send_done = 0, recv_done = 0, errors = 0;
    std::vector<std::uint8_t> buf;
    std::uint32_t lkey = 0;
    datapath::RocePort port{1u << 16, 64};
    datapath::CqRing scq, rcq;

    Host() {
        scq.init(256);
        rcq.init(256);
        port.set_wire({.send = [](void* h, std::span<std::uint8_t> f, std::uint64_t) noexcept {
                           static_cast<Host*>(h)->wire->push(f);
                       },
                       .context = this,
                       .claim = one_copy ? +[](void* h, const net::RocePath&, std::size_t len) noexcept {
                           return static_cast<Host*>(h)->wire->claim(len);
                       } : nullptr,
                       .commit = [](void* h, std::size_t len) noexcept { static_cast<Host*>(h)->wire->commit(len); }});
    }
    bool peek_recv(datapath::RecvView& v) noexcept override {
        if (rq.empty()) return false;
        v = {&rq.front(), rq.front_sges()};
        return true;
    }
    void pop_recv() noexcept override { rq.pop(); }
    // Takes the completions written since the last call; every receive is
    // reposted at once, as a receiver keeping up would.
    void poll() {
        for (; !scq.empty(); scq.pop()) {
            ++send_done;
            errors += scq.front().status != IBV_WC_SUCCESS;
        }
        for (; !rcq.empty(); rcq.pop()) {
            ++recv_done;
            errors += rcq.front().status != IBV_WC_SUCCESS;
            post();
        }
    }
    void event(datapath::TransportEvent) noexcept override {}
    void post() {
        datapath::Wqe& w = rq.next_wqe();
        w.wr_id = 0;
        w.num_sge = 1;
        w.total_len = static_cast<std::uint32_t>(buf.size());
        rq.next_sges()[0] = {reinterpret_cast<std::uint64_t>(buf.data()),
                             static_cast<std::uint32_t>(buf.size()), lkey};
        rq.publish();
    }
    void setup(std::size_t len) {
        buf.assign(len, 1);
        datapath::MrEntry e;
        e.addr = e.host = reinterpret_cast<std::uint64_t>(buf.data());
        e.length = len;
        e.pd = &pd_token;
        e.local_write = e.remote_write = e.remote_read = true;
        lkey = mrs.add(e);
        rq.init(256, 1);
        for (int i = 0; i < 128; ++i)
            post();
    }
};

datapath::TransportAttrs attrs(std::uint32_t qpn, std::uint32_t dest, net::PathMtu mtu,
                               const void* pd) {
    datapath::TransportAttrs t;
    t.qpn = qpn;
    t.dest_qpn = dest;
    t.sq_psn = t.rq_psn = 1;
    t.mtu = mtu;
    t.pd = pd;
    t.access = IBV_ACCESS_REMOTE_WRITE;
    const std::uint8_t a[4] = {192, 0, 2, 1}, b[4] = {192, 0, 2, 2};
    t.path.sgid = net::ipv4_mapped_gid(qpn == 1 ? a : b);
    t.path.dgid = net::ipv4_mapped_gid(qpn == 1 ? b : a);
    return t;
}

// Returns ns per request packet.
double run(datapath::SendOp op, std::uint32_t msg_len, net::PathMtu mtu, std::uint64_t messages) {
    Fifo to_a, to_b;
    Host a, b;
    a.wire = &to_b;
    b.wire = &to_a;
    a.setup(msg_len);
    b.setup(msg_len);
    datapath::TransportLimits lim;
    lim.max_send_wr = 128;
    datapath::RoceQp qa(a, a.port, a.mrs, lim, {&a.scq, &a.rcq});
    datapath::RoceQp qb(b, b.port, b.mrs, lim, {&b.scq, &b.rcq});
    const auto ta = attrs(1, 2, mtu, &a.pd_token), tb = attrs(2, 1, mtu, &b.pd_token);
    for (auto st : {datapath::TransportState::init, datapath::TransportState::rtr,
                    datapath::TransportState::rts}) {
        qa.modify(ta, st, 0);
        qb.modify(tb, st, 0);
    }
    if (!a.port.attach(qa) || !b.port.attach(qb)) return -1; // for the requesters' waiting list
    const datapath::Sge sge{reinterpret_cast<std::uint64_t>(a.buf.data()), msg_len, a.lkey};
    datapath::SendWr wr;
    wr.op = op;
    wr.signaled = true;
    wr.remote_addr = reinterpret_cast<std::uint64_t>(b.buf.data()); // WRITE: the rkey is the lkey
    wr.rkey = b.lkey;
    std::uint64_t posted = 0, now = 0;
    net::RocePacket p;
    const auto t0 = std::chrono::steady_clock::now();
    while (a.send_done < messages) {
        for (Host* h : {&a, &b}) { // a burst: the requesters' next turn (RocePort::new_turn)
            h->port.new_turn();
            h->port.resume_waiting(now);
        }
        while (posted < messages && qa.send_queue_size() < 128) {
            if (qa.post_send(wr, {&sge, 1}, now) != 0) break;
            ++posted;
        }
        a.poll();
        while (!to_b.empty() || !to_a.empty()) {
            now += 100;
            if (!to_b.empty()) {
                if (net::parse_roce_frame(to_b.front(), p) == net::RoceDrop::none)
                    qb.receive(p, now);
                to_b.pop();
                b.poll();
            }
            if (!to_a.empty()) {
                if (net::parse_roce_frame(to_a.front(), p) == net::RoceDrop::none)
                    qa.receive(p, now);
                to_a.pop();
                a.poll();
            }
        }
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::uint64_t pkts = qa.counters().tx_packets.get();
    std::printf("%-5s %8u B  mtu %4u  %9.0f msg/s  %9.0f pkt/s  %6.2f Gbit/s  %6.0f ns/pkt  acks %llu  "
                "errors %llu\n",
                op == datapath::SendOp::write ? "write" : "send", msg_len, net::mtu_bytes(mtu), messages / s,
                pkts / s,
                messages * double(msg_len) * 8 / s / 1e9, s * 1e9 / double(pkts),
                static_cast<unsigned long long>(qb.counters().acks_sent.get()),
                static_cast<unsigned long long>(a.errors + b.errors));
    return s * 1e9 / double(pkts);
}

} // namespace

int main(int argc, char** argv) {
    const std::uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
    one_copy = !(argc > 2 && std::string_view(argv[2]) == "two-copies");
    double write_ns[2] = {};
    for (auto op : {datapath::SendOp::send, datapath::SendOp::write})
        for (auto mtu : {net::PathMtu::mtu1024, net::PathMtu::mtu4096})
            for (std::uint32_t len : {64u, 1024u, 4096u, 65536u}) {
                const double ns = run(op, len, mtu, len >= 65536 ? n / 20 : n);
                if (op == datapath::SendOp::write && len == 65536u)
                    write_ns[mtu == net::PathMtu::mtu4096] = ns;
            }
    std::printf("RC WRITE 64 KiB, ns per packet: mtu 1024 %.0f, mtu 4096 %.0f\n", write_ns[0], write_ns[1]);
    return 0;
}
