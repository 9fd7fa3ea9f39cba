// The IB communication manager's MADs (IBA vol. 1, ch. 12 and 13.4): the
// 24-byte common MAD header and the CM messages that follow it in a 256-byte
// MAD, as a CM sends them to QP1 (UD SEND ONLY, Q_Key 0x80010000). Each
// message is a plain struct of host-order fields with `load` (from the 232
// bytes after the MAD header) and `store` (all 232 bytes, reserved bits 0;
// fields wider than their bits are cut). `encode_cm_mad` writes a whole MAD,
// `parse_cm_mad` checks and reads one. Nothing here allocates or throws.
// Offsets and widths: (net/README.md, "CM MADs").
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>

#include "net/roce_frame.hpp" // Gid
#include "net/roce_headers.hpp"

namespace rdmasim::net {

inline constexpr std::size_t kMadSize = 256;
inline constexpr std::size_t kMadHeaderSize = 24;
inline constexpr std::size_t kCmDataSize = kMadSize - kMadHeaderSize; // 232

// The GSI: QP1, and the Q_Key every GMP travels with (IBA 13.4.6.1).
inline constexpr std::uint32_t kGsiQpn = 1;
inline constexpr std::uint32_t kGsiQkey = 0x80010000;

inline constexpr std::uint8_t kMadBaseVersion = 1;
inline constexpr std::uint8_t kCmMgmtClass = 0x07;
inline constexpr std::uint8_t kCmClassVersion = 2;
inline constexpr std::uint8_t kMadMethodSend = 0x03; // every CM message is a Send

// Private data each message carries (librdmacm's and the kernel's limits).
inline constexpr std::size_t kCmReqPrivateDataSize = 92;
inline constexpr std::size_t kCmMraPrivateDataSize = 222;
inline constexpr std::size_t kCmRejPrivateDataSize = 148;
inline constexpr std::size_t kCmRepPrivateDataSize = 196;
inline constexpr std::size_t kCmRtuPrivateDataSize = 224;
inline constexpr std::size_t kCmDreqPrivateDataSize = 220;
inline constexpr std::size_t kCmDrepPrivateDataSize = 224;
inline constexpr std::size_t kCmSidrReqPrivateDataSize = 216;
inline constexpr std::size_t kCmSidrRepPrivateDataSize = 136;
inline constexpr std::size_t kCmRejAriSize = 72;      // additional reject information
inline constexpr std::size_t kCmSidrRepInfoSize = 72; // additional information

// Attribute IDs of the CM class (IBA table 104). LAP (0x0019) and APR
// (0x001A), alternate path messages, are not decoded: parse refuses them.
enum class CmAttr : std::uint16_t {
    class_port_info = 0x0001,
    req = 0x0010,
    mra = 0x0011,
    rej = 0x0012,
    rep = 0x0013,
    rtu = 0x0014,
    dreq = 0x0015,
    drep = 0x0016,
    sidr_req = 0x0017,
    sidr_rep = 0x0018,
};
// "REQ", "MRA", ... "ClassPortInfo"; "unknown" for any other value.
[[nodiscard]] const char* cm_attr_name(CmAttr attr) noexcept;

// REJ reasons (IBA table 109). 34 is not assigned.
enum class CmRejReason : std::uint16_t {
    no_qp = 1,
    no_eec = 2,
    no_resources = 3,
    timeout = 4,
    unsupported = 5,
    invalid_comm_id = 6,
    invalid_comm_instance = 7,
    invalid_service_id = 8,
    invalid_transport_type = 9,
    stale_conn = 10,
    rdc_not_exist = 11,
    invalid_gid = 12,
    invalid_lid = 13,
    invalid_sl = 14,
    invalid_traffic_class = 15,
    invalid_hop_limit = 16,
    invalid_packet_rate = 17,
    invalid_alt_gid = 18,
    invalid_alt_lid = 19,
    invalid_alt_sl = 20,
    invalid_alt_traffic_class = 21,
    invalid_alt_hop_limit = 22,
    invalid_alt_packet_rate = 23,
    port_cm_redirect = 24,
    port_redirect = 25,
    invalid_mtu = 26,
    insufficient_resp_resources = 27,
    consumer_reject = 28,
    invalid_rnr_retry = 29,
    duplicate_local_comm_id = 30,
    invalid_class_version = 31,
    invalid_flow_label = 32,
    invalid_alt_flow_label = 33,
    vendor_option_not_supported = 35,
};
// The enumerator's name ("consumer_reject"); "unknown" for other values.
[[nodiscard]] const char* cm_rej_reason_name(CmRejReason reason) noexcept;

// MRA's "message MRAed" and REJ's "message rejected" (2 bits each).
enum class CmMraedMsg : std::uint8_t { req = 0, rep = 1, lap = 2 };
enum class CmRejectedMsg : std::uint8_t { req = 0, rep = 1, other = 2 };

// SIDR_REP status (IBA table 121).
enum class SidrStatus : std::uint8_t {
    success = 0,
    service_id_not_supported = 1,
    rejected = 2,
    no_qp = 3,
    redirect = 4, // additional information holds the ClassPortInfo to use
    unsupported_version = 5,
};

// REQ's transport service type (2 bits); XRC is `extended` with extended
// transport type 1.
enum class CmTransport : std::uint8_t { rc = 0, uc = 1, rd = 2, extended = 3 };
inline constexpr std::uint8_t kCmExtendedTransportXrc = 1;

// ---- Common MAD header, 24 bytes (IBA 13.4.3): base version, class, class
// version, method (R bit included), status, class specific, transaction ID,
// attribute ID, reserved (written 0), attribute modifier.
struct MadHeader {
    static constexpr std::size_t kSize = kMadHeaderSize;
    std::uint8_t base_version = kMadBaseVersion;
    std::uint8_t mgmt_class = kCmMgmtClass;
    std::uint8_t class_version = kCmClassVersion;
    std::uint8_t method = kMadMethodSend;
    std::uint16_t status = 0;
    std::uint16_t class_specific = 0;
    std::uint64_t transaction_id = 0;
    std::uint16_t attr_id = 0;
    std::uint32_t attr_modifier = 0;

