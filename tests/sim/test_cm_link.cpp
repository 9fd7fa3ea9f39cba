// The ports' CMs (datapath/README.md, "Connection manager") between two
// devices of one process wired back to back (--link), on the inline engine
// (virtual time, pumped): a connection made, established and disconnected;
// a reject; a REQ nobody listens for; MADs from a hostile or confused peer,
// counted and never followed; REQ resends running out.
#include <catch2/catch.hpp>

#include <memory>
#include <mutex>
#include <random>
#include <vector>

#include "datapath/cm/agent.hpp"
#include "net/cm_mad.hpp"
#include "net/roce_frame.hpp"
#include "sim/inline_engine.hpp"
#include "sim/simulator.hpp"

using namespace rdmasim;
using datapath::cm::EventKind;

namespace {

const net::Ipv4Address kIp0{192, 0, 2, 1};
const net::Ipv4Address kIp1{192, 0, 2, 2};
constexpr std::uint64_t kSid = 0x0000000001061c06; // rdma_cm, TCP port 7174

struct Recorder final : datapath::cm::Handler {
    Recorder* children = nullptr; // a listener: new connections go to it
    std::vector<datapath::cm::Event> events;
    std::vector<std::vector<std::uint8_t>> data;
    void cm_event(const datapath::cm::Event& e) noexcept override {
        events.push_back(e);
        data.emplace_back(e.private_data.begin(), e.private_data.end());
        if ((e.kind == EventKind::req || e.kind == EventKind::sidr_req) && children != nullptr)
            e.agent->adopt(e.comm_id, *children);
    }
    std::vector<EventKind> kinds() const {
        std::vector<EventKind> k;
        for (const auto& e : events) k.push_back(e.kind);
        return k;
    }
};

struct Linked {
    std::unique_ptr<sim::Simulator> sim;
    datapath::Port* p[2];
    explicit Linked(const char* response_timeout = "20") {
        sim::Config c;
        REQUIRE(c.set("devices", "2"));
        REQUIRE(c.set("link", "rdmasim0:rdmasim1"));
        REQUIRE(c.set("start", "now"));
        REQUIRE(c.set("ip", "192.0.2.1"));
        REQUIRE(c.set("ip.1", "192.0.2.2"));
        REQUIRE(c.set("idle_tick_us", "100000")); // 100 ms of virtual time per idle pump
        REQUIRE(c.set("caps.cm_response_timeout", response_timeout));
        REQUIRE(c.set("caps.cm_max_retries", "2"));
        c.engine = sim::EngineKind::inline_;
        auto s = sim::Simulator::create(c);
        REQUIRE(s);
        sim = std::move(s.value());
        p[0] = &sim->device(0).port;
        p[1] = &sim->device(1).port;
    }
    template <class F> auto on(int i, F f) {
        std::lock_guard lock(p[i]->mutex());
        return f(p[i]->cm());
    }
    // Pumps both engines until `done` holds (checked under both locks), at most `n` rounds.
    template <class F> bool pump_until(F done, int n = 200) {
        for (int i = 0; i < n; ++i) {
            static_cast<sim::InlineEngine&>(sim->engine(0)).pump();
            static_cast<sim::InlineEngine&>(sim->engine(1)).pump();
            std::scoped_lock lock(p[0]->mutex(), p[1]->mutex());
            if (done()) return true;
        }
        return false;
    }
    datapath::cm::Path path() const {
        return {.local_gid = net::ipv4_mapped_gid(kIp0.data()),
                .remote_gid = net::ipv4_mapped_gid(kIp1.data())};
    }
};

datapath::cm::QpParams qp(std::uint32_t qpn, std::uint32_t psn) {
    return {.qpn = qpn, .starting_psn = psn, .responder_resources = 2, .initiator_depth = 3};
}

const std::vector<std::uint8_t> kHello{'h', 'e', 'l', 'l', 'o'};

// A UD datagram for QP1 of device 1, from device 0, carrying `mad`.
std::vector<std::uint8_t> gsi_frame(const Linked& l, std::span<const std::uint8_t> mad, std::uint32_t qkey) {
    net::RocePath path;
    path.sgid = net::ipv4_mapped_gid(kIp0.data());
    path.dgid = net::ipv4_mapped_gid(kIp1.data());
    path.dst_mac = l.sim->device(1).identity.mac;
    net::RoceHeaders h;
    h.bth.opcode = static_cast<std::uint8_t>(net::RoceOpcode::ud_send_only);
    h.bth.dest_qp = 1;
    h.deth = {.qkey = qkey, .src_qp = 1};
    std::vector<std::uint8_t> frame(600);
    const auto r = net::build_roce_frame(path, h, mad, frame);
    REQUIRE(r.error == net::RoceBuildError::none);
    frame.resize(r.len);
    return frame;
}

} // namespace

