// CM MADs on golden bytes: each expected byte placed by hand at the MAD
// offset the IBA tables (and the kernel's include/rdma/ibta_vol1_c12.h, CM
// data offset + 24) give, never by the encoder; rdma_cm's service IDs and
// the header at the start of a REQ's private data (net/README.md, "CM MADs").
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <initializer_list>

#include "net/cm_mad.hpp"
#include "net/cma_header.hpp"

using namespace rdmasim::net;

namespace {

using Mad = std::array<std::uint8_t, kMadSize>;

void put(Mad& m, std::size_t offset, std::initializer_list<std::uint8_t> bytes) {
    for (const std::uint8_t b : bytes)
        m[offset++] = b;
}

// The CM MAD header: 1, 0x07, 2, Send; status 0; TID; attribute; modifier 0.
Mad header_bytes(std::uint16_t attr) {
    Mad m{};
    put(m, 0, {0x01, 0x07, 0x02, 0x03, 0, 0, 0, 0});
    put(m, 8, {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88});
    put(m, 16, {static_cast<std::uint8_t>(attr >> 8), static_cast<std::uint8_t>(attr)});
    return m;
}
constexpr std::uint64_t kTid = 0x1122334455667788;

Gid mapped(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
    return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}

// A REQ as Linux's rdma_cm sends one over RoCE v2 (cm_format_req): RC,
// TCP port 7471, 192.0.2.1 port 50000 to 192.0.2.2, LIDs permissive.
CmReq roce_req() {
    CmReq m;
    m.local_comm_id = 0x1a2b3c4d;
    m.service_id = cma_service_id(RdmaPortSpace::tcp, 7471);
    m.local_ca_guid = 0x0002c90300a1b2c3;
    m.local_qpn = 0x000123;
    m.responder_resources = 16;
    m.initiator_depth = 16;
    m.remote_cm_response_timeout = 20;
    m.transport = CmTransport::rc;
    m.end_to_end_flow_control = true;
    m.starting_psn = 0xabcdef;
    m.local_cm_response_timeout = 20;
    m.retry_count = 7;
    m.pkey = 0xffff;
    m.path_mtu = PathMtu::mtu1024;
    m.rnr_retry_count = 7;
    m.max_cm_retries = 15;
    m.primary.local_lid = 0xffff;
    m.primary.remote_lid = 0xffff;
    m.primary.local_gid = mapped(192, 0, 2, 1);
    m.primary.remote_gid = mapped(192, 0, 2, 2);
    m.primary.flow_label = 0x12345;
    m.primary.packet_rate = 7;
    m.primary.traffic_class = 0x6a;
    m.primary.hop_limit = 64;
    m.primary.sl = 3;
    m.primary.local_ack_timeout = 18;
    const std::uint8_t src[4] = {192, 0, 2, 1}, dst[4] = {192, 0, 2, 2};
    CmaIpHeader::ipv4(src, dst, 50000).store(m.private_data.data());
    m.private_data[36] = 'h';
    m.private_data[37] = 'i';
    return m;
}

} // namespace

