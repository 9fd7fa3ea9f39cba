// A hostile peer against one responder QP (datapath/README.md, "RoCE
// transport", "What a peer reaches"): hand-built RoCE v2 frames, interleaved
// with the revoking calls a program makes between them. The peer reaches
// only memory registered for it, with the rights given, for as long as it
// stays registered; what it is refused, it is refused as mlx5 and rxe do.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "datapath/port.hpp"
#include "net/crc32.hpp"
#include "support/roce_pair.hpp"

using namespace rdmasim;
using datapath::QpTransport;
using datapath::RoceRx;
using datapath::TransportState;
using net::RoceOpcode;

namespace {

constexpr std::uint32_t kPsn = 5000; // what the target expects first
constexpr std::uint8_t kFill = 0x55; // what the program writes into memory it took back

// The target QP (0x22) and the frames it sends back; the peer (0x11) is only
// a path to build frames with.
struct Target {
    explicit Target(QpTransport type, const test::RocePair::Tweak& tweak = {}) : type(type) {
        peer = test::RocePair::attrs(type, 0x11, 0x22, kPsn, 100, nullptr);
        attrs = test::RocePair::attrs(type, 0x22, 0x11, 100, kPsn, ep.pd());
        if (tweak) tweak(peer, attrs);
        ep.out = [this](std::span<const std::uint8_t> f, std::uint64_t) { sent.emplace_back(f.begin(), f.end()); };
        for (auto st : {TransportState::init, TransportState::rtr, TransportState::rts})
            ep.qp->modify(attrs, st, 0);
    }
    // One frame from the peer, built and parsed as the port would; the QP's outcome.
    RoceRx send(RoceOpcode op, std::uint32_t psn, const net::RoceHeaders& ext,
                std::span<const std::uint8_t> payload = {}) {
        net::RoceHeaders h = ext;
        h.bth.opcode = static_cast<std::uint8_t>(op);
        h.bth.dest_qp = 0x22;
        h.bth.psn = psn;
        h.deth.qkey = attrs.qkey;
        frame.assign(8192, 0);
        const auto r = net::build_roce_frame(peer.path, h, payload, frame);
        REQUIRE(r.error == net::RoceBuildError::none);
        frame.resize(r.len);
        net::RocePacket p;
        REQUIRE(net::parse_roce_frame(frame, p) == net::RoceDrop::none);
        return ep.qp->receive(p, ++now);
    }
    // The AETH syndrome of the last frame the target sent.
    std::uint8_t last_syndrome() {
        REQUIRE(!sent.empty());
        net::RocePacket p;
        REQUIRE(net::parse_roce_frame(sent.back(), p) == net::RoceDrop::none);
        REQUIRE(p.info->has(net::kExtAeth));
        return p.headers.aeth.syndrome;
    }
    // `port` answers to the target's addresses (its MAC, 192.0.2.0x22).
    void own(datapath::Port& port) const {
        datapath::PortAddresses a;
        a.mac = attrs.path.src_mac;
        a.ipv4 = {192, 0, 2, 0x22};
        port.configure_addresses(a);
    }
    static net::RoceHeaders reth(std::uint64_t va, std::uint32_t rkey, std::uint32_t len) {
        net::RoceHeaders h;
        h.reth = {va, rkey, len};
        return h;
    }

    QpTransport type;
    test::RoceEndpoint ep;
    datapath::TransportAttrs peer, attrs;
    std::vector<std::vector<std::uint8_t>> sent;
    std::vector<std::uint8_t> frame;
    std::uint64_t now = 0;
};

std::uint8_t nak(net::NakCode c) {
    return net::Aeth::make_syndrome(net::AckKind::nak, static_cast<std::uint8_t>(c));
}
bool all_are(const std::vector<std::uint8_t>& v, std::uint8_t b) {
    return std::all_of(v.begin(), v.end(), [b](std::uint8_t x) { return x == b; });
}

} // namespace

