// The CM messages' load and store: each field at the byte and bits IBA
// vol. 1 tables 106-120 give it, counted from the CM data (MAD byte 24).
// (net/README.md, "CM MADs"). Parsing a whole MAD: net/cm_mad_parse.cpp.
#include <algorithm>

#include "net/cm_mad.hpp"

namespace rdmasim::net {

namespace {

using roce_detail::load_be24;
using roce_detail::load_be32;
using roce_detail::load_be64;
using roce_detail::store_be16;
using roce_detail::store_be24;
using roce_detail::store_be32;
using roce_detail::store_be64;

std::uint16_t load_be16(const std::uint8_t* p) noexcept {
    return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

template <std::size_t N>
void load_bytes(std::array<std::uint8_t, N>& to, const std::uint8_t* p) noexcept {
    std::copy_n(p, N, to.begin());
}
template <std::size_t N>
void store_bytes(std::uint8_t* p, const std::array<std::uint8_t, N>& from) noexcept {
    std::copy_n(from.begin(), N, p);
}

// `value`'s low `bits` bits, shifted up to `shift` within a byte.
constexpr std::uint8_t bits_at(unsigned value, unsigned bits, unsigned shift) noexcept {
    return static_cast<std::uint8_t>((value & ((1u << bits) - 1)) << shift);
}
constexpr std::uint8_t bits_of(std::uint8_t byte, unsigned bits, unsigned shift) noexcept {
    return static_cast<std::uint8_t>((byte >> shift) & ((1u << bits) - 1));
}

// The two communication IDs most messages begin with (bytes 0 and 4).
void store_comm_ids(std::uint8_t* p, std::uint32_t local, std::uint32_t remote) noexcept {
    store_be32(p, local);
    store_be32(p + 4, remote);
}

// A path: LIDs 0, 2; GIDs 4, 20; flow label 36 (bits 31..12 of the word),
// packet rate 39 (bits 5..0); traffic class 40; hop limit 41; SL 42 (7..4),
// subnet local 42 (3); local ACK timeout 43 (7..3). Byte 43's bits 2..0 are
// left to the caller (the alternate path's SAP bit).
CmPath load_path(const std::uint8_t* p) noexcept {
    CmPath path;
    path.local_lid = load_be16(p);
    path.remote_lid = load_be16(p + 2);
    load_bytes(path.local_gid, p + 4);
    load_bytes(path.remote_gid, p + 20);
    path.flow_label = load_be32(p + 36) >> 12;
    path.packet_rate = bits_of(p[39], 6, 0);
    path.traffic_class = p[40];
    path.hop_limit = p[41];
    path.sl = bits_of(p[42], 4, 4);
    path.subnet_local = (p[42] & 0x08) != 0;
    path.local_ack_timeout = bits_of(p[43], 5, 3);
    return path;
}

void store_path(std::uint8_t* p, const CmPath& path) noexcept {
    store_be16(p, path.local_lid);
    store_be16(p + 2, path.remote_lid);
    store_bytes(p + 4, path.local_gid);
    store_bytes(p + 20, path.remote_gid);
    store_be32(p + 36, ((path.flow_label & 0xfffff) << 12) | (path.packet_rate & 0x3fu));
    p[40] = path.traffic_class;
    p[41] = path.hop_limit;
    p[42] = static_cast<std::uint8_t>(bits_at(path.sl, 4, 4) | bits_at(path.subnet_local, 1, 3));
    p[43] = bits_at(path.local_ack_timeout, 5, 3);
}

constexpr std::size_t kReqPrimaryPath = 52;
constexpr std::size_t kReqAlternatePath = 96;
constexpr std::size_t kReqPrivateData = 140;

} // namespace

// REQ (IBA table 106): local comm ID 0; service ID 8; local CA GUID 16; local
// Q_Key 28; local QPN 32 + responder resources 35; local EECN 36 + initiator
// depth 39; remote EECN 40 + byte 43 (remote CM response timeout 7..3,
// transport service type 2..1, end-to-end flow control 0); starting PSN 44 +
// byte 47 (local CM response timeout 7..3, retry count 2..0); P_Key 48; byte
// 50 (path MTU 7..4, RDC exists 3, RNR retry count 2..0); byte 51 (max CM
// retries 7..4, SRQ 3, extended transport type 2..0); paths 52 and 96 (SAP
// supported: byte 139 bit 2); private data 140.
CmReq CmReq::load(const std::uint8_t* p) noexcept {
    CmReq m;
    m.local_comm_id = load_be32(p);
    m.service_id = load_be64(p + 8);
    m.local_ca_guid = load_be64(p + 16);
    m.local_qkey = load_be32(p + 28);
    m.local_qpn = load_be24(p + 32);
    m.responder_resources = p[35];
    m.local_eecn = load_be24(p + 36);
    m.initiator_depth = p[39];
    m.remote_eecn = load_be24(p + 40);
    m.remote_cm_response_timeout = bits_of(p[43], 5, 3);
    m.transport = static_cast<CmTransport>(bits_of(p[43], 2, 1));
    m.end_to_end_flow_control = (p[43] & 0x01) != 0;
    m.starting_psn = load_be24(p + 44);
    m.local_cm_response_timeout = bits_of(p[47], 5, 3);
    m.retry_count = bits_of(p[47], 3, 0);
    m.pkey = load_be16(p + 48);
    m.path_mtu = static_cast<PathMtu>(bits_of(p[50], 4, 4));
    m.rdc_exists = (p[50] & 0x08) != 0;
    m.rnr_retry_count = bits_of(p[50], 3, 0);
    m.max_cm_retries = bits_of(p[51], 4, 4);
    m.srq = (p[51] & 0x08) != 0;
    m.extended_transport = bits_of(p[51], 3, 0);
    m.primary = load_path(p + kReqPrimaryPath);
    m.alternate = load_path(p + kReqAlternatePath);
    m.sap_supported = (p[kReqAlternatePath + 43] & 0x04) != 0;
    load_bytes(m.private_data, p + kReqPrivateData);
    return m;
}

void CmReq::store(std::uint8_t* p) const noexcept {
    std::fill_n(p, kCmDataSize, std::uint8_t{0});
    store_be32(p, local_comm_id);
    store_be64(p + 8, service_id);
    store_be64(p + 16, local_ca_guid);
    store_be32(p + 28, local_qkey);
    store_be24(p + 32, local_qpn & 0xffffff);
    p[35] = responder_resources;
    store_be24(p + 36, local_eecn & 0xffffff);
    p[39] = initiator_depth;
    store_be24(p + 40, remote_eecn & 0xffffff);
    p[43] = static_cast<std::uint8_t>(bits_at(remote_cm_response_timeout, 5, 3) |
                                      bits_at(static_cast<unsigned>(transport), 2, 1) |
                                      bits_at(end_to_end_flow_control, 1, 0));
    store_be24(p + 44, starting_psn & 0xffffff);
    p[47] = static_cast<std::uint8_t>(bits_at(local_cm_response_timeout, 5, 3) |
                                      bits_at(retry_count, 3, 0));
    store_be16(p + 48, pkey);
    p[50] = static_cast<std::uint8_t>(bits_at(static_cast<unsigned>(path_mtu), 4, 4) |
                                      bits_at(rdc_exists, 1, 3) | bits_at(rnr_retry_count, 3, 0));
    p[51] = static_cast<std::uint8_t>(bits_at(max_cm_retries, 4, 4) | bits_at(srq, 1, 3) |
                                      bits_at(extended_transport, 3, 0));
    store_path(p + kReqPrimaryPath, primary);
    store_path(p + kReqAlternatePath, alternate);
    p[kReqAlternatePath + 43] |= bits_at(sap_supported, 1, 2);
    store_bytes(p + kReqPrivateData, private_data);
}

// MRA (table 107): comm IDs 0, 4; message MRAed 8 (7..6); service timeout 9
// (7..3); private data 10.
CmMra CmMra::load(const std::uint8_t* p) noexcept {
    CmMra m;
    m.local_comm_id = load_be32(p);
    m.remote_comm_id = load_be32(p + 4);
    m.message_mraed = static_cast<CmMraedMsg>(bits_of(p[8], 2, 6));
    m.service_timeout = bits_of(p[9], 5, 3);
    load_bytes(m.private_data, p + 10);
    return m;
}

void CmMra::store(std::uint8_t* p) const noexcept {
    store_comm_ids(p, local_comm_id, remote_comm_id);
    p[8] = bits_at(static_cast<unsigned>(message_mraed), 2, 6);
    p[9] = bits_at(service_timeout, 5, 3);
    store_bytes(p + 10, private_data);
}

// REJ (table 108): comm IDs 0, 4; message rejected 8 (7..6); reject info
// length 9 (7..1); reason 10; ARI 12; private data 84.
CmRej CmRej::load(const std::uint8_t* p) noexcept {
    CmRej m;
    m.local_comm_id = load_be32(p);
    m.remote_comm_id = load_be32(p + 4);
    m.message_rejected = static_cast<CmRejectedMsg>(bits_of(p[8], 2, 6));
    m.reject_info_length = bits_of(p[9], 7, 1);
    m.reason = static_cast<CmRejReason>(load_be16(p + 10));
    load_bytes(m.ari, p + 12);
    load_bytes(m.private_data, p + 84);
    return m;
}

void CmRej::store(std::uint8_t* p) const noexcept {
    store_comm_ids(p, local_comm_id, remote_comm_id);
    p[8] = bits_at(static_cast<unsigned>(message_rejected), 2, 6);
    p[9] = bits_at(reject_info_length, 7, 1);
    store_be16(p + 10, static_cast<std::uint16_t>(reason));
    store_bytes(p + 12, ari);
    store_bytes(p + 84, private_data);
}

// REP (table 110): comm IDs 0, 4; local Q_Key 8; local QPN 12; local EECN
// 16; starting PSN 20; responder resources 24; initiator depth 25; byte 26
// (target ACK delay 7..3, failover accepted 2..1, end-to-end flow control
// 0); byte 27 (RNR retry count 7..5, SRQ 4); local CA GUID 28; private data 36.
CmRep CmRep::load(const std::uint8_t* p) noexcept {
    CmRep m;
    m.local_comm_id = load_be32(p);
    m.remote_comm_id = load_be32(p + 4);
    m.local_qkey = load_be32(p + 8);
    m.local_qpn = load_be24(p + 12);
    m.local_eecn = load_be24(p + 16);
    m.starting_psn = load_be24(p + 20);
    m.responder_resources = p[24];
    m.initiator_depth = p[25];
    m.target_ack_delay = bits_of(p[26], 5, 3);
    m.failover_accepted = bits_of(p[26], 2, 1);
    m.end_to_end_flow_control = (p[26] & 0x01) != 0;
    m.rnr_retry_count = bits_of(p[27], 3, 5);
    m.srq = (p[27] & 0x10) != 0;
    m.local_ca_guid = load_be64(p + 28);
    load_bytes(m.private_data, p + 36);
    return m;
}

void CmRep::store(std::uint8_t* p) const noexcept {
    store_comm_ids(p, local_comm_id, remote_comm_id);
    store_be32(p + 8, local_qkey);
    store_be32(p + 12, (local_qpn & 0xffffff) << 8);
    store_be32(p + 16, (local_eecn & 0xffffff) << 8);
    store_be32(p + 20, (starting_psn & 0xffffff) << 8);
    p[24] = responder_resources;
    p[25] = initiator_depth;
    p[26] = static_cast<std::uint8_t>(bits_at(target_ack_delay, 5, 3) |
                                      bits_at(failover_accepted, 2, 1) |
                                      bits_at(end_to_end_flow_control, 1, 0));
    p[27] = static_cast<std::uint8_t>(bits_at(rnr_retry_count, 3, 5) | bits_at(srq, 1, 4));
    store_be64(p + 28, local_ca_guid);
    store_bytes(p + 36, private_data);
}

// RTU (table 111) and DREP (table 113): comm IDs 0, 4; private data 8.
CmRtu CmRtu::load(const std::uint8_t* p) noexcept {
    CmRtu m;
    m.local_comm_id = load_be32(p);
    m.remote_comm_id = load_be32(p + 4);
    load_bytes(m.private_data, p + 8);
    return m;
}

void CmRtu::store(std::uint8_t* p) const noexcept {
    store_comm_ids(p, local_comm_id, remote_comm_id);
    store_bytes(p + 8, private_data);
}

CmDrep CmDrep::load(const std::uint8_t* p) noexcept {
    CmDrep m;
    m.local_comm_id = load_be32(p);
    m.remote_comm_id = load_be32(p + 4);
    load_bytes(m.private_data, p + 8);
    return m;
}

void CmDrep::store(std::uint8_t* p) const noexcept {
    store_comm_ids(p, local_comm_id, remote_comm_id);
    store_bytes(p + 8, private_data);
}

// DREQ (table 112): comm IDs 0, 4; remote QPN/EECN 8 (byte 11 reserved);
// private data 12.
CmDreq CmDreq::load(const std::uint8_t* p) noexcept {
    CmDreq m;
    m.local_comm_id = load_be32(p);
    m.remote_comm_id = load_be32(p + 4);
    m.remote_qpn_eecn = load_be24(p + 8);
    load_bytes(m.private_data, p + 12);
    return m;
}

void CmDreq::store(std::uint8_t* p) const noexcept {
    store_comm_ids(p, local_comm_id, remote_comm_id);
    store_be32(p + 8, (remote_qpn_eecn & 0xffffff) << 8);
    store_bytes(p + 12, private_data);
}

// SIDR_REQ (table 119): request ID 0; P_Key 4 (6..7 reserved); service ID
// 8; private data 16.
CmSidrReq CmSidrReq::load(const std::uint8_t* p) noexcept {
    CmSidrReq m;
    m.request_id = load_be32(p);
    m.pkey = load_be16(p + 4);
    m.service_id = load_be64(p + 8);
    load_bytes(m.private_data, p + 16);
    return m;
}

void CmSidrReq::store(std::uint8_t* p) const noexcept {
    store_be32(p, request_id);
    store_be32(p + 4, std::uint32_t{pkey} << 16);
    store_be64(p + 8, service_id);
    store_bytes(p + 16, private_data);
}

// SIDR_REP (table 120): request ID 0; status 4; additional information
// length 5 (6..7 reserved); QPN 8 (11 reserved); service ID 12; Q_Key 20;
// additional information 24; private data 96.
CmSidrRep CmSidrRep::load(const std::uint8_t* p) noexcept {
    CmSidrRep m;
    m.request_id = load_be32(p);
    m.status = static_cast<SidrStatus>(p[4]);
    m.additional_info_length = p[5];
    m.qpn = load_be24(p + 8);
    m.service_id = load_be64(p + 12);
    m.qkey = load_be32(p + 20);
    load_bytes(m.class_port_info, p + 24);
    load_bytes(m.private_data, p + 96);
    return m;
}

void CmSidrRep::store(std::uint8_t* p) const noexcept {
    store_be32(p, request_id);
    p[4] = static_cast<std::uint8_t>(status);
    p[5] = additional_info_length;
    store_be16(p + 6, 0);
    store_be32(p + 8, (qpn & 0xffffff) << 8);
    store_be64(p + 12, service_id);
    store_be32(p + 20, qkey);
    store_bytes(p + 24, class_port_info);
    store_bytes(p + 96, private_data);
}

} // namespace rdmasim::net
