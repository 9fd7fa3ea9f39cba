// RoCE v2 frames: build byte for byte against scapy's frames, round trips of
// every opcode (IPv4 and IPv6, tagged and not), and every drop reason
// (net/README.md, "RoCE v2 frames").
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "net/icrc.hpp"
#include "net/roce_frame.hpp"
#include "tests/net/roce_golden_frames.hpp"

using namespace rdmasim::net;
using rdmasim::test::kRcAck;
using rdmasim::test::kRcSendOnly;
using rdmasim::test::kUdIpv6;

namespace {

using Buf = std::vector<std::uint8_t>;

Gid v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
    const std::uint8_t ip[4] = {a, b, c, d};
    return ipv4_mapped_gid(ip);
}

Gid fe80(std::uint8_t last) {
    Gid g{};
    g[0] = 0xfe;
    g[1] = 0x80;
    g[15] = last;
    return g;
}

RocePath path_v4() {
    RocePath p;
    p.dst_mac = {0x02, 0, 0, 0, 0, 0x02};
    p.src_mac = {0x02, 0, 0, 0, 0, 0x01};
    p.sgid = v4(192, 0, 2, 1);
    p.dgid = v4(192, 0, 2, 2);
    p.hop_limit = 64;
    p.udp_src_port = 0xc123;
    return p;
}

RocePath path_v6() {
    RocePath p = path_v4();
    p.sgid = fe80(1);
    p.dgid = fe80(2);
    p.traffic_class = 0x8a;
    p.flow_label = 0x12345;
    p.hop_limit = 5;
    p.udp_src_port = 0xd00d;
    return p;
}

Buf build(const RocePath& path, const RoceHeaders& h, const Buf& payload) {
    Buf out(roce_frame_len(path, h.bth.opcode, payload.size()));
    const RoceBuildResult r = build_roce_frame(path, h, payload, out);
    REQUIRE(r.error == RoceBuildError::none);
    REQUIRE(r.len == out.size());
    return out;
}

// Headers with every field of every extension header set to something non-zero.
RoceHeaders full_headers(std::uint8_t opcode) {
    RoceHeaders h;
    h.bth.opcode = opcode;
    h.bth.solicited = true;
    h.bth.pkey = 0x8001;
    h.bth.dest_qp = 0x00abcd;
    h.bth.ack_req = true;
    h.bth.psn = 0xfffffe;
    h.xrceth = {0x00a5c3};
    h.deth = {0x80010002, 0x000123};
    h.reth = {0x00007f0012345678, 0x1234, 4096};
    h.atomic_eth = {0x1000, 0x42, 7, 9};
    h.aeth = {Aeth::make_syndrome(AckKind::ack, kCreditsInvalid), 0x000777};
    h.atomic_ack_eth = {0x1122334455667788};
    h.imm = {0xdeadbeef};
    h.ieth = {0x00c0ffee};
    return h;
}

// What parsing gives back: the fields the opcode carries, the others default.
RoceHeaders expected_after_parse(const RoceHeaders& sent, std::size_t payload_len) {
    const OpcodeInfo& info = *opcode_info(sent.bth.opcode);
    RoceHeaders h;
    h.bth = sent.bth;
    h.bth.pad = static_cast<std::uint8_t>((4 - payload_len % 4) % 4);
    if (info.has(kExtXrceth)) h.xrceth = sent.xrceth;
    if (info.has(kExtDeth)) h.deth = sent.deth;
    if (info.has(kExtReth)) h.reth = sent.reth;
    if (info.has(kExtAtomicEth)) h.atomic_eth = sent.atomic_eth;
    if (info.has(kExtAeth)) h.aeth = sent.aeth;
    if (info.has(kExtAtomicAckEth)) h.atomic_ack_eth = sent.atomic_ack_eth;
    if (info.has(kExtImmDt)) h.imm = sent.imm;
    if (info.has(kExtIeth)) h.ieth = sent.ieth;
    return h;
}

RoceDrop parse(const Buf& frame) {
    RocePacket p;
    return parse_roce_frame(frame, p);
}

