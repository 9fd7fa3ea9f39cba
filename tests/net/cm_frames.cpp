// cm_frames: one RoCE v2 frame per CM message for an independent check of
// net/cm_mad.* (tests/tools/cm_codec_test.py runs it and tshark).
//
//   cm_frames write OUT.pcap   a REQ (IPv4), MRA, REJ, REP, RTU, DREQ, DREP,
//                              SIDR_REQ, SIDR_REP and a REQ over IPv6, each a
//                              UD SEND ONLY to QP1 (DETH Q_Key 0x80010000,
//                              source QP 1) with the 256-byte MAD as payload;
//                              one line per frame on stdout:
//                              "N ATTR key=value ..." (values decimal)
//
// Frames are numbered from 1, as tshark numbers them. Exit 0, or 1 with a
// message on stderr when the file cannot be written.
#include <array>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "net/cm_mad.hpp"
#include "net/cma_header.hpp"
#include "net/pcap_writer.hpp"
#include "net/roce_frame.hpp"

using namespace rdmasim::net;

namespace {

using Mad = std::array<std::uint8_t, kMadSize>;
using ull = unsigned long long;

const std::uint8_t kSrcIp[4] = {192, 0, 2, 1};
const std::uint8_t kDstIp[4] = {192, 0, 2, 2};

Gid fe80(std::uint8_t last) {
    Gid g{};
    g[0] = 0xfe;
    g[1] = 0x80;
    g[15] = last;
    return g;
}

CmReq make_req(bool ipv6) {
    CmReq m;
    m.local_comm_id = ipv6 ? 0x0badcafe : 0x1a2b3c4d;
    m.service_id = cma_service_id(RdmaPortSpace::tcp, 7471);
    m.local_ca_guid = 0x0002c90300a1b2c3;
    m.local_qpn = 0x000123;
    m.responder_resources = 16;
    m.initiator_depth = 8;
    m.remote_cm_response_timeout = 20;
    m.end_to_end_flow_control = true;
    m.starting_psn = 0xabcdef;
    m.local_cm_response_timeout = 19;
    m.retry_count = 7;
    m.pkey = 0xffff;
    m.path_mtu = PathMtu::mtu1024;
    m.rnr_retry_count = 6;
    m.max_cm_retries = 15;
    m.primary.local_lid = 0xffff;
    m.primary.remote_lid = 0xffff;
    m.primary.local_gid = ipv6 ? fe80(1) : ipv4_mapped_gid(kSrcIp);
    m.primary.remote_gid = ipv6 ? fe80(2) : ipv4_mapped_gid(kDstIp);
    m.primary.flow_label = 0x12345;
    m.primary.packet_rate = 7;
    m.primary.traffic_class = 0x6a;
    m.primary.hop_limit = 64;
    m.primary.sl = 3;
    m.primary.local_ack_timeout = 18;
    const CmaIpHeader cma = ipv6 ? CmaIpHeader::ipv6(fe80(1), fe80(2), 50001)
                                 : CmaIpHeader::ipv4(kSrcIp, kDstIp, 50000);
    cma.store(m.private_data.data());
    std::memcpy(m.private_data.data() + kCmaIpHeaderSize, "hello", 5);
    return m;
}

std::string describe(const CmReq& m) {
    const CmaIpHeader cma = CmaIpHeader::load(m.private_data.data());
    char s[512];
    std::snprintf(
        s, sizeof s,
        "local_comm_id=%u service_id=%llu local_ca_guid=%llu local_qpn=%u "
        "responder_resources=%u initiator_depth=%u remote_cm_response_timeout=%u "
        "e2e=%u starting_psn=%u local_cm_response_timeout=%u retry_count=%u pkey=%u "
        "path_mtu=%u rnr_retry_count=%u max_cm_retries=%u flow_label=%u "
        "packet_rate=%u traffic_class=%u hop_limit=%u sl=%u local_ack_timeout=%u "
        "ip_version=%u cma_port=%u",
        m.local_comm_id, static_cast<ull>(m.service_id), static_cast<ull>(m.local_ca_guid),
        m.local_qpn, m.responder_resources, m.initiator_depth, m.remote_cm_response_timeout,
        m.end_to_end_flow_control, m.starting_psn, m.local_cm_response_timeout, m.retry_count,
        m.pkey, static_cast<unsigned>(m.path_mtu), m.rnr_retry_count, m.max_cm_retries,
        m.primary.flow_label, m.primary.packet_rate, m.primary.traffic_class, m.primary.hop_limit,
        m.primary.sl, m.primary.local_ack_timeout, cma.ip_version, cma.port);
    return s;
}

CmRep make_rep() {
    CmRep m;
    m.local_comm_id = 0x01020304;
    m.remote_comm_id = 0x1a2b3c4d;
    m.local_qpn = 0x000456;
    m.starting_psn = 0x123456;
    m.responder_resources = 4;
    m.initiator_depth = 8;
    m.target_ack_delay = 15;
    m.failover_accepted = 2;
    m.end_to_end_flow_control = true;
    m.rnr_retry_count = 7;
    m.srq = true;
    m.local_ca_guid = 0x0002c90300d4e5f6;
    return m;
}

std::string describe(const CmRep& m) {
    char s[384];
    std::snprintf(s, sizeof s,
                  "local_comm_id=%u remote_comm_id=%u local_qkey=%u local_qpn=%u "
                  "starting_psn=%u responder_resources=%u initiator_depth=%u "
                  "target_ack_delay=%u failover_accepted=%u e2e=%u rnr_retry_count=%u srq=%u "
                  "local_ca_guid=%llu",
                  m.local_comm_id, m.remote_comm_id, m.local_qkey, m.local_qpn, m.starting_psn,
                  m.responder_resources, m.initiator_depth, m.target_ack_delay, m.failover_accepted,
                  m.end_to_end_flow_control, m.rnr_retry_count, m.srq,
                  static_cast<ull>(m.local_ca_guid));
    return s;
}

std::string comm_ids(std::uint32_t local, std::uint32_t remote) {
    return "local_comm_id=" + std::to_string(local) + " remote_comm_id=" + std::to_string(remote);
}

// One frame per message: the MAD and the line describing it.
struct CmFrame {
    Mad mad{};
    std::string line;
    bool ipv6 = false;
};

template <class M> CmFrame frame(const M& msg, std::uint64_t tid, std::string fields) {
    CmFrame f;
    encode_cm_mad(cm_mad_header(M::kAttr, tid), msg, f.mad);
    f.line = std::string(cm_attr_name(M::kAttr)) + " tid=" + std::to_string(tid) + " " + fields;
    return f;
}

std::vector<CmFrame> frames() {
    std::vector<CmFrame> out;
    const CmReq req = make_req(false);
    out.push_back(frame(req, 0x100000001, describe(req)));
    out.push_back(frame(CmMra{0x01020304, 0x1a2b3c4d, CmMraedMsg::rep, 24, {}}, 0x100000002,
                        comm_ids(0x01020304, 0x1a2b3c4d) + " message_mraed=1 service_timeout=24"));
    CmRej rej{0x01020304, 0x1a2b3c4d, CmRejectedMsg::rep, 0, CmRejReason::consumer_reject, {}, {}};
    out.push_back(frame(rej, 0x100000003,
                        comm_ids(0x01020304, 0x1a2b3c4d) + " message_rejected=1 reason=28"));
    const CmRep rep = make_rep();
    out.push_back(frame(rep, 0x100000004, describe(rep)));
    out.push_back(
        frame(CmRtu{0x1a2b3c4d, 0x01020304, {}}, 0x100000005, comm_ids(0x1a2b3c4d, 0x01020304)));
    out.push_back(frame(CmDreq{0x1a2b3c4d, 0x01020304, 0x000456, {}}, 0x100000006,
                        comm_ids(0x1a2b3c4d, 0x01020304) + " remote_qpn_eecn=1110"));
    out.push_back(
        frame(CmDrep{0x01020304, 0x1a2b3c4d, {}}, 0x100000007, comm_ids(0x01020304, 0x1a2b3c4d)));
    const std::uint64_t udp_sid = cma_service_id(RdmaPortSpace::udp, 7174);
    CmSidrReq sreq{0x0a0b0c0d, 0xffff, udp_sid, {}};
    CmaIpHeader::ipv4(kSrcIp, kDstIp, 50002).store(sreq.private_data.data());
    out.push_back(frame(sreq, 0x100000008,
                        "request_id=168496141 pkey=65535 service_id=" + std::to_string(udp_sid)));
    CmSidrRep srep{0x0a0b0c0d, SidrStatus::success, 0, 0x00789a, udp_sid, 0x01234567, {}, {}};
    out.push_back(frame(srep, 0x100000009,
                        "request_id=168496141 status=0 qpn=30874 qkey=19088743 service_id=" +
                            std::to_string(udp_sid)));
    const CmReq req6 = make_req(true);
    out.push_back(frame(req6, 0x10000000a, describe(req6)));
    out.back().ipv6 = true;
    return out;
}

RocePath path_for(bool ipv6) {
    RocePath path;
    path.dst_mac = {0x02, 0, 0, 0, 0, 0x02};
    path.src_mac = {0x02, 0, 0, 0, 0, 0x01};
    path.sgid = ipv6 ? fe80(1) : ipv4_mapped_gid(kSrcIp);
    path.dgid = ipv6 ? fe80(2) : ipv4_mapped_gid(kDstIp);
    path.udp_src_port = roce_udp_src_port(roce_flow_label(kGsiQpn, kGsiQpn));
    return path;
}

int write_frames(const std::string& file) {
    auto writer = PcapWriter::open(file);
    if (!writer) {
        std::fprintf(stderr, "cm_frames: %s\n", writer.error().message.c_str());
        return 1;
    }
    std::vector<std::uint8_t> out(512);
    std::uint64_t n = 0;
    for (const CmFrame& f : frames()) {
        RoceHeaders h;
        h.bth.opcode = static_cast<std::uint8_t>(RoceOpcode::ud_send_only);
        h.bth.dest_qp = kGsiQpn;
        h.bth.psn = static_cast<std::uint32_t>(n);
        h.deth = {kGsiQkey, kGsiQpn};
        const auto r = build_roce_frame(path_for(f.ipv6), h, f.mad, out);
        if (r.error != RoceBuildError::none) {
            std::fprintf(stderr, "cm_frames: %s\n", roce_build_error_name(r.error));
            return 1;
        }
        (*writer.value()).write(std::span(out).first(r.len), 1'700'000'000'000'000'000ull + n);
        std::printf("%llu %s\n", static_cast<ull>(++n), f.line.c_str());
    }
    if (auto closed = writer.value()->close(); !closed) {
        std::fprintf(stderr, "cm_frames: %s\n", closed.error().message.c_str());
        return 1;
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc == 3 && std::strcmp(argv[1], "write") == 0) return write_frames(argv[2]);
    std::fprintf(stderr, "usage: cm_frames write OUT.pcap\n");
    return 2;
}
