// BTH and extension headers on golden bytes, PSN arithmetic, path MTU, the
// opcode table (net/README.md, "RoCE v2 frames").
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <set>
#include <string>

#include "net/roce_headers.hpp"
#include "net/roce_opcodes.hpp"

using namespace rdmasim::net;

TEST_CASE("BTH fields from golden bytes and back", "[roce]") {
    // opcode 0x0b; SE M PadCnt 2 TVer 0; P_Key 0x8001; F B; DestQP 0xabcdef; A; PSN 0x123456
    const std::array<std::uint8_t, 12> wire = {0x0b, 0xe0, 0x80, 0x01, 0xc0, 0xab,
                                               0xcd, 0xef, 0x80, 0x12, 0x34, 0x56};
    const Bth b = Bth::load(wire.data());
    CHECK(b.opcode == 0x0b);
    CHECK(b.solicited);
    CHECK(b.mig_req);
    CHECK(b.pad == 2);
    CHECK(b.version == 0);
    CHECK(b.pkey == 0x8001);
    CHECK(b.fecn);
    CHECK(b.becn);
    CHECK(b.dest_qp == 0xabcdef);
    CHECK(b.ack_req);
    CHECK(b.psn == 0x123456);
    std::array<std::uint8_t, 12> out{};
    b.store(out.data());
    CHECK(out == wire);

    // Reserved bits read as nothing and are written as 0.
    auto reserved = wire;
    reserved[4] |= 0x3f;
    reserved[8] |= 0x7f;
    Bth::load(reserved.data()).store(out.data());
    CHECK(out == wire);

    SECTION("a field wider than its bits is cut, never spilling into its neighbours") {
        Bth wide;
        wide.dest_qp = 0x1fffffe;
        wide.psn = 0x1000001;
        wide.pad = 7;
        wide.version = 0x1f;
        std::array<std::uint8_t, 12> w{};
        wide.store(w.data());
        const Bth back = Bth::load(w.data());
        CHECK(back.dest_qp == 0xfffffe);
        CHECK(back.psn == 1);
        CHECK(back.pad == 3);
        CHECK(back.version == 0x0f);
        CHECK(!back.fecn);
        CHECK(!back.solicited);
    }
}

TEST_CASE("extension headers in network byte order", "[roce]") {
    std::array<std::uint8_t, 28> out{};

    const Reth reth{0x0102030405060708, 0x0a0b0c0d, 0x11223344};
    reth.store(out.data());
    const std::array<std::uint8_t, 16> reth_wire = {1,    2,    3,    4,    5,    6,    7,    8,
                                                    0x0a, 0x0b, 0x0c, 0x0d, 0x11, 0x22, 0x33, 0x44};
    CHECK(std::equal(reth_wire.begin(), reth_wire.end(), out.begin()));
    CHECK(Reth::load(out.data()) == reth);

    const Aeth aeth{
        Aeth::make_syndrome(AckKind::nak, static_cast<std::uint8_t>(NakCode::remote_access_error)),
        0x010203};
    aeth.store(out.data());
    CHECK(out[0] == 0x62); // 0 11 00010
    CHECK(out[1] == 1);
    CHECK(out[3] == 3);
    CHECK(Aeth::load(out.data()) == aeth);
    CHECK(aeth.kind() == AckKind::nak);
    CHECK(aeth.value() == 2);
    const Aeth rnr{Aeth::make_syndrome(AckKind::rnr_nak, 14), 0};
    CHECK(rnr.syndrome == 0x2e);
    CHECK(rnr.kind() == AckKind::rnr_nak);
    CHECK(Aeth{Aeth::make_syndrome(AckKind::ack, kCreditsInvalid), 0}.syndrome == 0x1f);

    out.fill(0xee);
    const Deth deth{0x80010002, 0x00abcdef};
    deth.store(out.data());
    const std::array<std::uint8_t, 8> deth_wire = {0x80, 0x01, 0x00, 0x02, 0x00, 0xab, 0xcd, 0xef};
    CHECK(std::equal(deth_wire.begin(), deth_wire.end(), out.begin())); // the reserved byte is 0
    CHECK(Deth::load(out.data()) == deth);

    const AtomicEth atomic{0x1000, 0x42, 0xfedcba9876543210, 0x0011223344556677};
    atomic.store(out.data());
    CHECK(out[8] == 0);
    CHECK(out[11] == 0x42);
    CHECK(out[12] == 0xfe);
    CHECK(out[19] == 0x10);
    CHECK(out[20] == 0x00);
    CHECK(out[27] == 0x77);
    CHECK(AtomicEth::load(out.data()) == atomic);

    const AtomicAckEth ack{0x8000000000000001};
    ack.store(out.data());
    CHECK(out[0] == 0x80);
    CHECK(out[7] == 0x01);
    CHECK(AtomicAckEth::load(out.data()) == ack);

    ImmDt{0xdeadbeef}.store(out.data());
    CHECK(out[0] == 0xde);
    CHECK(out[3] == 0xef);
    CHECK(ImmDt::load(out.data()).value == 0xdeadbeef);
    Ieth{0x00c0ffee}.store(out.data());
    CHECK(Ieth::load(out.data()).rkey == 0x00c0ffee);
}

