// CM MADs: every message round trip with every field set, each field alone
// (exactly its width in bits, no neighbour touched), parse refusals, random
// buffers (net/README.md, "CM MADs"). Golden bytes at the kernel's offsets:
// tests/net/test_cm_mad_golden.cpp.
#include <catch2/catch.hpp>

#include <array>
#include <bit>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "net/cm_mad.hpp"

using namespace rdmasim::net;

namespace {

using Mad = std::array<std::uint8_t, kMadSize>;
using Data = std::array<std::uint8_t, kCmDataSize>;

template <std::size_t N> std::array<std::uint8_t, N> pattern(std::uint8_t seed) {
    std::array<std::uint8_t, N> a{};
    for (std::size_t i = 0; i < N; ++i)
        a[i] = static_cast<std::uint8_t>(seed + i * 7 + 1);
    return a;
}

Gid gid(std::uint8_t seed) {
    return pattern<16>(seed);
}

// Distinct non-zero values, each with its field's top bit set.
CmPath full_path(std::uint8_t seed) {
    CmPath p;
    p.local_lid = static_cast<std::uint16_t>(0x8100 + seed);
    p.remote_lid = static_cast<std::uint16_t>(0x8200 + seed);
    p.local_gid = gid(seed);
    p.remote_gid = gid(static_cast<std::uint8_t>(seed + 100));
    p.flow_label = 0xfedc0u + seed;
    p.packet_rate = 0x3d;
    p.traffic_class = static_cast<std::uint8_t>(0xa0 + seed);
    p.hop_limit = static_cast<std::uint8_t>(0xb0 + seed);
    p.sl = 0xe;
    p.subnet_local = true;
    p.local_ack_timeout = 0x1d;
    return p;
}

CmReq full_req() {
    CmReq m;
    m.local_comm_id = 0x81020304;
    m.service_id = 0x8877665544332211;
    m.local_ca_guid = 0xf1e2d3c4b5a69788;
    m.local_qkey = 0x91929394;
    m.local_qpn = 0xa1a2a3;
    m.responder_resources = 0xc5;
    m.local_eecn = 0xb1b2b3;
    m.initiator_depth = 0xc6;
    m.remote_eecn = 0xd1d2d3;
    m.remote_cm_response_timeout = 0x1e;
    m.transport = CmTransport::extended;
    m.end_to_end_flow_control = true;
    m.starting_psn = 0xe1e2e3;
    m.local_cm_response_timeout = 0x1b;
    m.retry_count = 6;
    m.pkey = 0xf00f;
    m.path_mtu = static_cast<PathMtu>(0xd);
    m.rdc_exists = true;
    m.rnr_retry_count = 5;
    m.max_cm_retries = 0xc;
    m.srq = true;
    m.extended_transport = 7;
    m.primary = full_path(1);
    m.alternate = full_path(2);
    m.sap_supported = true;
    m.private_data = pattern<kCmReqPrivateDataSize>(3);
    return m;
}

CmMra full_mra() {
    return {0x81112131, 0x91a1b1c1, static_cast<CmMraedMsg>(3), 0x1f,
            pattern<kCmMraPrivateDataSize>(4)};
}

CmRej full_rej() {
    return {0x82122232,
            0x92a2b2c2,
            static_cast<CmRejectedMsg>(3),
            0x7f,
            static_cast<CmRejReason>(0x8123),
            pattern<kCmRejAriSize>(5),
            pattern<kCmRejPrivateDataSize>(6)};
}

CmRep full_rep() {
    CmRep m;
    m.local_comm_id = 0x83132333;
    m.remote_comm_id = 0x93a3b3c3;
    m.local_qkey = 0xa3b3c3d3;
    m.local_qpn = 0xb3c3d3;
    m.local_eecn = 0xc3d3e3;
    m.starting_psn = 0xd3e3f3;
    m.responder_resources = 0xe3;
    m.initiator_depth = 0xf3;
    m.target_ack_delay = 0x1c;
    m.failover_accepted = 3;
    m.end_to_end_flow_control = true;
    m.rnr_retry_count = 6;
    m.srq = true;
    m.local_ca_guid = 0x8a9bacbdcedfe0f1;
    m.private_data = pattern<kCmRepPrivateDataSize>(7);
    return m;
}

CmRtu full_rtu() {
    return {0x84142434, 0x94a4b4c4, pattern<kCmRtuPrivateDataSize>(8)};
}
CmDreq full_dreq() {
    return {0x85152535, 0x95a5b5c5, 0xa5b5c5, pattern<kCmDreqPrivateDataSize>(9)};
}
CmDrep full_drep() {
    return {0x86162636, 0x96a6b6c6, pattern<kCmDrepPrivateDataSize>(10)};
}
CmSidrReq full_sidr_req() {
    return {0x87172737, 0x8fff, 0x8070605040302010, pattern<kCmSidrReqPrivateDataSize>(11)};
}
CmSidrRep full_sidr_rep() {
    return {0x88182838,
            static_cast<SidrStatus>(0xf5),
            0xc8,
            0xb8c8d8,
            0x8101010101010102,
            0xd8e8f808,
            pattern<kCmSidrRepInfoSize>(12),
            pattern<kCmSidrRepPrivateDataSize>(13)};
}

template <class M> void check_round_trip(const M& m, std::uint64_t tid) {
    Mad mad{};
    mad.fill(0xee); // every byte must be written
    encode_cm_mad(cm_mad_header(CmAttr::class_port_info, tid), m, mad);
    ParsedCmMad parsed;
    REQUIRE(parse_cm_mad(mad, parsed) == CmMadError::none);
    CHECK(parsed.attr == M::kAttr);
    CHECK(parsed.header == cm_mad_header(M::kAttr, tid));
    REQUIRE(std::holds_alternative<M>(parsed.message));
    CHECK(std::get<M>(parsed.message) == m);
    // Nothing of the 0xee fill survives in a reserved byte: storing twice
    // over different garbage gives the same bytes.
    Mad again{};
    encode_cm_mad(cm_mad_header(M::kAttr, tid), m, again);
    CHECK(again == mad);
}

} // namespace