    static MadHeader load(const std::uint8_t* p) noexcept {
        MadHeader h;
        h.base_version = p[0];
        h.mgmt_class = p[1];
        h.class_version = p[2];
        h.method = p[3];
        h.status = static_cast<std::uint16_t>((p[4] << 8) | p[5]);
        h.class_specific = static_cast<std::uint16_t>((p[6] << 8) | p[7]);
        h.transaction_id = roce_detail::load_be64(p + 8);
        h.attr_id = static_cast<std::uint16_t>((p[16] << 8) | p[17]);
        h.attr_modifier = roce_detail::load_be32(p + 20);
        return h;
    }
    void store(std::uint8_t* p) const noexcept {
        p[0] = base_version;
        p[1] = mgmt_class;
        p[2] = class_version;
        p[3] = method;
        roce_detail::store_be16(p + 4, status);
        roce_detail::store_be16(p + 6, class_specific);
        roce_detail::store_be64(p + 8, transaction_id);
        roce_detail::store_be16(p + 16, attr_id);
        roce_detail::store_be16(p + 18, 0);
        roce_detail::store_be32(p + 20, attr_modifier);
    }
    bool operator==(const MadHeader&) const = default;
};

// ---- Messages. Offsets in comments count from the CM data (MAD byte 24).

// A REQ's path (primary at 52, alternate at 96), 44 bytes.
struct CmPath {
    std::uint16_t local_lid = 0; // RoCE: 0xffff (permissive) past one hop
    std::uint16_t remote_lid = 0;
    Gid local_gid{};
    Gid remote_gid{};
    std::uint32_t flow_label = 0; // 20 bits
    std::uint8_t packet_rate = 0; // 6 bits (IBA rate code)
    std::uint8_t traffic_class = 0;
    std::uint8_t hop_limit = 0;
    std::uint8_t sl = 0; // 4 bits
    bool subnet_local = false;
    std::uint8_t local_ack_timeout = 0; // 5 bits: 4.096 us * 2^value
    bool operator==(const CmPath&) const = default;
};

struct CmReq {
    static constexpr CmAttr kAttr = CmAttr::req;
    std::uint32_t local_comm_id = 0;
    std::uint64_t service_id = 0;
    std::uint64_t local_ca_guid = 0;
    std::uint32_t local_qkey = 0;
    std::uint32_t local_qpn = 0; // 24 bits
    std::uint8_t responder_resources = 0;
    std::uint32_t local_eecn = 0; // 24 bits
    std::uint8_t initiator_depth = 0;
    std::uint32_t remote_eecn = 0;               // 24 bits
    std::uint8_t remote_cm_response_timeout = 0; // 5 bits
    CmTransport transport = CmTransport::rc;     // 2 bits
    bool end_to_end_flow_control = false;
    std::uint32_t starting_psn = 0;             // 24 bits
    std::uint8_t local_cm_response_timeout = 0; // 5 bits
    std::uint8_t retry_count = 0;               // 3 bits
    std::uint16_t pkey = kDefaultPkey;
    PathMtu path_mtu = PathMtu::mtu1024; // 4 bits
    bool rdc_exists = false;
    std::uint8_t rnr_retry_count = 0; // 3 bits
    std::uint8_t max_cm_retries = 0;  // 4 bits
    bool srq = false;
    std::uint8_t extended_transport = 0; // 3 bits
    CmPath primary;
    CmPath alternate; // all zero when there is none
    bool sap_supported = false;
    std::array<std::uint8_t, kCmReqPrivateDataSize> private_data{};