// IPv4 only: the offsets of a frame built from path_v4().
constexpr std::size_t kIp = 14, kUdp = 34, kBth = 42;

void fix_ipv4_checksum(Buf& f) {
    f[kIp + 10] = f[kIp + 11] = 0;
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i < 20; i += 2)
        sum += static_cast<std::uint32_t>((f[kIp + i] << 8) | f[kIp + i + 1]);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    f[kIp + 10] = static_cast<std::uint8_t>(~sum >> 8);
    f[kIp + 11] = static_cast<std::uint8_t>(~sum);
}

// The ICRC at the end of the IPv4 datagram, recomputed.
void fix_icrc(Buf& f) {
    const std::size_t end = kIp + ((f[kIp + 2] << 8) | f[kIp + 3]);
    store_icrc(f.data() + end - 4, roce_icrc({f.data() + kIp, end - 4 - kIp}, 20));
}

// Grows (or shrinks) the bytes between the headers and the ICRC by `delta`,
// keeping the IP and UDP lengths, the checksum and the ICRC consistent.
Buf resize_body(Buf f, int delta) {
    const std::size_t total = (f[kIp + 2] << 8) | f[kIp + 3];
    const std::size_t icrc_at = kIp + total - 4;
    Buf out(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(icrc_at));
    out.resize(static_cast<std::size_t>(static_cast<int>(out.size()) + delta), 0x5a);
    out.insert(out.end(), 4, 0); // the ICRC
    const auto new_total = static_cast<std::uint16_t>(static_cast<int>(total) + delta);
    out[kIp + 2] = static_cast<std::uint8_t>(new_total >> 8);
    out[kIp + 3] = static_cast<std::uint8_t>(new_total);
    const auto udp_len = static_cast<std::uint16_t>(new_total - 20);
    out[kUdp + 4] = static_cast<std::uint8_t>(udp_len >> 8);
    out[kUdp + 5] = static_cast<std::uint8_t>(udp_len);
    fix_ipv4_checksum(out);
    fix_icrc(out);
    return out;
}

} // namespace

TEST_CASE("frames built byte for byte as scapy builds them", "[roce]") {
    SECTION("IPv4 RC SEND_ONLY with pad") {
        RoceHeaders h;
        h.bth.opcode = static_cast<std::uint8_t>(RoceOpcode::rc_send_only);
        h.bth.dest_qp = 0x12;
        h.bth.psn = 0x10;
        h.bth.ack_req = true;
        const Buf payload = {'h', 'e', 'l', 'l', 'o'};
        CHECK(build(path_v4(), h, payload) == kRcSendOnly);
    }
    SECTION("IPv4 RC ACKNOWLEDGE with a traffic class") {
        RocePath p = path_v4();
        std::swap(p.sgid, p.dgid);
        p.traffic_class = 0x68;
        p.udp_src_port = 0xe001;
        RoceHeaders h;
        h.bth.opcode = static_cast<std::uint8_t>(RoceOpcode::rc_ack);
        h.bth.dest_qp = 0xabcdef;
        h.bth.psn = 0xfffffe;
        h.aeth = {0x1f, 0x102};
        CHECK(build(p, h, {}) == kRcAck);
    }
    SECTION("IPv6 UD SEND_ONLY_WITH_IMMEDIATE with FECN and BECN") {
        RoceHeaders h;
        h.bth.opcode = static_cast<std::uint8_t>(RoceOpcode::ud_send_only_imm);
        h.bth.solicited = true;
        h.bth.fecn = h.bth.becn = true;
        h.bth.dest_qp = 0x345;
        h.bth.psn = 0x123456;
        h.deth = {0x11111111, 0x678};
        h.imm = {0xdeadbeef};
        const Buf payload = {'a', 'b', 'c', 'd', 'e', 'f'};
        CHECK(build(path_v6(), h, payload) == kUdIpv6);
    }
}

