// Two RoCE transport endpoints back to back (datapath/README.md, "RoCE
// transport"): each is a TransportHost with its own MrTable, receive ring
// and completion lists; a channel carries frames between them on a virtual
// clock with seeded drop, duplicate and reorder. Every frame is parsed by
// the codec on arrival (ICRC checked) before the transport sees it.
#pragma once

#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "datapath/roce/port.hpp"
#include "datapath/roce/qp.hpp"
#include "net/roce_frame.hpp"

namespace rdmasim::test {

// The completions a CQ's ring received, as a list: every look drains the
// ring into it first (the transport writes rings; the tests read lists).
class CqLog {
public:
    CqLog() { ring_.init(16384); }
    datapath::CqRing* ring() { return &ring_; }
    void drain() const {
        while (!ring_.empty()) {
            seen_.push_back(ring_.front());
            ring_.pop();
        }
    }
    std::size_t size() const { return (drain(), seen_.size()); }
    bool empty() const { return size() == 0; }
    const datapath::Cqe& operator[](std::size_t i) const { return (drain(), seen_[i]); }
    const datapath::Cqe& back() const { return (drain(), seen_.back()); }
    auto begin() const { return (drain(), seen_.cbegin()); }
    auto end() const { return seen_.cend(); }

private:
    mutable datapath::CqRing ring_;
    mutable std::vector<datapath::Cqe> seen_;
};

// One QP's transport on a port of its own (or on `shared`, whose wire is
// then the last endpoint's `out`: give endpoints of one port the same).
struct RoceEndpoint final : datapath::TransportHost {
    int pd_token = 0; // the PD's identity: its address
    datapath::MrTable mrs{64};
    datapath::RecvRing rq;
    CqLog send_cqes, recv_cqes;
    std::vector<datapath::TransportEvent> events;
    datapath::RocePort own_port{1u << 16, 64};
    datapath::RocePort* port; // the QP's port: own_port or the shared one
    std::unique_ptr<datapath::RoceQp> qp;
    std::function<void(std::span<const std::uint8_t>, std::uint64_t)> out;
    // XRC TGT: the PD of the XRC SRQ a request names (its WQEs are `rq`), or null.
    std::function<const void*(std::uint32_t)> xrc_srq;

    explicit RoceEndpoint(const datapath::TransportLimits& limits = {},
                          datapath::RocePort* shared = nullptr)
        : port(shared ? shared : &own_port) {
        rq.init(256, 4);
        port->set_wire({[](void* e, std::span<std::uint8_t> f, std::uint64_t now) noexcept {
                            static_cast<RoceEndpoint*>(e)->out(f, now);
                        },
                        this});
        qp = std::make_unique<datapath::RoceQp>(*this, *port, mrs, limits,
                                                datapath::QpRings{send_cqes.ring(), recv_cqes.ring()});
    }
    const void* pd() const { return &pd_token; }

    std::uint32_t reg(void* p, std::size_t len, bool rr = true, bool rw = true, bool ra = true) {
        datapath::MrEntry e;
        e.addr = reinterpret_cast<std::uint64_t>(p);
        e.host = e.addr;
        e.length = len;
        e.pd = pd();
        e.local_write = true;
        e.remote_read = rr;
        e.remote_write = rw;
        e.remote_atomic = ra;
        return mrs.add(e);
    }
    void post_recv(std::uint64_t wr_id, void* p, std::uint32_t len, std::uint32_t lkey) {
        REQUIRE(!rq.full());
        datapath::Wqe& w = rq.next_wqe();
        w.wr_id = wr_id;
        w.num_sge = 1;
        w.total_len = len;
        rq.next_sges()[0] = {reinterpret_cast<std::uint64_t>(p), len, lkey};
        rq.publish();
    }