    static CmReq load(const std::uint8_t* p) noexcept;
    void store(std::uint8_t* p) const noexcept;
    bool operator==(const CmReq&) const = default;
};

struct CmMra {
    static constexpr CmAttr kAttr = CmAttr::mra;
    std::uint32_t local_comm_id = 0;
    std::uint32_t remote_comm_id = 0;
    CmMraedMsg message_mraed = CmMraedMsg::req; // 2 bits
    std::uint8_t service_timeout = 0;           // 5 bits
    std::array<std::uint8_t, kCmMraPrivateDataSize> private_data{};

    static CmMra load(const std::uint8_t* p) noexcept;
    void store(std::uint8_t* p) const noexcept;
    bool operator==(const CmMra&) const = default;
};

struct CmRej {
    static constexpr CmAttr kAttr = CmAttr::rej;
    std::uint32_t local_comm_id = 0;
    std::uint32_t remote_comm_id = 0;
    CmRejectedMsg message_rejected = CmRejectedMsg::req; // 2 bits
    std::uint8_t reject_info_length = 0;                 // 7 bits: bytes of ari used
    CmRejReason reason = CmRejReason::consumer_reject;
    std::array<std::uint8_t, kCmRejAriSize> ari{};
    std::array<std::uint8_t, kCmRejPrivateDataSize> private_data{};

    static CmRej load(const std::uint8_t* p) noexcept;
    void store(std::uint8_t* p) const noexcept;
    bool operator==(const CmRej&) const = default;
};

struct CmRep {
    static constexpr CmAttr kAttr = CmAttr::rep;
    std::uint32_t local_comm_id = 0;
    std::uint32_t remote_comm_id = 0;
    std::uint32_t local_qkey = 0;
    std::uint32_t local_qpn = 0;    // 24 bits
    std::uint32_t local_eecn = 0;   // 24 bits
    std::uint32_t starting_psn = 0; // 24 bits
    std::uint8_t responder_resources = 0;
    std::uint8_t initiator_depth = 0;
    std::uint8_t target_ack_delay = 0;  // 5 bits
    std::uint8_t failover_accepted = 0; // 2 bits
    bool end_to_end_flow_control = false;
    std::uint8_t rnr_retry_count = 0; // 3 bits
    bool srq = false;
    std::uint64_t local_ca_guid = 0;
    std::array<std::uint8_t, kCmRepPrivateDataSize> private_data{};

    static CmRep load(const std::uint8_t* p) noexcept;
    void store(std::uint8_t* p) const noexcept;
    bool operator==(const CmRep&) const = default;
};

struct CmRtu {
    static constexpr CmAttr kAttr = CmAttr::rtu;
    std::uint32_t local_comm_id = 0;
    std::uint32_t remote_comm_id = 0;
    std::array<std::uint8_t, kCmRtuPrivateDataSize> private_data{};

    static CmRtu load(const std::uint8_t* p) noexcept;
    void store(std::uint8_t* p) const noexcept;
    bool operator==(const CmRtu&) const = default;
};

struct CmDreq {
    static constexpr CmAttr kAttr = CmAttr::dreq;
    std::uint32_t local_comm_id = 0;
    std::uint32_t remote_comm_id = 0;
    std::uint32_t remote_qpn_eecn = 0; // 24 bits
    std::array<std::uint8_t, kCmDreqPrivateDataSize> private_data{};