TEST_CASE("trust: once access is revoked after a WRITE's FIRST, the rest of the message writes "
          "nothing (RC: NAK remote access error, UC: dropped)",
          "[datapath][roce][trust]") {
    const std::vector<std::uint8_t> piece(1024, 0x11); // MTU 1024: FIRST, MIDDLE, LAST
    const auto type = GENERATE(QpTransport::rc, QpTransport::uc);
    const std::string how = GENERATE("dereg", "rereg elsewhere", "window invalidated", "QP access");
    INFO((type == QpTransport::rc ? "RC, " : "UC, ") << how);
    {
        Target t(type);
        std::vector<std::uint8_t> mem(4096, 0), other(4096, 0);
        const std::uint32_t lkey = t.ep.reg(mem.data(), mem.size());
        const std::uint64_t va = reinterpret_cast<std::uint64_t>(mem.data());
        std::uint32_t rkey = lkey;
        if (how == "window invalidated") { // a type 1 window over the MR
            datapath::MrEntry w;
            w.window = w.bound = w.remote_write = true;
            w.pd = t.ep.pd();
            w.mr_key = lkey;
            w.addr = w.base = va;
            w.length = mem.size();
            rkey = t.ep.mrs.add(w);
        }
        const auto first = type == QpTransport::rc ? RoceOpcode::rc_write_first : RoceOpcode::uc_write_first;
        const auto middle = type == QpTransport::rc ? RoceOpcode::rc_write_middle : RoceOpcode::uc_write_middle;
        const auto last = type == QpTransport::rc ? RoceOpcode::rc_write_last : RoceOpcode::uc_write_last;
        REQUIRE(t.send(first, kPsn, Target::reth(va, rkey, 3072), piece) == RoceRx::consumed);
        REQUIRE(std::equal(piece.begin(), piece.end(), mem.begin()));

        // The program revokes, then takes the memory back (as its own).
        if (how == "dereg") {
            t.ep.mrs.remove(lkey);
        } else if (how == "rereg elsewhere") {
            datapath::MrEntry e = *t.ep.mrs.live(lkey);
            e.addr = e.host = reinterpret_cast<std::uint64_t>(other.data());
            REQUIRE(t.ep.mrs.replace(lkey, e));
        } else if (how == "window invalidated") {
            datapath::MrEntry e = *t.ep.mrs.live(rkey);
            e.bound = false;
            REQUIRE(t.ep.mrs.replace(rkey, e));
        } else {
            datapath::TransportAttrs a = t.attrs;
            a.access = IBV_ACCESS_REMOTE_READ;
            t.ep.qp->modify(a, TransportState::rts, t.now);
        }
        std::fill(mem.begin(), mem.end(), kFill);
        const std::size_t sent_before = t.sent.size();
        CHECK(t.send(middle, kPsn + 1, {}, piece) == RoceRx::remote_access);
        const RoceRx after = t.send(last, kPsn + 2, {}, piece);
        CHECK(all_are(mem, kFill));
        CHECK(all_are(other, 0));
        if (type == QpTransport::rc) {
            REQUIRE(t.sent.size() == sent_before + 1); // one NAK, then nothing: the QP is in ERR
            CHECK(t.last_syndrome() == nak(net::NakCode::remote_access_error));
            CHECK(t.ep.qp->state() == TransportState::error);
            CHECK(after == RoceRx::not_ready);
            CHECK(std::count(t.ep.events.begin(), t.ep.events.end(),
                             datapath::TransportEvent::qp_access_err) == 1);
        } else {
            CHECK(t.sent.size() == sent_before); // UC answers nothing
            CHECK(after == RoceRx::message_dropped);
            CHECK(t.ep.qp->state() == TransportState::rts);
        }
    }
}