TEST_CASE("CM MAD sizes add up to 256 bytes", "[cm]") {
    STATIC_REQUIRE(kMadHeaderSize + kCmDataSize == kMadSize);
    STATIC_REQUIRE(140 + kCmReqPrivateDataSize == kCmDataSize);
    STATIC_REQUIRE(10 + kCmMraPrivateDataSize == kCmDataSize);
    STATIC_REQUIRE(12 + kCmRejAriSize + kCmRejPrivateDataSize == kCmDataSize);
    STATIC_REQUIRE(36 + kCmRepPrivateDataSize == kCmDataSize);
    STATIC_REQUIRE(8 + kCmRtuPrivateDataSize == kCmDataSize);
    STATIC_REQUIRE(12 + kCmDreqPrivateDataSize == kCmDataSize);
    STATIC_REQUIRE(8 + kCmDrepPrivateDataSize == kCmDataSize);
    STATIC_REQUIRE(16 + kCmSidrReqPrivateDataSize == kCmDataSize);
    STATIC_REQUIRE(24 + kCmSidrRepInfoSize + kCmSidrRepPrivateDataSize == kCmDataSize);
    STATIC_REQUIRE(kGsiQpn == 1);
    STATIC_REQUIRE(kGsiQkey == 0x80010000u);
}