TEST_CASE("PSN arithmetic wraps at 24 bits and compares as serial numbers", "[roce]") {
    CHECK(psn_add(0xffffff, 1) == 0);
    CHECK(psn_add(0xfffff0, 0x20) == 0x10);
    CHECK(psn_add(5, 0) == 5);
    CHECK(psn_diff(0, 0xffffff) == 1);
    CHECK(psn_diff(0xffffff, 0) == -1);
    CHECK(psn_diff(0x10, 0xfffff0) == 0x20);
    CHECK(psn_diff(0x7fffff, 0) == 0x7fffff);
    CHECK(psn_diff(0x800000, 0) == -0x800000); // half the space away: "before"
    CHECK(psn_diff(7, 7) == 0);
    CHECK(psn_before(0xffffff, 0));
    CHECK(!psn_before(0, 0xffffff));
    CHECK(!psn_before(3, 3));
    CHECK(psn_before(0x100, 0x101));
    // Bits above 24 are ignored.
    CHECK(psn_diff(0x1000005, 5) == 0);
}

TEST_CASE("path MTU follows enum ibv_mtu", "[roce]") {
    CHECK(mtu_bytes(PathMtu::mtu256) == 256);
    CHECK(mtu_bytes(PathMtu::mtu4096) == 4096);
    CHECK(static_cast<int>(PathMtu::mtu256) == IBV_MTU_256);
    CHECK(static_cast<int>(PathMtu::mtu512) == IBV_MTU_512);
    CHECK(static_cast<int>(PathMtu::mtu1024) == IBV_MTU_1024);
    CHECK(static_cast<int>(PathMtu::mtu2048) == IBV_MTU_2048);
    CHECK(static_cast<int>(PathMtu::mtu4096) == IBV_MTU_4096);
    CHECK(mtu_bytes(*path_mtu_from_enum(IBV_MTU_2048)) == 2048);
    CHECK(!path_mtu_from_enum(0));
    CHECK(!path_mtu_from_enum(6));
    CHECK(path_mtu_from_bytes(1024) == PathMtu::mtu1024);
    CHECK(!path_mtu_from_bytes(1500));
    CHECK(!path_mtu_from_bytes(0));
}

TEST_CASE("opcode table", "[roce]") {
    std::set<std::uint8_t> seen;
    const OpcodeInfo* table = opcode_table_begin();
    for (std::size_t i = 0; i < opcode_table_size(); ++i) {
        const OpcodeInfo& e = table[i];
        const auto code = static_cast<std::uint8_t>(e.opcode);
        INFO(transport_name(e.transport) << " " << e.name);
        CHECK(seen.insert(code).second);
        CHECK(opcode_info(code) == &e);
        CHECK(static_cast<unsigned>(e.transport) == code >> 5u);
        CHECK(e.header_len % 4 == 0);
        CHECK(e.full_mtu == (e.has_payload && (e.position == SegmentPosition::first ||
                                               e.position == SegmentPosition::middle)));
        const std::string name = e.name;
        CHECK(e.immediate() == (name.find("IMMEDIATE") != std::string::npos));
        CHECK(e.invalidate() == (name.find("INVALIDATE") != std::string::npos));
        if (i) CHECK(static_cast<std::uint8_t>(table[i - 1].opcode) < code);
    }
    CHECK(seen.size() == 61); // RC 24, UC 12, UD 2, XRC 23

    // Reserved, RD, CNP, FLUSH and XRC's atomic write are not spoken.
    for (std::uint8_t code :
         {0x15, 0x18, 0x1c, 0x1f, 0x2c, 0x40, 0x4c, 0x60, 0x63, 0x66, 0x81, 0xb5, 0xbd, 0xff})
        CHECK(opcode_info(code) == nullptr);

    const auto& write_imm = opcode_info(RoceOpcode::rc_write_only_imm);
    CHECK(write_imm.has(kExtReth));
    CHECK(write_imm.has(kExtImmDt));
    CHECK(write_imm.header_len == 12 + 16 + 4);
    CHECK(write_imm.position == SegmentPosition::only);
    CHECK(std::string(write_imm.name) == "RDMA_WRITE_ONLY_WITH_IMMEDIATE");

    const auto& uc_first = opcode_info(RoceOpcode::uc_write_first);
    CHECK(uc_first.transport == RoceTransport::uc);
    CHECK(uc_first.ext == kExtReth);
    CHECK(uc_first.full_mtu);

    const auto& read_req = opcode_info(RoceOpcode::rc_read_request);
    CHECK(read_req.header_len == 28);
    CHECK(!read_req.has_payload);

    CHECK(opcode_info(RoceOpcode::rc_read_response_middle).ext == 0);
    CHECK(opcode_info(RoceOpcode::rc_read_response_last).ext == kExtAeth);
    CHECK(opcode_info(RoceOpcode::rc_atomic_ack).header_len == 12 + 4 + 8);
    CHECK(opcode_info(RoceOpcode::rc_fetch_add).header_len == 12 + 28);
    CHECK(opcode_info(RoceOpcode::rc_ack).header_len == 16);
    CHECK(opcode_info(RoceOpcode::rc_send_only_inv).ext == kExtIeth);
    const auto& ud_imm = opcode_info(RoceOpcode::ud_send_only_imm);
    CHECK(ud_imm.transport == RoceTransport::ud);
    CHECK(ud_imm.header_len == 12 + 8 + 4);
    CHECK(ud_imm.immediate());

    const auto& atomic_write = opcode_info(RoceOpcode::rc_atomic_write);
    CHECK(atomic_write.op == RoceOp::atomic_write);
    CHECK(atomic_write.ext == kExtReth);
    CHECK(atomic_write.header_len == 12 + 16);
    CHECK(payload_length_ok(atomic_write, 8, 256));
    CHECK(!payload_length_ok(atomic_write, 4, 256));
    CHECK(!payload_length_ok(atomic_write, 0, 256));
}