    bool peek_recv(datapath::RecvView& v) noexcept override {
        if (rq.empty()) return false;
        v = {&rq.front(), rq.front_sges()};
        return true;
    }
    void pop_recv() noexcept override { rq.pop(); }
    void event(datapath::TransportEvent k) noexcept override { events.push_back(k); }
    const void* select_xrc_srq(std::uint32_t srqn) noexcept override {
        return xrc_srq ? xrc_srq(srqn) : nullptr;
    }
    datapath::CqRing* xrc_recv_cq() noexcept override { return recv_cqes.ring(); }
};

struct Faults {
    double drop = 0, dup = 0, reorder = 0; // probabilities per frame
    std::uint64_t seed = 1;
};

// A and B connected: A is qpn 0x11 and B 0x22, RC by default, both in RTS.
class RocePair {
public:
    static constexpr std::uint64_t kLatencyNs = 1000;

    using Tweak = std::function<void(datapath::TransportAttrs& a, datapath::TransportAttrs& b)>;
    explicit RocePair(datapath::QpTransport type = datapath::QpTransport::rc, Faults f = {},
                      datapath::TransportLimits limits = {}, const Tweak& tweak = {})
        : a(limits), b(limits), faults_(f), rng_(f.seed) {
        a.out = [this](auto fr, auto t) { enqueue(1, fr, t); };
        b.out = [this](auto fr, auto t) { enqueue(0, fr, t); };
        attrs_a = attrs(type, 0x11, 0x22, 100, 5000, a.pd());
        attrs_b = attrs(type, 0x22, 0x11, 5000, 100, b.pd());
        if (tweak) tweak(attrs_a, attrs_b);
        connect(a, attrs_a);
        connect(b, attrs_b);
    }

    static datapath::TransportAttrs attrs(datapath::QpTransport type, std::uint32_t qpn,
                                          std::uint32_t dest, std::uint32_t sq_psn,
                                          std::uint32_t rq_psn, const void* pd) {
        datapath::TransportAttrs t;
        t.type = type;
        t.qpn = qpn;
        t.dest_qpn = dest;
        t.sq_psn = sq_psn;
        t.rq_psn = rq_psn;
        t.timeout = 8; // 1.048576 ms
        t.retry_cnt = 7;
        t.rnr_retry = 7;
        t.min_rnr_timer = 1; // 10 us
        t.max_rd_atomic = 4;
        t.max_dest_rd_atomic = 4;
        t.qkey = 0x11111111;
        t.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
        t.pd = pd;
        t.path.src_mac = {2, 0, 0, 0, 0, static_cast<std::uint8_t>(qpn)};
        t.path.dst_mac = {2, 0, 0, 0, 0, static_cast<std::uint8_t>(dest)};
        const std::uint8_t s[4] = {192, 0, 2, static_cast<std::uint8_t>(qpn)};
        const std::uint8_t d[4] = {192, 0, 2, static_cast<std::uint8_t>(dest)};
        t.path.sgid = net::ipv4_mapped_gid(s);
        t.path.dgid = net::ipv4_mapped_gid(d);
        return t;
    }
    void connect(RoceEndpoint& e, const datapath::TransportAttrs& t) {
        e.qp->modify(t, datapath::TransportState::init, now);
        e.qp->modify(t, datapath::TransportState::rtr, now);
        e.qp->modify(t, datapath::TransportState::rts, now);
        REQUIRE(e.port->attach(*e.qp)); // a requester past its turn waits on the port's list
    }