TEST_CASE("scapy's frames parse field by field", "[roce]") {
    RocePacket p;
    REQUIRE(parse_roce_frame(kUdIpv6, p) == RoceDrop::none);
    CHECK(p.info == &opcode_info(RoceOpcode::ud_send_only_imm));
    CHECK(p.ipv6);
    CHECK(!p.has_vlan);
    CHECK(p.sgid == fe80(1));
    CHECK(p.dgid == fe80(2));
    CHECK(p.traffic_class == 0x8a);
    CHECK(p.flow_label == 0x12345);
    CHECK(p.hop_limit == 5);
    CHECK(p.udp_src_port == 0xd00d);
    CHECK(p.headers.bth.psn == 0x123456);
    CHECK(p.headers.bth.fecn);
    CHECK(p.headers.bth.pad == 2);
    CHECK(p.headers.deth == Deth{0x11111111, 0x678});
    CHECK(p.headers.imm.value == 0xdeadbeef);
    CHECK(std::string(p.payload.begin(), p.payload.end()) == "abcdef");
    CHECK(p.ip_header.size() == 40);
    CHECK(p.ip_header.data() == kUdIpv6.data() + 14);
    CHECK(p.src_mac == kUdIpv6.data() + 6);

    REQUIRE(parse_roce_frame(kRcAck, p) == RoceDrop::none);
    CHECK(!p.ipv6);
    CHECK(p.sgid == v4(192, 0, 2, 2));
    CHECK(p.traffic_class == 0x68);
    CHECK(p.hop_limit == 64);
    CHECK(p.flow_label == 0);
    CHECK(p.headers.aeth == Aeth{0x1f, 0x102});
    CHECK(p.payload.empty());
    CHECK(p.ip_header.size() == 20);
}

TEST_CASE("every opcode round trips, IPv4 and IPv6, with and without a VLAN tag", "[roce]") {
    const OpcodeInfo* table = opcode_table_begin();
    std::size_t frames = 0;
    for (std::size_t i = 0; i < opcode_table_size(); ++i) {
        const OpcodeInfo& info = table[i];
        const auto code = static_cast<std::uint8_t>(info.opcode);
        const std::vector<std::size_t> lengths =
            info.has_payload ? std::vector<std::size_t>{1, 2, 3, 4, 5, 256, 4096}
                             : std::vector<std::size_t>{0};
        for (const bool ipv6 : {false, true})
            for (const bool tagged : {false, true})
                for (const std::size_t len : lengths) {
                    INFO(transport_name(info.transport)
                         << " " << info.name << " ipv6 " << ipv6 << " vlan " << tagged
                         << " payload " << len);
                    RocePath path = ipv6 ? path_v6() : path_v4();
                    if (tagged) path.vlan_tci = 0xa07b; // PCP 5, VID 123
                    const RoceHeaders sent = full_headers(code);
                    Buf payload(len);
                    for (std::size_t k = 0; k < len; ++k)
                        payload[k] = static_cast<std::uint8_t>(k * 7 + code);
                    const Buf frame = build(path, sent, payload);
                    RocePacket p;
                    REQUIRE(parse_roce_frame(frame, p) == RoceDrop::none);
                    CHECK(p.info == &info);
                    CHECK(p.headers == expected_after_parse(sent, len));
                    CHECK(Buf(p.payload.begin(), p.payload.end()) == payload);
                    CHECK(p.ipv6 == ipv6);
                    CHECK(p.has_vlan == tagged);
                    CHECK(p.vlan_tci == (tagged ? 0xa07b : 0));
                    CHECK(p.sgid == path.sgid);
                    CHECK(p.dgid == path.dgid);
                    CHECK(p.traffic_class == path.traffic_class);
                    CHECK(p.hop_limit == path.hop_limit);
                    CHECK(p.flow_label == (ipv6 ? path.flow_label : 0));
                    CHECK(p.udp_src_port == path.udp_src_port);
                    CHECK(std::memcmp(p.dst_mac, path.dst_mac.data(), 6) == 0);
                    CHECK(std::memcmp(p.src_mac, path.src_mac.data(), 6) == 0);
                    // The bytes after the headers are the payload, the zero pad and the ICRC.
                    const std::size_t pad = (4 - len % 4) % 4;
                    const std::uint8_t* end = p.payload.data() + p.payload.size();
                    for (std::size_t k = 0; k < pad; ++k)
                        CHECK(end[k] == 0);
                    ++frames;
                }
    }
    CHECK(frames == (24 + 12 + 2 + 23 - 10) * 4 * 7 + 10 * 4); // 10 opcodes carry no payload
}