TEST_CASE("every CM message round trips with every field set", "[cm]") {
    check_round_trip(full_req(), 0x0102030405060708);
    check_round_trip(full_mra(), 0x1112131415161718);
    check_round_trip(full_rej(), 0x2122232425262728);
    check_round_trip(full_rep(), 0x3132333435363738);
    check_round_trip(full_rtu(), 0x4142434445464748);
    check_round_trip(full_dreq(), 0x5152535455565758);
    check_round_trip(full_drep(), 0x6162636465666768);
    check_round_trip(full_sidr_req(), 0x7172737475767778);
    check_round_trip(full_sidr_rep(), 0x8182838485868788);
}

TEST_CASE("the MAD header's fields in network order", "[cm]") {
    MadHeader h;
    h.base_version = 0x81;
    h.mgmt_class = 0x82;
    h.class_version = 0x83;
    h.method = 0x84;
    h.status = 0x8586;
    h.class_specific = 0x8788;
    h.transaction_id = 0x898a8b8c8d8e8f90;
    h.attr_id = 0x9192;
    h.attr_modifier = 0x95969798;
    std::array<std::uint8_t, 24> wire{};
    wire.fill(0xff);
    h.store(wire.data());
    const std::array<std::uint8_t, 24> expected = {0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88,
                                                   0x89, 0x8a, 0x8b, 0x8c, 0x8d, 0x8e, 0x8f, 0x90,
                                                   0x91, 0x92, 0x00, 0x00, 0x95, 0x96, 0x97, 0x98};
    CHECK(wire == expected);
    CHECK(MadHeader::load(wire.data()) == h);
}

namespace {

template <class T> void set_all_ones(T& v) {
    if constexpr (std::is_same_v<T, bool>) {
        v = true;
    } else if constexpr (std::is_enum_v<T>) {
        using U = std::underlying_type_t<T>;
        v = static_cast<T>(static_cast<U>(~U{0}));
    } else if constexpr (std::is_integral_v<T>) {
        v = static_cast<T>(~T{0});
    } else {
        v.fill(0xff);
    }
}

template <class M> struct Field {
    const char* name;
    unsigned bits; // the field's width on the wire
    void (*set)(M&);
};
#define CM_FIELD(M, f, bits)                                                                       \
    Field<M> {                                                                                     \
#f, bits, [](M & m) { set_all_ones(m.f); }                                                 \
    }

// Each field alone, every bit of its C++ type set: the wire holds exactly
// its width in bits (cut, spilling into nothing), no two fields share a bit,
// and what is left over is the IBA table's reserved bits.
template <class M>
void check_fields_alone(const std::vector<Field<M>>& fields, unsigned reserved_bits) {
    const Data zeros{};
    const M zero = M::load(zeros.data());
    Data covered{};
    for (const auto& f : fields) {
        INFO(cm_attr_name(M::kAttr) << "." << f.name);
        M m = zero;
        f.set(m);
        Data d{};
        m.store(d.data());
        unsigned n = 0;
        for (std::size_t i = 0; i < d.size(); ++i) {
            n += static_cast<unsigned>(std::popcount(d[i]));
            CHECK((covered[i] & d[i]) == 0);
            covered[i] |= d[i];
        }
        CHECK(n == f.bits);
        const M back = M::load(d.data());
        CHECK(!(back == zero));
        Data again{};
        back.store(again.data());
        CHECK(again == d);
    }
    unsigned all = 0;
    for (const std::uint8_t b : covered)
        all += static_cast<unsigned>(std::popcount(b));
    INFO(cm_attr_name(M::kAttr));
    CHECK(all + reserved_bits == kCmDataSize * 8);
}

#define PATH_FIELDS(p)                                                                             \
    CM_FIELD(CmReq, p.local_lid, 16), CM_FIELD(CmReq, p.remote_lid, 16),                           \
        CM_FIELD(CmReq, p.local_gid, 128), CM_FIELD(CmReq, p.remote_gid, 128),                     \
        CM_FIELD(CmReq, p.flow_label, 20), CM_FIELD(CmReq, p.packet_rate, 6),                      \
        CM_FIELD(CmReq, p.traffic_class, 8), CM_FIELD(CmReq, p.hop_limit, 8),                      \
        CM_FIELD(CmReq, p.sl, 4), CM_FIELD(CmReq, p.subnet_local, 1),                              \
        CM_FIELD(CmReq, p.local_ack_timeout, 5)

} // namespace