TEST_CASE("a RoCE REQ at the IBA's offsets", "[cm]") {
    Mad w = header_bytes(0x0010);
    put(w, 24, {0x1a, 0x2b, 0x3c, 0x4d});                         // local comm ID
    put(w, 32, {0x00, 0x00, 0x00, 0x00, 0x01, 0x06, 0x1d, 0x2f}); // service ID
    put(w, 40, {0x00, 0x02, 0xc9, 0x03, 0x00, 0xa1, 0xb2, 0xc3}); // local CA GUID
    put(w, 52, {0, 0, 0, 0});                                     // local Q_Key (RC: 0)
    put(w, 56, {0x00, 0x01, 0x23, 16});                           // local QPN, responder resources
    put(w, 60, {0x00, 0x00, 0x00, 16});                           // local EECN, initiator depth
    // remote EECN; 20 << 3 | RC << 1 | flow control
    put(w, 64, {0x00, 0x00, 0x00, 0xa1});
    put(w, 68, {0xab, 0xcd, 0xef, 0xa7}); // starting PSN; 20 << 3 | retry 7
    put(w, 72, {0xff, 0xff});             // P_Key
    put(w, 74, {0x37});                   // MTU 1024 (3) << 4 | RNR retry 7
    put(w, 75, {0xf0});                   // max CM retries 15 << 4
    put(w, 76, {0xff, 0xff, 0xff, 0xff}); // primary LIDs
    put(w, 80, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1});
    put(w, 96, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 2});
    put(w, 112, {0x12, 0x34, 0x50, 0x07}); // flow label 20 bits, packet rate 6
    put(w, 116, {0x6a, 64, 0x30, 0x90});   // TC, hop limit, SL 3 << 4, 18 << 3
    // Private data at 164: the rdma_cm header, then the consumer's bytes.
    put(w, 164, {0x00, 0x40, 0xc3, 0x50});
    put(w, 168 + 12, {192, 0, 2, 1});
    put(w, 184 + 12, {192, 0, 2, 2});
    put(w, 200, {'h', 'i'});

    Mad out{};
    out.fill(0x5a);
    encode_cm_mad(cm_mad_header(CmAttr::req, kTid), roce_req(), out);
    CHECK(out == w);

    ParsedCmMad p;
    REQUIRE(parse_cm_mad(w, p) == CmMadError::none);
    REQUIRE(p.attr == CmAttr::req);
    const auto& req = std::get<CmReq>(p.message);
    CHECK(req == roce_req());
    CHECK(req.local_qpn == 0x123);
    CHECK(req.starting_psn == 0xabcdef);
    CHECK(cma_port_space(req.service_id) == RdmaPortSpace::tcp);
    CHECK(cma_port(req.service_id) == 7471);
    const CmaIpHeader cma = CmaIpHeader::load(req.private_data.data());
    CHECK(check_cma_ip_header(cma) == CmaHeaderError::none);
    CHECK(cma.ip_version == 4);
    CHECK(cma.port == 50000);
}

TEST_CASE("REP, REJ, DREQ and SIDR_REP at the IBA's offsets", "[cm]") {
    CmRep rep;
    rep.local_comm_id = 0x01020304;
    rep.remote_comm_id = 0x1a2b3c4d;
    rep.local_qpn = 0x000456;
    rep.starting_psn = 0x123456;
    rep.responder_resources = 4;
    rep.initiator_depth = 8;
    rep.target_ack_delay = 15;
    rep.failover_accepted = 2;
    rep.end_to_end_flow_control = true;
    rep.rnr_retry_count = 7;
    rep.srq = true;
    rep.local_ca_guid = 0x0002c90300d4e5f6;
    Mad w = header_bytes(0x0013);
    put(w, 24, {1, 2, 3, 4, 0x1a, 0x2b, 0x3c, 0x4d, 0, 0, 0, 0}); // comm IDs, Q_Key
    put(w, 36, {0x00, 0x04, 0x56, 0});                            // local QPN
    put(w, 44, {0x12, 0x34, 0x56, 0});                            // starting PSN
    put(w, 48, {4, 8, 0x7d, 0xf0}); // 15 << 3 | 2 << 1 | 1; 7 << 5 | SRQ << 4
    put(w, 52, {0x00, 0x02, 0xc9, 0x03, 0x00, 0xd4, 0xe5, 0xf6});
    Mad out{};
    encode_cm_mad(cm_mad_header(CmAttr::rep, kTid), rep, out);
    CHECK(out == w);

    CmRej rej;
    rej.local_comm_id = 0x01020304;
    rej.remote_comm_id = 0x1a2b3c4d;
    rej.message_rejected = CmRejectedMsg::rep;
    rej.reject_info_length = 3;
    rej.reason = CmRejReason::invalid_service_id;
    rej.ari = {0xa1, 0xa2, 0xa3};
    rej.private_data[0] = 0xee;
    w = header_bytes(0x0012);
    put(w, 24, {1, 2, 3, 4, 0x1a, 0x2b, 0x3c, 0x4d});
    put(w, 32, {0x40, 0x06, 0x00, 0x08, 0xa1, 0xa2, 0xa3}); // REP << 6; 3 << 1; reason 8; ARI
    put(w, 108, {0xee});
    encode_cm_mad(cm_mad_header(CmAttr::rej, kTid), rej, out);
    CHECK(out == w);

    CmDreq dreq;
    dreq.local_comm_id = 0x01020304;
    dreq.remote_comm_id = 0x1a2b3c4d;
    dreq.remote_qpn_eecn = 0xabcdef;
    w = header_bytes(0x0015);
    put(w, 24, {1, 2, 3, 4, 0x1a, 0x2b, 0x3c, 0x4d, 0xab, 0xcd, 0xef, 0});
    encode_cm_mad(cm_mad_header(CmAttr::dreq, kTid), dreq, out);
    CHECK(out == w);

    CmSidrRep sidr;
    sidr.request_id = 0x0a0b0c0d;
    sidr.status = SidrStatus::success;
    sidr.qpn = 0x00789a;
    sidr.service_id = cma_service_id(RdmaPortSpace::udp, 7174);
    sidr.qkey = 0x01234567; // RDMA_UDP_QKEY
    w = header_bytes(0x0018);
    put(w, 24, {0x0a, 0x0b, 0x0c, 0x0d, 0, 0, 0, 0, 0x00, 0x78, 0x9a, 0});
    put(w, 36, {0, 0, 0, 0, 0x01, 0x11, 0x1c, 0x06, 0x01, 0x23, 0x45, 0x67});
    encode_cm_mad(cm_mad_header(CmAttr::sidr_rep, kTid), sidr, out);
    CHECK(out == w);
}