TEST_CASE("two ports' CMs connect, establish and disconnect", "[sim][cm]") {
    Linked l;
    Recorder listener, child, client;
    listener.children = &child;
    REQUIRE(l.on(1, [&](auto& cm) { return cm.listen(kSid, listener); }));
    std::uint32_t id = 0;
    REQUIRE(l.on(0, [&](auto& cm) { return cm.connect(client, kSid, l.path(), qp(0x111, 0xabc), kHello, id); }) == 0);
    REQUIRE(l.pump_until([&] { return listener.events.size() == 1; }));
    const auto& req = listener.events[0];
    CHECK(req.kind == EventKind::req);
    CHECK(req.service_id == kSid);
    CHECK(req.peer.qpn == 0x111);
    CHECK(req.peer.starting_psn == 0xabc);
    CHECK(req.peer.responder_resources == 2);
    CHECK(req.peer.initiator_depth == 3);
    CHECK(req.path.remote_gid == net::ipv4_mapped_gid(kIp0.data()));
    CHECK(std::equal(kHello.begin(), kHello.end(), listener.data[0].begin()));
    const std::uint32_t child_id = req.comm_id;
    REQUIRE(l.on(1, [&](auto& cm) { return cm.accept(child_id, qp(0x222, 0xdef), {}); }) == 0);
    REQUIRE(l.pump_until([&] { return client.events.size() == 1; }));
    CHECK(client.events[0].kind == EventKind::rep);
    CHECK(client.events[0].peer.qpn == 0x222);
    CHECK(client.events[0].peer.starting_psn == 0xdef);
    REQUIRE(l.on(0, [&](auto& cm) { return cm.establish(id, {}); }) == 0);
    REQUIRE(l.pump_until([&] { return child.events.size() == 1; }));
    CHECK(child.events[0].kind == EventKind::established);
    REQUIRE(l.on(0, [&](auto& cm) { return cm.disconnect(id, {}); }) == 0);
    REQUIRE(l.pump_until([&] { return client.events.size() == 3 && child.events.size() == 3; }));
    CHECK(client.kinds() == std::vector{EventKind::rep, EventKind::disconnected, EventKind::timewait_exit});
    CHECK(child.kinds() == std::vector{EventKind::established, EventKind::dreq, EventKind::timewait_exit});
    const auto& c0 = l.p[0]->cm().counters();
    CHECK(c0.mads_sent.get() == 3); // REQ, RTU, DREQ
    CHECK(c0.mads_resent.get() == 0);
    CHECK(l.p[1]->cm().counters().mads_sent.get() == 2); // REP, DREP
}