TEST_CASE("each CM field alone fills exactly its bits", "[cm]") {
    // Reserved: bytes 4-7 and 24-27; per path 6 bits after the flow label,
    // 3 after subnet local, 3 after the ACK timeout (2 beside SAP).
    check_fields_alone<CmReq>({CM_FIELD(CmReq, local_comm_id, 32),
                               CM_FIELD(CmReq, service_id, 64),
                               CM_FIELD(CmReq, local_ca_guid, 64),
                               CM_FIELD(CmReq, local_qkey, 32),
                               CM_FIELD(CmReq, local_qpn, 24),
                               CM_FIELD(CmReq, responder_resources, 8),
                               CM_FIELD(CmReq, local_eecn, 24),
                               CM_FIELD(CmReq, initiator_depth, 8),
                               CM_FIELD(CmReq, remote_eecn, 24),
                               CM_FIELD(CmReq, remote_cm_response_timeout, 5),
                               CM_FIELD(CmReq, transport, 2),
                               CM_FIELD(CmReq, end_to_end_flow_control, 1),
                               CM_FIELD(CmReq, starting_psn, 24),
                               CM_FIELD(CmReq, local_cm_response_timeout, 5),
                               CM_FIELD(CmReq, retry_count, 3),
                               CM_FIELD(CmReq, pkey, 16),
                               CM_FIELD(CmReq, path_mtu, 4),
                               CM_FIELD(CmReq, rdc_exists, 1),
                               CM_FIELD(CmReq, rnr_retry_count, 3),
                               CM_FIELD(CmReq, max_cm_retries, 4),
                               CM_FIELD(CmReq, srq, 1),
                               CM_FIELD(CmReq, extended_transport, 3),
                               PATH_FIELDS(primary),
                               PATH_FIELDS(alternate),
                               CM_FIELD(CmReq, sap_supported, 1),
                               CM_FIELD(CmReq, private_data, 92 * 8)},
                              64 + 12 + 11);
    check_fields_alone<CmMra>(
        {CM_FIELD(CmMra, local_comm_id, 32), CM_FIELD(CmMra, remote_comm_id, 32),
         CM_FIELD(CmMra, message_mraed, 2), CM_FIELD(CmMra, service_timeout, 5),
         CM_FIELD(CmMra, private_data, 222 * 8)},
        6 + 3);
    check_fields_alone<CmRej>(
        {CM_FIELD(CmRej, local_comm_id, 32), CM_FIELD(CmRej, remote_comm_id, 32),
         CM_FIELD(CmRej, message_rejected, 2), CM_FIELD(CmRej, reject_info_length, 7),
         CM_FIELD(CmRej, reason, 16), CM_FIELD(CmRej, ari, 72 * 8),
         CM_FIELD(CmRej, private_data, 148 * 8)},
        6 + 1);
    check_fields_alone<CmRep>(
        {CM_FIELD(CmRep, local_comm_id, 32), CM_FIELD(CmRep, remote_comm_id, 32),
         CM_FIELD(CmRep, local_qkey, 32), CM_FIELD(CmRep, local_qpn, 24),
         CM_FIELD(CmRep, local_eecn, 24), CM_FIELD(CmRep, starting_psn, 24),
         CM_FIELD(CmRep, responder_resources, 8), CM_FIELD(CmRep, initiator_depth, 8),
         CM_FIELD(CmRep, target_ack_delay, 5), CM_FIELD(CmRep, failover_accepted, 2),
         CM_FIELD(CmRep, end_to_end_flow_control, 1), CM_FIELD(CmRep, rnr_retry_count, 3),
         CM_FIELD(CmRep, srq, 1), CM_FIELD(CmRep, local_ca_guid, 64),
         CM_FIELD(CmRep, private_data, 196 * 8)},
        3 * 8 + 4);
    check_fields_alone<CmRtu>({CM_FIELD(CmRtu, local_comm_id, 32),
                               CM_FIELD(CmRtu, remote_comm_id, 32),
                               CM_FIELD(CmRtu, private_data, 224 * 8)},
                              0);
    check_fields_alone<CmDreq>(
        {CM_FIELD(CmDreq, local_comm_id, 32), CM_FIELD(CmDreq, remote_comm_id, 32),
         CM_FIELD(CmDreq, remote_qpn_eecn, 24), CM_FIELD(CmDreq, private_data, 220 * 8)},
        8);
    check_fields_alone<CmDrep>({CM_FIELD(CmDrep, local_comm_id, 32),
                                CM_FIELD(CmDrep, remote_comm_id, 32),
                                CM_FIELD(CmDrep, private_data, 224 * 8)},
                               0);
    check_fields_alone<CmSidrReq>(
        {CM_FIELD(CmSidrReq, request_id, 32), CM_FIELD(CmSidrReq, pkey, 16),
         CM_FIELD(CmSidrReq, service_id, 64), CM_FIELD(CmSidrReq, private_data, 216 * 8)},
        16);
    check_fields_alone<CmSidrRep>(
        {CM_FIELD(CmSidrRep, request_id, 32), CM_FIELD(CmSidrRep, status, 8),
         CM_FIELD(CmSidrRep, additional_info_length, 8), CM_FIELD(CmSidrRep, qpn, 24),
         CM_FIELD(CmSidrRep, service_id, 64), CM_FIELD(CmSidrRep, qkey, 32),
         CM_FIELD(CmSidrRep, class_port_info, 72 * 8), CM_FIELD(CmSidrRep, private_data, 136 * 8)},
        16 + 8);
}