TEST_CASE("an XRC request: the XRCETH right after the BTH, covered by the ICRC", "[roce]") {
    RoceHeaders h;
    h.bth.opcode = xrc_opcode(RoceOpcode::rc_write_only_imm);
    h.bth.dest_qp = 0x000321;
    h.bth.psn = 0x42;
    h.bth.ack_req = true;
    h.xrceth = {0x000abc};
    h.reth = {0x1000, 0x77, 4};
    h.imm = {0x01020304};
    const Buf payload = {'x', 'r', 'c', '!'};
    Buf f = build(path_v4(), h, payload);
    // BTH, XRCETH (reserved byte, SRQ number), RETH, ImmDt, payload.
    CHECK(f[kBth] == 0xab);
    CHECK(Buf(f.begin() + kBth + 12, f.begin() + kBth + 16) == Buf{0, 0, 0x0a, 0xbc});
    CHECK(f[kBth + 16 + 15] == 4); // the RETH's DMA length ends the RETH
    CHECK(Buf(f.begin() + kBth + 32, f.begin() + kBth + 36) == Buf{1, 2, 3, 4});
    RocePacket p;
    REQUIRE(parse_roce_frame(f, p) == RoceDrop::none);
    CHECK(p.info->transport == RoceTransport::xrc);
    CHECK(p.headers.xrceth.srqn == 0xabc);
    CHECK(p.headers.reth == Reth{0x1000, 0x77, 4});
    CHECK(std::string(p.payload.begin(), p.payload.end()) == "xrc!");
    f[kBth + 15] ^= 1; // another SRQ number: the ICRC no longer matches
    CHECK(parse(f) == RoceDrop::icrc);

    // Responses carry no XRCETH: an XRC ACKNOWLEDGE is BTH and AETH.
    RoceHeaders ack;
    ack.bth.opcode = xrc_opcode(RoceOpcode::rc_ack);
    ack.aeth = {0x1f, 5};
    const Buf a = build(path_v4(), ack, {});
    REQUIRE(parse_roce_frame(a, p) == RoceDrop::none);
    CHECK(p.headers.aeth == Aeth{0x1f, 5});
    CHECK(p.headers.xrceth == Xrceth{});
}

TEST_CASE("ATOMIC WRITE: a RETH and exactly 8 bytes", "[roce]") {
    RoceHeaders h;
    h.bth.opcode = static_cast<std::uint8_t>(RoceOpcode::rc_atomic_write);
    h.reth = {0x2000, 0x99, 8};
    const Buf eight = {1, 2, 3, 4, 5, 6, 7, 8};
    const Buf f = build(path_v4(), h, eight);
    RocePacket p;
    REQUIRE(parse_roce_frame(f, p) == RoceDrop::none);
    CHECK(p.info->op == RoceOp::atomic_write);
    CHECK(p.headers.reth == Reth{0x2000, 0x99, 8});
    CHECK(Buf(p.payload.begin(), p.payload.end()) == eight);
    CHECK(payload_length_ok(*p.info, 8, 1024));
}

TEST_CASE("short frames are padded to 60 bytes; the padding is not payload", "[roce]") {
    RoceHeaders h;
    h.bth.opcode = static_cast<std::uint8_t>(RoceOpcode::rc_send_only);
    const Buf frame = build(path_v4(), h, {});
    CHECK(frame.size() == kMinEthernetFrame); // 58 bytes of packet, 2 of padding
    CHECK(frame[58] == 0);
    CHECK(frame[59] == 0);
    RocePacket p;
    REQUIRE(parse_roce_frame(frame, p) == RoceDrop::none);
    CHECK(p.payload.empty());
    CHECK(p.headers.bth.pad == 0);
    // Longer Ethernet padding (or an FCS left on) is ignored too.
    Buf longer = frame;
    longer.insert(longer.end(), 10, 0xaa);
    CHECK(parse(longer) == RoceDrop::none);
}