TEST_CASE("MRA, RTU, DREP and SIDR_REQ at the IBA's offsets", "[cm]") {
    CmMra mra{0x01020304, 0x1a2b3c4d, CmMraedMsg::lap, 24, {}};
    mra.private_data[0] = 0xd1;
    Mad w = header_bytes(0x0011);
    put(w, 24, {1, 2, 3, 4, 0x1a, 0x2b, 0x3c, 0x4d, 0x80, 0xc0, 0xd1}); // LAP << 6; 24 << 3
    Mad out{};
    encode_cm_mad(cm_mad_header(CmAttr::mra, kTid), mra, out);
    CHECK(out == w);

    CmRtu rtu{0x01020304, 0x1a2b3c4d, {}};
    rtu.private_data[223] = 0xd2;
    w = header_bytes(0x0014);
    put(w, 24, {1, 2, 3, 4, 0x1a, 0x2b, 0x3c, 0x4d, 0});
    w[255] = 0xd2;
    encode_cm_mad(cm_mad_header(CmAttr::rtu, kTid), rtu, out);
    CHECK(out == w);

    CmDrep drep{0x01020304, 0x1a2b3c4d, {}};
    drep.private_data[0] = 0xd3;
    w = header_bytes(0x0016);
    put(w, 24, {1, 2, 3, 4, 0x1a, 0x2b, 0x3c, 0x4d, 0xd3});
    encode_cm_mad(cm_mad_header(CmAttr::drep, kTid), drep, out);
    CHECK(out == w);

    CmSidrReq sidr{0x0a0b0c0d, 0x8001, cma_service_id(RdmaPortSpace::udp, 7174), {}};
    sidr.private_data[0] = 0xd4;
    w = header_bytes(0x0017);
    put(w, 24, {0x0a, 0x0b, 0x0c, 0x0d, 0x80, 0x01, 0, 0});
    put(w, 32, {0, 0, 0, 0, 0x01, 0x11, 0x1c, 0x06, 0xd4});
    encode_cm_mad(cm_mad_header(CmAttr::sidr_req, kTid), sidr, out);
    CHECK(out == w);
}

