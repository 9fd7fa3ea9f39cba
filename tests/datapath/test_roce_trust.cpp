// A hostile peer against one responder QP (datapath/README.md, "RoCE
// transport", "What a peer reaches"): hand-built RoCE v2 frames, interleaved
// with the revoking calls a program makes between them. The peer reaches
// only memory registered for it, with the rights given, for as long as it
// stays registered; what it is refused, it is refused as mlx5 and rxe do.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <algorithm>
#include <array>
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
    datapath::PortAddresses own;
    own.mac = t.attrs.path.src_mac;
    own.ipv4 = {192, 0, 2, 0x22};
    port.configure_addresses(own);
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