TEST_CASE("a payload gathered from pieces", "[roce]") {
    RoceHeaders h;
    h.bth.opcode = static_cast<std::uint8_t>(RoceOpcode::uc_write_only);
    h.reth = {0x1000, 5, 11};
    const Buf a = {'h', 'e', 'l'}, b = {}, c = {'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'};
    const std::span<const std::uint8_t> pieces[] = {a, b, c};
    RocePath path = path_v4();
    Buf out(roce_frame_len(path, h.bth.opcode, 11));
    REQUIRE(build_roce_frame(path, h, pieces, out).error == RoceBuildError::none);
    RocePacket p;
    REQUIRE(parse_roce_frame(out, p) == RoceDrop::none);
    CHECK(std::string(p.payload.begin(), p.payload.end()) == "hello world");
    CHECK(p.headers.bth.pad == 1);
}

TEST_CASE("build refuses what it cannot write", "[roce]") {
    RocePath path = path_v4();
    RoceHeaders h;
    Buf out(9000);
    const Buf four = {1, 2, 3, 4};

    h.bth.opcode = 0x40; // RD
    CHECK(build_roce_frame(path, h, four, out).error == RoceBuildError::unknown_opcode);
    CHECK(roce_frame_len(path, 0x40, 4) == 0);

    h.bth.opcode = static_cast<std::uint8_t>(RoceOpcode::rc_read_request);
    const RoceBuildResult r = build_roce_frame(path, h, four, out);
    CHECK(r.error == RoceBuildError::payload_not_allowed);
    CHECK(r.len == 0);

    h.bth.opcode = static_cast<std::uint8_t>(RoceOpcode::rc_send_only);
    RocePath mixed = path;
    mixed.dgid = fe80(2);
    CHECK(build_roce_frame(mixed, h, four, out).error == RoceBuildError::mixed_address_families);

    Buf small(roce_frame_len(path, h.bth.opcode, 4) - 1);
    CHECK(build_roce_frame(path, h, four, small).error == RoceBuildError::buffer_too_small);

    // The IP total length counts the pad: 65489 bytes pad to 65492, one past 65535.
    const Buf huge(65489);
    Buf big(70000);
    CHECK(build_roce_frame(path, h, huge, big).error == RoceBuildError::too_long);
    const Buf largest(65488); // 20 + 8 + 12 + 65488 + 4 = 65532
    CHECK(build_roce_frame(path, h, largest, big).error == RoceBuildError::none);

    std::set<std::string> names;
    for (int e = 0; e <= static_cast<int>(RoceBuildError::buffer_too_small); ++e)
        names.insert(roce_build_error_name(static_cast<RoceBuildError>(e)));
    CHECK(names.size() == 6);
}