TEST_CASE("parse refuses what is not a CM message, each for its reason", "[cm]") {
    Mad good{};
    encode_cm_mad(cm_mad_header(CmAttr::rtu, 1), full_rtu(), good);
    ParsedCmMad out;
    REQUIRE(parse_cm_mad(good, out) == CmMadError::none);

    // Longer is fine (the bytes after the MAD are not read); shorter is not.
    std::vector<std::uint8_t> longer(good.begin(), good.end());
    longer.resize(300, 0xab);
    CHECK(parse_cm_mad(longer, out) == CmMadError::none);
    for (const std::size_t len : {0u, 1u, 24u, 255u}) {
        const std::vector<std::uint8_t> cut(good.begin(), good.begin() + len);
        CHECK(parse_cm_mad(cut, out) == CmMadError::too_short);
    }

    const auto with = [&](std::size_t offset, std::uint8_t value) {
        Mad m = good;
        m[offset] = value;
        return parse_cm_mad(m, out);
    };
    CHECK(with(0, 2) == CmMadError::bad_base_version);
    CHECK(with(0, 0x80) == CmMadError::bad_base_version); // OPA's
    CHECK(with(1, 0x04) == CmMadError::not_cm_class);     // performance management
    CHECK(with(1, 0x03) == CmMadError::not_cm_class);     // subnet administration
    CHECK(with(2, 1) == CmMadError::bad_class_version);
    CHECK(with(3, 0x01) == CmMadError::not_send);           // Get
    CHECK(with(3, 0x81) == CmMadError::not_send);           // GetResp
    CHECK(with(3, 0x83) == CmMadError::not_send);           // Send with the response bit
    CHECK(with(17, 0x01) == CmMadError::unknown_attribute); // ClassPortInfo
    CHECK(with(17, 0x19) == CmMadError::unknown_attribute); // LAP
    CHECK(with(17, 0x1a) == CmMadError::unknown_attribute); // APR
    CHECK(with(16, 0x80) == CmMadError::unknown_attribute); // 0x8014
    // The first failing check names it: a short buffer of garbage is too_short.
    CHECK(parse_cm_mad(std::span(good).first(10), out) == CmMadError::too_short);

    std::set<std::string> names;
    for (std::size_t i = 0; i < kCmMadErrorCount; ++i)
        names.insert(cm_mad_error_name(static_cast<CmMadError>(i)));
    CHECK(names.size() == kCmMadErrorCount);
    CHECK(names.count("unknown") == 0);
    CHECK(std::string(cm_mad_error_name(CmMadError::not_send)) == "not_send");
}