    static CmDreq load(const std::uint8_t* p) noexcept;
    void store(std::uint8_t* p) const noexcept;
    bool operator==(const CmDreq&) const = default;
};

struct CmDrep {
    static constexpr CmAttr kAttr = CmAttr::drep;
    std::uint32_t local_comm_id = 0;
    std::uint32_t remote_comm_id = 0;
    std::array<std::uint8_t, kCmDrepPrivateDataSize> private_data{};

    static CmDrep load(const std::uint8_t* p) noexcept;
    void store(std::uint8_t* p) const noexcept;
    bool operator==(const CmDrep&) const = default;
};

struct CmSidrReq {
    static constexpr CmAttr kAttr = CmAttr::sidr_req;
    std::uint32_t request_id = 0;
    std::uint16_t pkey = kDefaultPkey;
    std::uint64_t service_id = 0;
    std::array<std::uint8_t, kCmSidrReqPrivateDataSize> private_data{};

    static CmSidrReq load(const std::uint8_t* p) noexcept;
    void store(std::uint8_t* p) const noexcept;
    bool operator==(const CmSidrReq&) const = default;
};

struct CmSidrRep {
    static constexpr CmAttr kAttr = CmAttr::sidr_rep;
    std::uint32_t request_id = 0;
    SidrStatus status = SidrStatus::success;
    std::uint8_t additional_info_length = 0; // bytes of class_port_info used
    std::uint32_t qpn = 0;                   // 24 bits
    std::uint64_t service_id = 0;
    std::uint32_t qkey = 0;
    std::array<std::uint8_t, kCmSidrRepInfoSize> class_port_info{}; // IBA: additional information
    std::array<std::uint8_t, kCmSidrRepPrivateDataSize> private_data{};

    static CmSidrRep load(const std::uint8_t* p) noexcept;
    void store(std::uint8_t* p) const noexcept;
    bool operator==(const CmSidrRep&) const = default;
};

template <class M>
concept CmMessage = requires(const M& m, std::uint8_t* p) {
    { M::kAttr } -> std::convertible_to<CmAttr>;
    m.store(p);
};

// The MAD header a CM sends: class 0x07 version 2, base version 1, Send,
// status 0, `tid`, the message's attribute ID.
[[nodiscard]] constexpr MadHeader cm_mad_header(CmAttr attr, std::uint64_t tid) noexcept {
    MadHeader h;
    h.transaction_id = tid;
    h.attr_id = static_cast<std::uint16_t>(attr);
    return h;
}

// Writes the 256-byte MAD: `header` with its attribute ID replaced by the
// message's, then the message. Every byte of `out` is written.
template <CmMessage M>
void encode_cm_mad(const MadHeader& header, const M& msg,
                   std::span<std::uint8_t, kMadSize> out) noexcept {
    MadHeader h = header;
    h.attr_id = static_cast<std::uint16_t>(M::kAttr);
    h.store(out.data());
    msg.store(out.data() + kMadHeaderSize);
}

using CmMessageVariant =
    std::variant<CmReq, CmMra, CmRej, CmRep, CmRtu, CmDreq, CmDrep, CmSidrReq, CmSidrRep>;

struct ParsedCmMad {
    MadHeader header;
    CmAttr attr = CmAttr::req; // the message the variant holds
    CmMessageVariant message;
};

// Why a buffer is not a CM MAD this codec reads, checked in this order. The
// names (cm_mad_error_name) are counter names.
enum class CmMadError : std::uint8_t {
    none,
    too_short,         // fewer than 256 bytes
    bad_base_version,  // not 1
    not_cm_class,      // management class not 0x07
    bad_class_version, // not 2
    not_send,          // method not Send (0x03)
    unknown_attribute, // not REQ, MRA, REJ, REP, RTU, DREQ, DREP, SIDR_REQ, SIDR_REP
};
inline constexpr std::size_t kCmMadErrorCount = 7;
[[nodiscard]] const char* cm_mad_error_name(CmMadError error) noexcept;

// Checks and reads the MAD in the first 256 bytes of `mad` (a UD payload;
// bytes after the 256th are ignored). Reads nothing outside `mad`. On an
// error `out` is unspecified.
[[nodiscard]] CmMadError parse_cm_mad(std::span<const std::uint8_t> mad, ParsedCmMad& out) noexcept;

} // namespace rdmasim::net