TEST_CASE("every drop reason, each from one defect", "[roce]") {
    RoceHeaders h = full_headers(static_cast<std::uint8_t>(RoceOpcode::rc_send_only));
    const Buf good = build(path_v4(), h, Buf{1, 2, 3, 4, 5, 6, 7, 8});
    REQUIRE(parse(good) == RoceDrop::none);
    RoceHeaders ack_h = full_headers(static_cast<std::uint8_t>(RoceOpcode::rc_ack));
    const Buf ack = build(path_v4(), ack_h, {});
    REQUIRE(parse(ack) == RoceDrop::none);

    SECTION("truncated") {
        CHECK(parse(Buf(good.begin(), good.begin() + 13)) == RoceDrop::truncated);
        CHECK(parse(Buf(good.begin(), good.begin() + 14)) == RoceDrop::truncated);
        CHECK(parse(Buf(good.begin(), good.begin() + 30)) == RoceDrop::truncated);
        CHECK(parse(Buf(good.begin(), good.end() - 1)) == RoceDrop::truncated);
        Buf tag = {0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x81, 0x00, 0x00};
        CHECK(parse(tag) == RoceDrop::truncated);
        RocePath p6 = path_v6();
        const Buf v6 = build(p6, h, Buf{1});
        CHECK(parse(Buf(v6.begin(), v6.begin() + 50)) == RoceDrop::truncated);
        CHECK(parse(Buf(v6.begin(), v6.end() - 1)) == RoceDrop::truncated);
    }
    SECTION("not_ip") {
        Buf f = good;
        f[12] = 0x08;
        f[13] = 0x06; // ARP
        CHECK(parse(f) == RoceDrop::not_ip);
    }
    SECTION("bad_ip_header") {
        Buf f = good;
        f[kIp] = 0x65; // version 6 under ether type IPv4
        CHECK(parse(f) == RoceDrop::bad_ip_header);
        f[kIp] = 0x44; // IHL 4
        CHECK(parse(f) == RoceDrop::bad_ip_header);
        f = good;
        f[kIp + 2] = 0;
        f[kIp + 3] = 19; // total length shorter than the header
        fix_ipv4_checksum(f);
        CHECK(parse(f) == RoceDrop::bad_ip_header);
        Buf v6 = build(path_v6(), h, Buf{1});
        v6[kIp] = 0x48;
        CHECK(parse(v6) == RoceDrop::bad_ip_header);
    }
    SECTION("ip_checksum") {
        Buf f = good;
        f[kIp + 8] ^= 1; // TTL without the checksum
        CHECK(parse(f) == RoceDrop::ip_checksum);
    }
    SECTION("ip_fragment") {
        Buf f = good;
        f[kIp + 6] = 0x20; // MF
        fix_ipv4_checksum(f);
        CHECK(parse(f) == RoceDrop::ip_fragment);
    }
    SECTION("not_udp") {
        Buf f = good;
        f[kIp + 9] = 6;
        fix_ipv4_checksum(f);
        CHECK(parse(f) == RoceDrop::not_udp);
        Buf v6 = build(path_v6(), h, Buf{1});
        v6[kIp + 6] = 0; // hop-by-hop options: extension headers are not walked
        CHECK(parse(v6) == RoceDrop::not_udp);
    }
    SECTION("not_roce_port") {
        Buf f = good;
        f[kUdp + 3] ^= 1; // 4790
        CHECK(parse(f) == RoceDrop::not_roce_port);
    }
    SECTION("udp_length") {
        Buf f = good;
        f[kUdp + 5] += 4;
        CHECK(parse(f) == RoceDrop::udp_length);
        f[kUdp + 5] -= 8;
        CHECK(parse(f) == RoceDrop::udp_length);
        Buf tiny(good.begin(), good.begin() + kUdp + 4); // an IP payload of 4 bytes
        tiny[kIp + 2] = 0;
        tiny[kIp + 3] = 24;
        fix_ipv4_checksum(tiny);
        CHECK(parse(tiny) == RoceDrop::udp_length);
    }
    SECTION("short_packet") {
        // No room for BTH and ICRC.
        CHECK(parse(resize_body(ack, -8)) == RoceDrop::short_packet);
        // Room for BTH and ICRC, not for the AETH an ACK carries.
        CHECK(parse(resize_body(ack, -4)) == RoceDrop::short_packet);
    }
    SECTION("icrc") {
        Buf f = good;
        f[kBth + 12] ^= 0x80; // a payload bit
        CHECK(parse(f) == RoceDrop::icrc);
        f = good;
        f[kBth + 7] ^= 1; // DestQP
        CHECK(parse(f) == RoceDrop::icrc);
        f = good;
        f[f.size() - 1] ^= 1; // the ICRC itself
        CHECK(parse(f) == RoceDrop::icrc);
    }
    SECTION("bth_version") {
        Buf f = good;
        f[kBth + 1] |= 0x01;
        fix_icrc(f);
        CHECK(parse(f) == RoceDrop::bth_version);
    }
    SECTION("unknown_opcode") {
        for (std::uint8_t code : {0x15, 0x40, 0x81}) {
            Buf f = good;
            f[kBth] = code;
            fix_icrc(f);
            CHECK(parse(f) == RoceDrop::unknown_opcode);
        }
    }
    SECTION("bad_pad") {
        CHECK(parse(resize_body(ack, 1)) == RoceDrop::bad_pad); // not a multiple of 4
        RoceHeaders empty = h;
        const Buf e = build(path_v4(), empty, {});
        Buf f = e;
        f[kBth + 1] |= 0x10; // pad 1, nothing after the headers
        fix_icrc(f);
        CHECK(parse(f) == RoceDrop::bad_pad);
    }
    SECTION("unexpected_payload") {
        CHECK(parse(resize_body(ack, 4)) == RoceDrop::unexpected_payload);
        const Buf read = build(
            path_v4(), full_headers(static_cast<std::uint8_t>(RoceOpcode::rc_read_request)), {});
        CHECK(parse(resize_body(read, 8)) == RoceDrop::unexpected_payload);
    }
    SECTION("the variant fields change nothing") {
        Buf f = good;
        f[kIp + 1] = 0x03; // ECN CE, as a switch marks it
        f[kIp + 8] = 1;    // TTL after some hops
        fix_ipv4_checksum(f);
        f[kUdp + 6] = 0x12;  // a UDP checksum
        f[kBth + 4] |= 0xc0; // FECN, BECN
        RocePacket p;
        REQUIRE(parse_roce_frame(f, p) == RoceDrop::none);
        CHECK(p.traffic_class == 3);
        CHECK(p.hop_limit == 1);
        CHECK(p.headers.bth.fecn);
        CHECK(p.headers.bth.becn);
    }
}