TEST_CASE("random buffers never crash the parser, and what it reads re-encodes", "[cm]") {
    std::mt19937_64 rng(2024);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_int_distribution<std::size_t> length(0, 300);
    std::size_t parsed = 0;
    for (int i = 0; i < 20000; ++i) {
        // An exact-size heap buffer: AddressSanitizer catches a read past it.
        // Every other one of random length, sometimes under a valid header.
        std::vector<std::uint8_t> buf(i % 4 < 2 ? length(rng) : kMadSize);
        for (auto& b : buf)
            b = static_cast<std::uint8_t>(byte(rng));
        if (i % 2 == 1 && buf.size() >= 24) { // a valid header over random content
            buf[0] = 1;
            buf[1] = 0x07;
            buf[2] = 2;
            buf[3] = 3;
            buf[16] = 0;
            buf[17] = static_cast<std::uint8_t>(0x10 + byte(rng) % 10); // LAP refused
        }
        ParsedCmMad out;
        if (parse_cm_mad(buf, out) != CmMadError::none) continue;
        ++parsed;
        Mad mad{};
        std::visit([&](const auto& m) { encode_cm_mad(out.header, m, mad); }, out.message);
        ParsedCmMad again;
        REQUIRE(parse_cm_mad(mad, again) == CmMadError::none);
        CHECK(again.attr == out.attr);
        CHECK(again.header == out.header);
        CHECK(again.message == out.message);
    }
    CHECK(parsed > 4000);
}

TEST_CASE("attribute and REJ reason names, and the IBA's reason values", "[cm]") {
    CHECK(std::string(cm_attr_name(CmAttr::req)) == "REQ");
    CHECK(std::string(cm_attr_name(CmAttr::sidr_rep)) == "SIDR_REP");
    CHECK(std::string(cm_attr_name(static_cast<CmAttr>(0x19))) == "unknown");
    CHECK(static_cast<int>(CmRejReason::no_qp) == 1);
    CHECK(static_cast<int>(CmRejReason::timeout) == 4);
    CHECK(static_cast<int>(CmRejReason::invalid_service_id) == 8);
    CHECK(static_cast<int>(CmRejReason::stale_conn) == 10);
    CHECK(static_cast<int>(CmRejReason::consumer_reject) == 28);
    CHECK(static_cast<int>(CmRejReason::vendor_option_not_supported) == 35);
    CHECK(std::string(cm_rej_reason_name(CmRejReason::consumer_reject)) == "consumer_reject");
    CHECK(std::string(cm_rej_reason_name(CmRejReason::invalid_alt_flow_label)) ==
          "invalid_alt_flow_label");
    CHECK(std::string(cm_rej_reason_name(CmRejReason::vendor_option_not_supported)) ==
          "vendor_option_not_supported");
    CHECK(std::string(cm_rej_reason_name(static_cast<CmRejReason>(34))) == "unknown");
    CHECK(std::string(cm_rej_reason_name(static_cast<CmRejReason>(0))) == "unknown");
    CHECK(std::string(cm_rej_reason_name(static_cast<CmRejReason>(0xffff))) == "unknown");
    CHECK(static_cast<int>(CmMraedMsg::lap) == 2);
    CHECK(static_cast<int>(SidrStatus::redirect) == 4);
}