TEST_CASE("trust: the BTH P_Key must match the QP's (IBA 10.9.3); a violation is dropped, "
          "answered by nothing and counted",
          "[datapath][roce][trust]") {
    STATIC_REQUIRE(net::pkey_match(0xffff, 0xffff));
    STATIC_REQUIRE(net::pkey_match(0x7fff, 0xffff));  // a limited member talks to a full one
    STATIC_REQUIRE(net::pkey_match(0xffff, 0x7fff));
    STATIC_REQUIRE_FALSE(net::pkey_match(0x7fff, 0x7fff)); // two limited members never
    STATIC_REQUIRE_FALSE(net::pkey_match(0x1234, 0xffff));
    STATIC_REQUIRE_FALSE(net::pkey_match(0x8000, 0x8000)); // the invalid P_Key
    STATIC_REQUIRE_FALSE(net::pkey_match(0x0000, 0x0000));

    const auto type = GENERATE(QpTransport::rc, QpTransport::ud);
    const std::uint16_t qp_pkey = GENERATE(std::uint16_t{0xffff}, std::uint16_t{0x7fff});
    INFO((type == QpTransport::rc ? "RC" : "UD") << ", the QP's P_Key " << qp_pkey);
    {
        Target t(type, [&](auto&, auto& b) { b.pkey = qp_pkey; });
        std::vector<std::uint8_t> buf(256, 0);
        for (int i = 0; i < 3; ++i)
            t.ep.post_recv(i, buf.data(), static_cast<std::uint32_t>(buf.size()), t.ep.reg(buf.data(), buf.size()));
        const auto op = type == QpTransport::rc ? RoceOpcode::rc_send_only : RoceOpcode::ud_send_only;
        const std::array<std::uint8_t, 8> payload{1, 2, 3, 4, 5, 6, 7, 8};
        net::RoceHeaders h;
        std::uint32_t psn = kPsn;
        for (const std::uint16_t bad : {std::uint16_t{0x1234}, std::uint16_t{0x8000},
                                        static_cast<std::uint16_t>(qp_pkey == 0x7fff ? 0x7fff : 0x0000)}) {
            h.bth.pkey = bad;
            CHECK(t.send(op, psn, h, payload) == RoceRx::pkey_violation);
        }
        CHECK(all_are(buf, 0));
        CHECK(t.sent.empty());
        CHECK(t.ep.recv_cqes.empty());
        CHECK(t.ep.qp->counters().get(RoceRx::pkey_violation) == 3);
        CHECK(t.ep.qp->state() == TransportState::rts);
        // A matching P_Key at the same PSN goes through.
        h.bth.pkey = 0xffff; // a full member
        CHECK(t.send(op, psn, h, payload) == RoceRx::consumed);
        CHECK(t.ep.recv_cqes.size() == 1);
    }
}

TEST_CASE("trust: a READ or atomic to a QP whose max_dest_rd_atomic is 0 is an invalid request",
          "[datapath][roce][trust]") {
    for (const auto op : {RoceOpcode::rc_read_request, RoceOpcode::rc_fetch_add,
                          RoceOpcode::rc_compare_swap, RoceOpcode::rc_atomic_write}) {
        INFO("opcode " << int(op));
        Target t(QpTransport::rc, [](auto&, auto& b) { b.max_dest_rd_atomic = 0; });
        std::vector<std::uint8_t> mem(64, 0x22);
        const std::uint32_t key = t.ep.reg(mem.data(), mem.size());
        const std::uint64_t va = reinterpret_cast<std::uint64_t>(mem.data());
        net::RoceHeaders h = Target::reth(va, key, op == RoceOpcode::rc_atomic_write ? 8 : 16);
        h.atomic_eth = {va, key, 1, 2};
        const std::array<std::uint8_t, 8> eight{};
        const auto payload = op == RoceOpcode::rc_atomic_write ? std::span<const std::uint8_t>(eight)
                                                               : std::span<const std::uint8_t>();
        CHECK(t.send(op, kPsn, h, payload) == RoceRx::invalid_request);
        REQUIRE(t.sent.size() == 1); // the NAK, no response
        CHECK(t.last_syndrome() == nak(net::NakCode::invalid_request));
        CHECK(all_are(mem, 0x22));
        CHECK(t.ep.qp->state() == TransportState::error);
    }
}

TEST_CASE("trust: a RETH longer than max_msg_sz (1 GiB) is an invalid request, not a wrapped "
          "count of packets",
          "[datapath][roce][trust]") {
    std::vector<std::uint8_t> mem(4096, 0x33);
    const std::uint64_t va = reinterpret_cast<std::uint64_t>(mem.data());
    SECTION("RC READ of 2^32-1 bytes and of 2^30+1 bytes") {
        for (const std::uint32_t len : {0xffffffffu, (1u << 30) + 1}) {
            Target t(QpTransport::rc);
            const std::uint32_t key = t.ep.reg(mem.data(), mem.size());
            CHECK(t.send(RoceOpcode::rc_read_request, kPsn, Target::reth(va, key, len)) ==
                  RoceRx::invalid_request);
            REQUIRE(t.sent.size() == 1);
            CHECK(t.last_syndrome() == nak(net::NakCode::invalid_request));
        }
    }
    SECTION("RC and UC WRITE FIRST announcing 2^30+1 bytes") {
        for (const auto type : {QpTransport::rc, QpTransport::uc}) {
            Target t(type);
            const std::uint32_t key = t.ep.reg(mem.data(), mem.size());
            const std::vector<std::uint8_t> piece(1024, 0x44);
            const auto op = type == QpTransport::rc ? RoceOpcode::rc_write_first
                                                    : RoceOpcode::uc_write_first;
            CHECK(t.send(op, kPsn, Target::reth(va, key, (1u << 30) + 1), piece) == RoceRx::invalid_request);
            CHECK(all_are(mem, 0x33));
        }
    }
}