    // Runs the clock to the next event (a frame arriving, a deadline); false
    // when there is none before `until`.
    bool step(std::uint64_t until = UINT64_MAX) {
        // Each step is a burst of both ports: the requesters' next turn
        // (RocePort::new_turn), and those that waited for it go on.
        for (RoceEndpoint* e : {&a, &b}) {
            e->port->new_turn();
            e->port->resume_waiting(now);
        }
        const std::uint64_t dl = std::min(a.qp->next_deadline_ns(), b.qp->next_deadline_ns());
        const std::uint64_t fr = wire_.empty() ? UINT64_MAX : wire_.begin()->first.first;
        const std::uint64_t t = std::min(dl, fr);
        if (t == UINT64_MAX || t > until) return false;
        now = std::max(now, t);
        if (fr <= dl) {
            auto it = wire_.begin();
            InFlight f = std::move(it->second);
            wire_.erase(it);
            deliver(f);
        } else {
            a.qp->service(now);
            b.qp->service(now);
        }
        for (const CqLog* log : {&a.send_cqes, &a.recv_cqes, &b.send_cqes, &b.recv_cqes}) log->drain();
        return true;
    }
    template <class Pred> bool run_until(Pred done, std::uint64_t max_ns = 60'000'000'000ull) {
        while (!done()) {
            if (!step(max_ns)) return done();
        }
        return true;
    }
    void run_idle(std::uint64_t max_ns = 60'000'000'000ull) {
        while (step(max_ns)) {
        }
    }

    RoceEndpoint a, b;
    datapath::TransportAttrs attrs_a, attrs_b;
    std::uint64_t now = 0;
    bool peer_gone = false;                                         // frames to B vanish
    bool through_ports = false; // frames enter by their port's ingress, not straight into the QP
    std::vector<std::pair<std::uint64_t, std::uint8_t>> log_a_to_b; // (time, opcode) sent by A
    std::uint64_t frames = 0;

private:
    struct InFlight {
        int to = 0;
        std::vector<std::uint8_t> bytes;
    };
    void enqueue(int to, std::span<const std::uint8_t> f, std::uint64_t t) {
        ++frames;
        if (to == 1) log_a_to_b.emplace_back(t, f[14 + 20 + 8]);
        if (to == 1 && peer_gone) return;
        std::uniform_real_distribution<double> u(0, 1);
        if (u(rng_) < faults_.drop) return;
        const int copies = u(rng_) < faults_.dup ? 2 : 1;
        for (int i = 0; i < copies; ++i) {
            std::uint64_t at = t + kLatencyNs;
            if (u(rng_) < faults_.reorder)
                at += std::uniform_int_distribution<std::uint64_t>(1, 20000)(rng_);
            wire_.emplace(std::make_pair(at, seq_++), InFlight{to, {f.begin(), f.end()}});
        }
    }
    void deliver(const InFlight& f) {
        net::RocePacket p;
        const auto drop = net::parse_roce_frame(f.bytes, p);
        REQUIRE(drop == net::RoceDrop::none); // every frame the transport builds parses, ICRC good
        RoceEndpoint& e = f.to == 0 ? a : b;
        REQUIRE(p.headers.bth.dest_qp == e.qp->attrs().qpn);
        if (through_ports)
            (void)e.port->ingress(f.bytes, now);
        else
            e.qp->receive(p, now);
    }

    Faults faults_;
    std::mt19937_64 rng_;
    std::uint64_t seq_ = 0;
    std::map<std::pair<std::uint64_t, std::uint64_t>, InFlight> wire_;
};

inline std::span<const datapath::Sge> one_sge(datapath::Sge& s) {
    return {&s, 1};
}

// A work request `op` (SEND by default) with id `id`, no remote address.
inline datapath::SendWr send_wr(std::uint64_t id, datapath::SendOp op = datapath::SendOp::send) {
    datapath::SendWr w;
    w.wr_id = id;
    w.op = op;
    return w;
}

// An RDMA or atomic work request at `remote` under `rkey`; `compare_add`:
// the atomics' operand (ATOMIC_WRITE: the 8 bytes, in memory order).
inline datapath::SendWr rdma_wr(std::uint64_t id, datapath::SendOp op, const void* remote,
                                std::uint32_t rkey, std::uint64_t compare_add = 0) {
    datapath::SendWr w = send_wr(id, op);
    w.remote_addr = reinterpret_cast<std::uint64_t>(remote);
    w.rkey = rkey;
    w.compare_add = compare_add;
    return w;
}

} // namespace rdmasim::test