TEST_CASE("IPv4 options are accepted and covered by the ICRC", "[roce]") {
    RoceHeaders h = full_headers(static_cast<std::uint8_t>(RoceOpcode::rc_send_only));
    const Buf plain = build(path_v4(), h, Buf{1, 2, 3, 4});
    Buf f(plain.begin(), plain.begin() + kIp + 20);
    f.insert(f.end(), {0x01, 0x01, 0x01, 0x00}); // NOP, NOP, NOP, end of options
    f.insert(f.end(), plain.begin() + kIp + 20, plain.end());
    f[kIp] = 0x46;
    const std::size_t total = ((plain[kIp + 2] << 8) | plain[kIp + 3]) + 4;
    f[kIp + 3] = static_cast<std::uint8_t>(total);
    f[kIp + 10] = f[kIp + 11] = 0;
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i < 24; i += 2)
        sum += static_cast<std::uint32_t>((f[kIp + i] << 8) | f[kIp + i + 1]);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    f[kIp + 10] = static_cast<std::uint8_t>(~sum >> 8);
    f[kIp + 11] = static_cast<std::uint8_t>(~sum);
    CHECK(parse(f) == RoceDrop::icrc); // the options changed what the ICRC covers
    store_icrc(f.data() + kIp + total - 4, roce_icrc({f.data() + kIp, total - 4}, 24));
    RocePacket p;
    REQUIRE(parse_roce_frame(f, p) == RoceDrop::none);
    CHECK(p.ip_header.size() == 24);
    CHECK(Buf(p.payload.begin(), p.payload.end()) == Buf{1, 2, 3, 4});
    CHECK(p.headers.bth.psn == h.bth.psn);
}

TEST_CASE("the GRH of a UD receive", "[roce]") {
    RocePacket p;
    std::uint8_t grh[40];
    REQUIRE(parse_roce_frame(kUdIpv6, p) == RoceDrop::none);
    write_ud_grh(p, grh);
    CHECK(std::memcmp(grh, kUdIpv6.data() + 14, 40) == 0);
    CHECK(grh[0] >> 4 == 6);

    RoceHeaders h = full_headers(static_cast<std::uint8_t>(RoceOpcode::ud_send_only));
    const Buf v4frame = build(path_v4(), h, Buf{9});
    REQUIRE(parse_roce_frame(v4frame, p) == RoceDrop::none);
    std::memset(grh, 0xee, sizeof grh);
    write_ud_grh(p, grh);
    CHECK(std::all_of(grh, grh + 20, [](std::uint8_t b) { return b == 0; }));
    CHECK(std::memcmp(grh + 20, v4frame.data() + 14, 20) == 0);
    CHECK(grh[20] == 0x45);
}