TEST_CASE("trust: a duplicate READ is answered only within the original request",
          "[datapath][roce][trust]") {
    Target t(QpTransport::rc);
    std::vector<std::uint8_t> mem(8192);
    for (std::size_t i = 0; i < mem.size(); ++i) mem[i] = static_cast<std::uint8_t>(i * 7);
    const std::uint32_t key = t.ep.reg(mem.data(), mem.size());
    const std::uint32_t key2 = t.ep.reg(mem.data(), mem.size());
    const std::uint64_t va = reinterpret_cast<std::uint64_t>(mem.data());
    // The original: 2048 bytes at va + 1024 (two responses at MTU 1024).
    REQUIRE(t.send(RoceOpcode::rc_read_request, kPsn, Target::reth(va + 1024, key, 2048)) ==
            RoceRx::consumed);
    REQUIRE(t.sent.size() == 2);
    struct Case {
        const char* what;
        std::uint32_t psn;
        std::uint64_t va;
        std::uint32_t rkey, len;
        std::size_t responses;
    };
    for (const Case& c : {Case{"the same again", kPsn, va + 1024, key, 2048, 2},
                          Case{"its second half, from the next PSN", kPsn + 1, va + 2048, key, 1024, 1},
                          Case{"more than the original", kPsn, va + 1024, key, 4096, 0},
                          Case{"starting before it", kPsn, va, key, 2048, 0},
                          Case{"ending after it", kPsn + 1, va + 2048, key, 2048, 0},
                          Case{"another key over the same memory", kPsn, va + 1024, key2, 2048, 0}}) {
        INFO(c.what);
        const std::size_t before = t.sent.size();
        CHECK(t.send(RoceOpcode::rc_read_request, c.psn, Target::reth(c.va, c.rkey, c.len)) ==
              RoceRx::duplicate);
        CHECK(t.sent.size() - before == c.responses);
    }
    CHECK(t.ep.qp->state() == TransportState::rts);
}

TEST_CASE("trust: a RoCE frame from a source whose frames carry their FCS reaches the QP whole",
          "[datapath][roce][trust][port]") {
    // The FCS is stripped once, by the MAC: the transport sees the frame
    // without it, its ICRC intact (stripping it twice cut the ICRC short).
    Target t(QpTransport::rc);
    datapath::Port port;
    t.own(port);
    std::vector<std::uint8_t> buf(64, 0);
    t.ep.post_recv(1, buf.data(), static_cast<std::uint32_t>(buf.size()), t.ep.reg(buf.data(), buf.size()));
    const std::array<std::uint8_t, 5> payload{'h', 'e', 'l', 'l', 'o'};
    std::vector<std::uint8_t> bytes(256);
    net::RoceHeaders h;
    h.bth.opcode = static_cast<std::uint8_t>(RoceOpcode::rc_send_only);
    h.bth.dest_qp = 0x22;
    h.bth.psn = kPsn;
    const auto r = net::build_roce_frame(t.peer.path, h, payload, bytes);
    REQUIRE(r.error == net::RoceBuildError::none);
    bytes.resize(r.len + 4);
    net::write_fcs({bytes.data(), r.len}, bytes.data() + r.len);
    net::Frame f;
    f.data = bytes.data();
    f.len = f.wire_len = static_cast<std::uint32_t>(bytes.size());
    f.fcs_len = 4;
    {
        std::lock_guard lock(port.mutex());
        REQUIRE(port.roce().attach(*t.ep.qp));
        port.ingress(f, 1);
        port.roce().detach(0x22);
    }
    const auto& rc = port.roce().counters();
    CHECK(rc.parse_drops[static_cast<std::size_t>(net::RoceDrop::icrc)].get() == 0);
    CHECK(rc.frames.get() == 1);
    CHECK(t.ep.qp->counters().get(RoceRx::consumed) == 1);
    REQUIRE(t.ep.recv_cqes.size() == 1);
    CHECK(t.ep.recv_cqes[0].byte_len == payload.size());
    CHECK(std::equal(payload.begin(), payload.end(), buf.begin()));
    CHECK(port.counters().delivered.get() == 1);
}