TEST_CASE("a REQ is rejected by the listener, or for want of one", "[sim][cm]") {
    Linked l;
    Recorder listener, child, client, stray;
    listener.children = &child;
    REQUIRE(l.on(1, [&](auto& cm) { return cm.listen(kSid, listener); }));
    std::uint32_t id = 0, id2 = 0;
    REQUIRE(l.on(0, [&](auto& cm) { return cm.connect(client, kSid, l.path(), qp(1, 1), {}, id); }) == 0);
    REQUIRE(l.pump_until([&] { return listener.events.size() == 1; }));
    const std::vector<std::uint8_t> no{'n', 'o'};
    REQUIRE(l.on(1, [&](auto& cm) { return cm.reject(listener.events[0].comm_id, 28, no); }) == 0);
    REQUIRE(l.pump_until([&] { return client.events.size() == 1; }));
    CHECK(client.events[0].kind == EventKind::rej);
    CHECK(client.events[0].reason == 28);
    CHECK(client.data[0][0] == 'n');
    // Another port of the same space: nobody listens.
    REQUIRE(l.on(0, [&](auto& cm) { return cm.connect(stray, kSid + 1, l.path(), qp(2, 2), {}, id2); }) == 0);
    REQUIRE(l.pump_until([&] { return stray.events.size() == 1; }));
    CHECK(stray.events[0].kind == EventKind::rej);
    CHECK(stray.events[0].reason == 8); // invalid service ID
    CHECK(l.p[1]->cm().counters().rej_no_listener.get() == 1);
}

TEST_CASE("a hostile peer's MADs are counted, never followed", "[sim][cm]") {
    Linked l;
    Recorder listener, child, client;
    listener.children = &child;
    REQUIRE(l.on(1, [&](auto& cm) { return cm.listen(kSid, listener); }));
    std::mt19937 rng(7);
    std::array<std::uint8_t, net::kMadSize> mad;
    auto inject = [&](std::uint32_t qkey) {
        const auto f = gsi_frame(l, mad, qkey);
        std::lock_guard lock(l.p[1]->mutex());
        (void)l.p[1]->roce().ingress(f, l.p[1]->now_ns());
    };
    for (int i = 0; i < 200; ++i) { // garbage
        for (auto& b : mad) b = static_cast<std::uint8_t>(rng());
        inject(net::kGsiQkey);
    }
    net::CmRep rep; // well formed, for a connection nobody has
    rep.local_comm_id = 0x1234;
    rep.remote_comm_id = 0x5678;
    net::encode_cm_mad(net::cm_mad_header(net::CmAttr::rep, 9), rep, mad);
    inject(net::kGsiQkey);
    inject(0x1); // the wrong Q_Key
    const auto& c1 = l.p[1]->cm().counters();
    CHECK(c1.mads_received.get() == 202);
    CHECK(c1.mads_refused.get() + c1.mads_unmatched.get() == 202);
    CHECK(c1.mads_refused.get() >= 195); // random bytes almost never make a CM MAD
    // The listener still works.
    std::uint32_t id = 0;
    REQUIRE(l.on(0, [&](auto& cm) { return cm.connect(client, kSid, l.path(), qp(3, 3), {}, id); }) == 0);
    REQUIRE(l.pump_until([&] { return listener.events.size() == 1; }));
    CHECK(listener.events[0].kind == EventKind::req);
}

TEST_CASE("REQ resends run out: unreachable, after the timeouts, in virtual time", "[sim][cm]") {
    Linked l("18"); // 4.096 us * 2^18 = 1.07 s; a try every 2.15 s, 2 resends
    Recorder client, listener;
    REQUIRE(l.on(1, [&](auto& cm) { return cm.listen(kSid, listener); }));
    std::uint32_t id = 0;
    // Device 1's listener takes nothing (no children): its REQs are rejected.
    // To see resends, the REQ goes to an address no port has.
    datapath::cm::Path nowhere = l.path();
    const net::Ipv4Address ip9{192, 0, 2, 9};
    nowhere.remote_gid = net::ipv4_mapped_gid(ip9.data());
    std::uint64_t t0 = 0;
    REQUIRE(l.on(0, [&](auto& cm) {
        t0 = l.p[0]->now_ns();
        return cm.connect(client, kSid, nowhere, qp(4, 4), {}, id);
    }) == 0);
    REQUIRE(l.pump_until([&] { return client.events.size() == 1; }, 400));
    CHECK(client.events[0].kind == EventKind::unreachable);
    const std::uint64_t took = l.on(0, [&](auto&) { return l.p[0]->now_ns() - t0; });
    CHECK(took >= 3 * 2 * (4096ull << 18)); // three tries of 2.15 s
    CHECK(l.p[0]->cm().counters().mads_resent.get() == 2);
}
