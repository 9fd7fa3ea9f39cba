// parse_cm_mad: a received MAD checked and its CM message read; the names
// of attributes, REJ reasons and parse errors (net/cm_mad.hpp; net/README.md,
// "CM MADs"). The messages' own load and store: net/cm_mad.cpp.
#include <array>

#include "net/cm_mad.hpp"

namespace rdmasim::net {

namespace {

// Indexed by the reason's value; nullptr where none is assigned.
constexpr std::array<const char*, 36> kRejReasonNames = {
    nullptr,
    "no_qp",
    "no_eec",
    "no_resources",
    "timeout",
    "unsupported",
    "invalid_comm_id",
    "invalid_comm_instance",
    "invalid_service_id",
    "invalid_transport_type",
    "stale_conn",
    "rdc_not_exist",
    "invalid_gid",
    "invalid_lid",
    "invalid_sl",
    "invalid_traffic_class",
    "invalid_hop_limit",
    "invalid_packet_rate",
    "invalid_alt_gid",
    "invalid_alt_lid",
    "invalid_alt_sl",
    "invalid_alt_traffic_class",
    "invalid_alt_hop_limit",
    "invalid_alt_packet_rate",
    "port_cm_redirect",
    "port_redirect",
    "invalid_mtu",
    "insufficient_resp_resources",
    "consumer_reject",
    "invalid_rnr_retry",
    "duplicate_local_comm_id",
    "invalid_class_version",
    "invalid_flow_label",
    "invalid_alt_flow_label",
    nullptr,
    "vendor_option_not_supported",
};

template <class M> CmMadError take(const std::uint8_t* data, ParsedCmMad& out) noexcept {
    out.message.emplace<M>(M::load(data));
    out.attr = M::kAttr;
    return CmMadError::none;
}

} // namespace

const char* cm_attr_name(CmAttr attr) noexcept {
    switch (attr) {
    case CmAttr::class_port_info:
        return "ClassPortInfo";
    case CmAttr::req:
        return "REQ";
    case CmAttr::mra:
        return "MRA";
    case CmAttr::rej:
        return "REJ";
    case CmAttr::rep:
        return "REP";
    case CmAttr::rtu:
        return "RTU";
    case CmAttr::dreq:
        return "DREQ";
    case CmAttr::drep:
        return "DREP";
    case CmAttr::sidr_req:
        return "SIDR_REQ";
    case CmAttr::sidr_rep:
        return "SIDR_REP";
    }
    return "unknown";
}

const char* cm_rej_reason_name(CmRejReason reason) noexcept {
    const auto i = static_cast<std::size_t>(reason);
    return i < kRejReasonNames.size() && kRejReasonNames[i] ? kRejReasonNames[i] : "unknown";
}

const char* cm_mad_error_name(CmMadError error) noexcept {
    switch (error) {
    case CmMadError::none:
        return "none";
    case CmMadError::too_short:
        return "too_short";
    case CmMadError::bad_base_version:
        return "bad_base_version";
    case CmMadError::not_cm_class:
        return "not_cm_class";
    case CmMadError::bad_class_version:
        return "bad_class_version";
    case CmMadError::not_send:
        return "not_send";
    case CmMadError::unknown_attribute:
        return "unknown_attribute";
    }
    return "unknown";
}

CmMadError parse_cm_mad(std::span<const std::uint8_t> mad, ParsedCmMad& out) noexcept {
    if (mad.size() < kMadSize) return CmMadError::too_short;
    out.header = MadHeader::load(mad.data());
    const MadHeader& h = out.header;
    if (h.base_version != kMadBaseVersion) return CmMadError::bad_base_version;
    if (h.mgmt_class != kCmMgmtClass) return CmMadError::not_cm_class;
    if (h.class_version != kCmClassVersion) return CmMadError::bad_class_version;
    if (h.method != kMadMethodSend) return CmMadError::not_send;
    const std::uint8_t* data = mad.data() + kMadHeaderSize;
    switch (static_cast<CmAttr>(h.attr_id)) {
    case CmAttr::req:
        return take<CmReq>(data, out);
    case CmAttr::mra:
        return take<CmMra>(data, out);
    case CmAttr::rej:
        return take<CmRej>(data, out);
    case CmAttr::rep:
        return take<CmRep>(data, out);
    case CmAttr::rtu:
        return take<CmRtu>(data, out);
    case CmAttr::dreq:
        return take<CmDreq>(data, out);
    case CmAttr::drep:
        return take<CmDrep>(data, out);
    case CmAttr::sidr_req:
        return take<CmSidrReq>(data, out);
    case CmAttr::sidr_rep:
        return take<CmSidrRep>(data, out);
    case CmAttr::class_port_info:
        break;
    }
    return CmMadError::unknown_attribute;
}

} // namespace rdmasim::net