TEST_CASE("trust: each class of attack a hostile peer tried is refused as mlx5 and rxe refuse "
          "it, and touches nothing",
          "[datapath][roce][trust]") {
    struct Attack {
        const char* what;
        RoceOpcode op;
        std::int64_t va_off; // from the MR's start
        std::uint32_t len;   // RETH DMA length
        std::uint32_t payload;
        int key; // 0: the MR's, 1: one without remote rights, 2: deregistered, 3: another PD's
        std::uint32_t psn_off;
        RoceRx outcome;
        int nak; // -1: nothing sent
    };
    constexpr int kAccess = static_cast<int>(net::NakCode::remote_access_error);
    constexpr int kInvalid = static_cast<int>(net::NakCode::invalid_request);
    constexpr std::uint32_t kPast = (1u << 23) - 1; // the farthest PSN ahead (24-bit half)
    const Attack a = GENERATE(
        Attack{"WRITE past the MR's end", RoceOpcode::rc_write_only, 4096 - 8, 16, 16, 0, 0, RoceRx::remote_access, kAccess},
        Attack{"WRITE before the MR's start", RoceOpcode::rc_write_only, -8, 16, 16, 0, 0, RoceRx::remote_access, kAccess},
        Attack{"WRITE at a VA that wraps", RoceOpcode::rc_write_only, INT64_MIN, 16, 16, 0, 0, RoceRx::remote_access, kAccess},
        Attack{"READ past the MR's end", RoceOpcode::rc_read_request, 1, 4096, 0, 0, 0, RoceRx::remote_access, kAccess},
        Attack{"WRITE with a key without remote write", RoceOpcode::rc_write_only, 0, 16, 16, 1, 0, RoceRx::remote_access, kAccess},
        Attack{"READ with a key without remote read", RoceOpcode::rc_read_request, 0, 16, 0, 1, 0, RoceRx::remote_access, kAccess},
        Attack{"atomic with a key without remote atomic", RoceOpcode::rc_fetch_add, 0, 8, 0, 1, 0, RoceRx::remote_access, kAccess},
        Attack{"WRITE with a deregistered key", RoceOpcode::rc_write_only, 0, 16, 16, 2, 0, RoceRx::remote_access, kAccess},
        Attack{"READ with another PD's key", RoceOpcode::rc_read_request, 0, 16, 0, 3, 0, RoceRx::remote_access, kAccess},
        Attack{"unaligned atomic", RoceOpcode::rc_compare_swap, 4, 8, 0, 0, 0, RoceRx::invalid_request, kInvalid},
        Attack{"WRITE longer than its RETH", RoceOpcode::rc_write_only, 0, 8, 16, 0, 0, RoceRx::invalid_request, kInvalid},
        Attack{"WRITE ONLY over the MTU", RoceOpcode::rc_write_only, 0, 2048, 2048, 0, 0, RoceRx::invalid_request, kInvalid},
        Attack{"a PSN far ahead", RoceOpcode::rc_write_only, 0, 16, 16, 0, kPast, RoceRx::sequence_error, 0},
        Attack{"a PSN behind", RoceOpcode::rc_write_only, 0, 16, 16, 0, net::kPsnMask, RoceRx::duplicate, -1});
    INFO(a.what);
    Target t(QpTransport::rc);
    std::vector<std::uint8_t> mem(4096, 0x66);
    const std::uint64_t base = reinterpret_cast<std::uint64_t>(mem.data());
    const std::uint32_t key = t.ep.reg(mem.data(), mem.size());
    const std::uint32_t no_rights = t.ep.reg(mem.data(), mem.size(), false, false, false);
    const std::uint32_t gone = t.ep.reg(mem.data(), mem.size());
    t.ep.mrs.remove(gone);
    datapath::MrEntry other = *t.ep.mrs.live(key);
    const int other_pd = 0;
    other.pd = &other_pd;
    const std::uint32_t foreign = t.ep.mrs.add(other);
    const std::uint32_t keys[] = {key, no_rights, gone, foreign};
    const std::uint64_t va = a.va_off == INT64_MIN ? ~std::uint64_t{0} - 7 : base + a.va_off;
    net::RoceHeaders h = Target::reth(va, keys[a.key], a.len);
    h.atomic_eth = {va, keys[a.key], 1, 2};
    h.bth.ack_req = true;
    const std::vector<std::uint8_t> payload(a.payload, 0x77);
    CHECK(t.send(a.op, kPsn + a.psn_off, h, payload) == a.outcome);
    CHECK(all_are(mem, 0x66));
    if (a.nak < 0) {
        CHECK(t.sent.size() <= 1); // a duplicate is ACKed again when it asks, nothing more
        if (!t.sent.empty()) CHECK(t.last_syndrome() >> 5 == 0);
    } else {
        REQUIRE(t.sent.size() == 1);
        CHECK(t.last_syndrome() == nak(static_cast<net::NakCode>(a.nak)));
    }
}