TEST_CASE("every prefix of a frame is refused; damaged frames never pass unnoticed", "[roce]") {
    const RoceHeaders h = full_headers(static_cast<std::uint8_t>(RoceOpcode::rc_write_only_imm));
    for (const bool ipv6 : {false, true}) {
        const Buf frame = build(ipv6 ? path_v6() : path_v4(), h, Buf(37, 0x42));
        for (std::size_t len = 0; len < frame.size(); ++len) {
            INFO("ipv6 " << ipv6 << " prefix " << len);
            CHECK(parse(Buf(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(len))) ==
                  RoceDrop::truncated);
        }
    }

    // Seeded single-bit flips anywhere in the IP datagram: each is refused
    // (the ICRC or an earlier check catches it) or lies in a field the ICRC
    // leaves out, and a frame that passes keeps its payload inside the frame.
    const Buf frame = build(path_v4(), h, Buf(37, 0x42));
    std::uint32_t state = 12345;
    std::size_t passed = 0;
    for (int i = 0; i < 20000; ++i) {
        state = state * 1664525u + 1013904223u;
        const std::size_t bit = (state >> 8) % ((frame.size() - kIp) * 8);
        Buf f = frame;
        f[kIp + bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        RocePacket p;
        const RoceDrop drop = parse_roce_frame(f, p);
        if (drop != RoceDrop::none) continue;
        ++passed;
        const std::size_t off = kIp + bit / 8;
        INFO("bit " << bit << " at byte " << off);
        // Outside the ICRC and the IP header checksum: the UDP checksum and BTH byte 4
        // only (TOS and TTL are outside the ICRC, but the header checksum catches them).
        CHECK((off == kUdp + 6 || off == kUdp + 7 || off == kBth + 4));
        CHECK(p.payload.data() >= f.data());
        CHECK(p.payload.data() + p.payload.size() <= f.data() + f.size());
    }
    CHECK(passed > 0); // the UDP checksum and FECN/BECN flips
}

TEST_CASE("drop reasons have distinct counter names", "[roce]") {
    std::set<std::string> names;
    for (std::size_t d = 0; d < kRoceDropCount; ++d)
        names.insert(roce_drop_name(static_cast<RoceDrop>(d)));
    CHECK(names.size() == kRoceDropCount);
    CHECK(names.count("?") == 0);
    CHECK(std::string(roce_drop_name(RoceDrop::icrc)) == "icrc");
}

TEST_CASE("the UDP source port from the flow label, as Linux and mlx5 derive it", "[roce]") {
    CHECK(roce_udp_src_port(0) == 0xc000);
    CHECK(roce_udp_src_port(0xfffff) == 0xffc0); // 0x3fff ^ 0x3f
    CHECK(roce_udp_src_port(0x04001) == 0xc000); // bit 14 folds onto bit 0
    CHECK(roce_udp_src_port(0x12345) == (0xc000 | (0x2345 ^ 0x4)));
    CHECK(roce_flow_label(1, 1) == 1);
    CHECK(roce_flow_label(0, 0x1234) == 0);
    // 0x123456 * 0xabcdef = 0xc379a59ba4a; low 20 bits 0x9ba4a ^ bits 20..39 0x379a5
    // ^ bits 40.. 0xc = 0xac3e3.
    CHECK(roce_flow_label(0x123456, 0xabcdef) == 0xac3e3);
    CHECK(roce_flow_label(0xffffff, 0xffffff) == 0xfff1e);
    CHECK(roce_flow_label(0x123456, 0xabcdef) == roce_flow_label(0xabcdef, 0x123456));
    for (std::uint32_t fl = 0; fl < 0x100000; fl += 0x1111)
        CHECK(roce_udp_src_port(fl) >= 0xc000);
}