TEST_CASE("XRC opcodes: RC's operations, requests with an XRCETH first", "[roce]") {
    for (std::uint8_t code = 0; code < 0x18; ++code) {
        const OpcodeInfo* rc = opcode_info(code);
        const OpcodeInfo* xrc = opcode_info(xrc_opcode(static_cast<RoceOpcode>(code)));
        INFO(int(code));
        REQUIRE((rc == nullptr) == (xrc == nullptr));
        if (rc == nullptr) continue;
        CHECK(xrc->transport == RoceTransport::xrc);
        CHECK(std::string(xrc->name) == rc->name);
        CHECK(xrc->op == rc->op);
        CHECK(xrc->position == rc->position);
        const bool response = rc->op == RoceOp::rdma_read_response || rc->op == RoceOp::ack ||
                              rc->op == RoceOp::atomic_ack;
        CHECK(xrc->ext == (response ? rc->ext : rc->ext | kExtXrceth));
        CHECK(xrc->header_len == rc->header_len + (response ? 0 : Xrceth::kSize));
    }
    CHECK(opcode_info(0xa4)->header_len == 16); // SEND_ONLY: BTH, XRCETH
    CHECK(std::string(transport_name(RoceTransport::xrc)) == "XRC");

    std::uint8_t b[4];
    Xrceth{0x12345678}.store(b); // 24 bits: the top byte is cut
    CHECK(b[0] == 0);
    CHECK(b[1] == 0x34);
    CHECK(b[3] == 0x78);
    CHECK(Xrceth::load(b).srqn == 0x345678);
}

TEST_CASE("payload length rules per segment position", "[roce]") {
    const auto& first = opcode_info(RoceOpcode::rc_send_first);
    CHECK(payload_length_ok(first, 1024, 1024));
    CHECK(!payload_length_ok(first, 1023, 1024));
    CHECK(!payload_length_ok(first, 1025, 1024));
    const auto& middle = opcode_info(RoceOpcode::uc_write_middle);
    CHECK(payload_length_ok(middle, 256, 256));
    CHECK(!payload_length_ok(middle, 0, 256));
    const auto& last = opcode_info(RoceOpcode::rc_read_response_last);
    CHECK(payload_length_ok(last, 1, 4096));
    CHECK(payload_length_ok(last, 4096, 4096));
    CHECK(!payload_length_ok(last, 0, 4096));
    CHECK(!payload_length_ok(last, 4097, 4096));
    const auto& only = opcode_info(RoceOpcode::ud_send_only);
    CHECK(payload_length_ok(only, 0, 1024));
    CHECK(payload_length_ok(only, 1024, 1024));
    CHECK(!payload_length_ok(only, 1025, 1024));
    const auto& ack = opcode_info(RoceOpcode::rc_ack);
    CHECK(payload_length_ok(ack, 0, 1024));
    CHECK(!payload_length_ok(ack, 4, 1024));
}