TEST_CASE("trust: a duplicate atomic is answered from its saved result, not executed twice",
          "[datapath][roce][trust]") {
    Target t(QpTransport::rc);
    alignas(8) std::array<std::uint8_t, 64> mem{};
    const std::uint32_t key = t.ep.reg(mem.data(), mem.size());
    const std::uint64_t va = reinterpret_cast<std::uint64_t>(mem.data());
    net::RoceHeaders h;
    h.atomic_eth = {va, key, 5, 0};
    for (int i = 0; i < 3; ++i) // the original, then two duplicates
        CHECK(t.send(RoceOpcode::rc_fetch_add, kPsn, h) == (i == 0 ? RoceRx::consumed : RoceRx::duplicate));
    std::uint64_t v;
    std::memcpy(&v, mem.data(), 8);
    CHECK(v == 5);
    REQUIRE(t.sent.size() == 3);
    for (const auto& f : t.sent) {
        net::RocePacket p;
        REQUIRE(net::parse_roce_frame(f, p) == net::RoceDrop::none);
        CHECK(p.headers.atomic_ack_eth.orig == 0);
    }
}

TEST_CASE("trust: a flood of 30,000 mangled frames at the port: every one accounted for, the "
          "QP and its memory untouched",
          "[datapath][roce][trust][port]") {
    Target t(QpTransport::rc);
    datapath::Port port;
    t.own(port);
    std::vector<std::uint8_t> mem(4096, 0x66);
    const std::uint32_t key = t.ep.reg(mem.data(), mem.size(), false, false, false);
    // A valid WRITE ONLY without rights, its bytes then mangled at random.
    std::vector<std::uint8_t> good(2048);
    net::RoceHeaders h = Target::reth(reinterpret_cast<std::uint64_t>(mem.data()), key, 64);
    h.bth.opcode = static_cast<std::uint8_t>(RoceOpcode::rc_write_only);
    h.bth.dest_qp = 0x22;
    h.bth.psn = kPsn;
    const std::vector<std::uint8_t> payload(64, 0x77);
    const auto r = net::build_roce_frame(t.peer.path, h, payload, good);
    REQUIRE(r.error == net::RoceBuildError::none);
    good.resize(r.len);
    std::mt19937 rng(29);
    std::lock_guard lock(port.mutex());
    REQUIRE(port.roce().attach(*t.ep.qp));
    for (int i = 0; i < 30000; ++i) {
        std::vector<std::uint8_t> f = good;
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < flips; ++k) // never the Ethernet, IP or UDP addressing
            f[42 + rng() % (f.size() - 42)] ^= static_cast<std::uint8_t>(1 + rng() % 255);
        if (rng() % 8 == 0) f.resize(42 + rng() % (f.size() - 42)); // cut short
        net::Frame fr;
        fr.data = f.data();
        fr.len = fr.wire_len = static_cast<std::uint32_t>(f.size());
        port.ingress(fr, static_cast<std::uint64_t>(i));
    }
    port.roce().detach(0x22);
    const auto& c = port.roce().counters();
    std::uint64_t parse = 0;
    for (const auto& d : c.parse_drops) parse += d.get();
    CHECK(c.frames.get() == 30000);
    CHECK(c.frames.get() == parse + c.unknown_qp.get() + t.ep.qp->counters().rx_frames.get());
    CHECK(port.balanced());
    CHECK(all_are(mem, 0x66));
    CHECK(t.ep.qp->counters().get(RoceRx::consumed) == 0);
}