TEST_CASE("rdma_cm service IDs: port space and port", "[cm]") {
    STATIC_REQUIRE(cma_service_id(RdmaPortSpace::tcp, 0) == 0x0000000001060000);
    STATIC_REQUIRE(cma_service_id(RdmaPortSpace::udp, 0) == 0x0000000001110000);
    STATIC_REQUIRE(cma_service_id(RdmaPortSpace::ib, 0) == 0x00000000013f0000);
    STATIC_REQUIRE(cma_service_id(RdmaPortSpace::tcp, 7471) == 0x0000000001061d2f);
    STATIC_REQUIRE(cma_service_id(RdmaPortSpace::udp, 0xffff) == 0x000000000111ffff);
    CHECK(cma_port_space(0x0000000001061d2f) == RdmaPortSpace::tcp);
    CHECK(cma_port_space(0x000000000111ffff) == RdmaPortSpace::udp);
    CHECK(cma_port_space(0x00000000013f0001) == RdmaPortSpace::ib);
    CHECK(cma_port(0x0000000001061d2f) == 7471);
    CHECK_FALSE(cma_port_space(0x0000000001020000)); // IPoIB's space is not an IP CM one
    CHECK_FALSE(cma_port_space(0x0000000101061d2f)); // outside the prefix
    CHECK_FALSE(cma_port_space(0x0200000000000001)); // an IB CM-assigned service ID
    CHECK((cma_service_id(RdmaPortSpace::tcp, 80) & kCmaPortSpaceMask) == 0x0000000001060000);
}

TEST_CASE("the rdma_cm header in a REQ's private data", "[cm]") {
    const std::uint8_t src[4] = {10, 1, 2, 3}, dst[4] = {10, 4, 5, 6};
    std::array<std::uint8_t, kCmaIpHeaderSize> w{};
    w.fill(0xcc);
    CmaIpHeader::ipv4(src, dst, 0x1234).store(w.data());
    const std::array<std::uint8_t, 36> v4 = {0, 0x40, 0x12, 0x34, 0,  0, 0, 0, 0,  0, 0, 0,
                                             0, 0,    0,    0,    10, 1, 2, 3, 0,  0, 0, 0,
                                             0, 0,    0,    0,    0,  0, 0, 0, 10, 4, 5, 6};
    CHECK(w == v4);
    CHECK(CmaIpHeader::load(w.data()) == CmaIpHeader::ipv4(src, dst, 0x1234));

    CmaIpAddr a{}, b{};
    a[0] = 0xfe;
    a[1] = 0x80;
    a[15] = 1;
    b = a;
    b[15] = 2;
    const CmaIpHeader h6 = CmaIpHeader::ipv6(a, b, 0xc000);
    h6.store(w.data());
    CHECK(w[0] == 0);
    CHECK(w[1] == 0x60);
    CHECK(w[2] == 0xc0);
    CHECK(w[3] == 0x00);
    CHECK(w[4] == 0xfe);
    CHECK(w[19] == 1);
    CHECK(w[20] == 0xfe);
    CHECK(w[35] == 2);
    CHECK(CmaIpHeader::load(w.data()) == h6);
    CHECK(check_cma_ip_header(h6) == CmaHeaderError::none);

    // The low nibble of byte 1 is reserved: read as nothing.
    w[1] = 0x6f;
    CHECK(CmaIpHeader::load(w.data()) == h6);
    w[1] = 0x50;
    CHECK(check_cma_ip_header(CmaIpHeader::load(w.data())) == CmaHeaderError::bad_ip_version);
    w[1] = 0x00;
    CHECK(check_cma_ip_header(CmaIpHeader::load(w.data())) == CmaHeaderError::bad_ip_version);
    w[1] = 0x40;
    w[0] = 1;
    CHECK(check_cma_ip_header(CmaIpHeader::load(w.data())) == CmaHeaderError::bad_cma_version);
    CHECK(std::string(cma_header_error_name(CmaHeaderError::bad_cma_version)) == "bad_cma_version");
    STATIC_REQUIRE(kCmaReqUserDataSize == 56);
    STATIC_REQUIRE(kCmaSidrReqUserDataSize == 180);
}
