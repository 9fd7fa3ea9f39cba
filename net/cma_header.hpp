// RDMA CM's IP addressing on the IB CM, as Linux's rdma_cm puts it on the
// wire: the service ID of a port space and port, and the 36-byte header at
// the start of a REQ's and a SIDR_REQ's private data (the consumer's private
// data follows it). The header is a plain struct of host-order fields with
// `load`/`store`; the caller guarantees kSize bytes at the pointer.
// (net/README.md, "CM MADs")
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "net/cm_mad.hpp"
#include "net/roce_headers.hpp"

namespace rdmasim::net {

// rdma_cm port spaces (enum rdma_ucm_port_space) that address by IP and port.
enum class RdmaPortSpace : std::uint16_t { tcp = 0x0106, udp = 0x0111, ib = 0x013f };

// Every rdma_cm service ID lies in 0x0000000001xxxxxx (IB_CMA_SERVICE_ID and
// its mask); the port space is bits 31..16, the port bits 15..0.
inline constexpr std::uint64_t kCmaServiceIdPrefix = 0x0000000001000000;
inline constexpr std::uint64_t kCmaServiceIdMask = 0xffffffffff000000;
inline constexpr std::uint64_t kCmaPortSpaceMask = 0xffffffffffff0000; // RDMA_IB_IP_PS_MASK
inline constexpr std::uint64_t kCmaPortMask = 0x000000000000ffff;      // RDMA_IB_IP_PORT_MASK

// (ps << 16) + port: TCP port 7471 is 0x0000000001061d2f.
[[nodiscard]] constexpr std::uint64_t cma_service_id(RdmaPortSpace ps,
                                                     std::uint16_t port) noexcept {
    return (std::uint64_t{static_cast<std::uint16_t>(ps)} << 16) | port;
}
// The port space of an rdma_cm service ID; nullopt outside the prefix or
// for a port space other than TCP, UDP and IB.
[[nodiscard]] constexpr std::optional<RdmaPortSpace> cma_port_space(std::uint64_t sid) noexcept {
    if ((sid & kCmaServiceIdMask) != kCmaServiceIdPrefix) return std::nullopt;
    const auto ps = static_cast<RdmaPortSpace>((sid >> 16) & 0xffff);
    if (ps == RdmaPortSpace::tcp || ps == RdmaPortSpace::udp || ps == RdmaPortSpace::ib) return ps;
    return std::nullopt;
}
[[nodiscard]] constexpr std::uint16_t cma_port(std::uint64_t sid) noexcept {
    return static_cast<std::uint16_t>(sid & kCmaPortMask);
}

inline constexpr std::uint8_t kCmaVersion = 0x00;
inline constexpr std::size_t kCmaIpHeaderSize = 36;
// What is left to the consumer after the header (rdma_connect's limits on IB).
inline constexpr std::size_t kCmaReqUserDataSize = kCmReqPrivateDataSize - kCmaIpHeaderSize;
inline constexpr std::size_t kCmaSidrReqUserDataSize = kCmSidrReqPrivateDataSize - kCmaIpHeaderSize;

using CmaIpAddr = std::array<std::uint8_t, 16>; // network order

// 36 bytes: CMA version (0); IP version in bits 7..4 of byte 1 (3..0
// reserved, written 0); the active side's source port (network order); the
// source and destination addresses, 16 bytes each: an IPv6 address, or an
// IPv4 one in the last 4 bytes after 12 zero bytes (not ::ffff:a.b.c.d).
struct CmaIpHeader {
    static constexpr std::size_t kSize = kCmaIpHeaderSize;
    std::uint8_t cma_version = kCmaVersion;
    std::uint8_t ip_version = 4; // 4 or 6; 4 bits on the wire
    std::uint16_t port = 0;
    CmaIpAddr src_addr{};
    CmaIpAddr dst_addr{};

    static CmaIpHeader load(const std::uint8_t* p) noexcept {
        CmaIpHeader h;
        h.cma_version = p[0];
        h.ip_version = static_cast<std::uint8_t>(p[1] >> 4);
        h.port = static_cast<std::uint16_t>((p[2] << 8) | p[3]);
        for (std::size_t i = 0; i < 16; ++i) {
            h.src_addr[i] = p[4 + i];
            h.dst_addr[i] = p[20 + i];
        }
        return h;
    }
    void store(std::uint8_t* p) const noexcept {
        p[0] = cma_version;
        p[1] = static_cast<std::uint8_t>((ip_version & 0x0f) << 4);
        roce_detail::store_be16(p + 2, port);
        for (std::size_t i = 0; i < 16; ++i) {
            p[4 + i] = src_addr[i];
            p[20 + i] = dst_addr[i];
        }
    }
    // An IPv4 header: the addresses (network order) in the last 4 bytes.
    static CmaIpHeader ipv4(const std::uint8_t src[4], const std::uint8_t dst[4],
                            std::uint16_t src_port) noexcept {
        CmaIpHeader h;
        h.port = src_port;
        for (std::size_t i = 0; i < 4; ++i) {
            h.src_addr[12 + i] = src[i];
            h.dst_addr[12 + i] = dst[i];
        }
        return h;
    }
    static CmaIpHeader ipv6(const CmaIpAddr& src, const CmaIpAddr& dst,
                            std::uint16_t src_port) noexcept {
        return {kCmaVersion, 6, src_port, src, dst};
    }
    bool operator==(const CmaIpHeader&) const = default;
};

// Why a received header is refused (the kernel refuses the same REQs).
enum class CmaHeaderError : std::uint8_t { none, bad_cma_version, bad_ip_version };

[[nodiscard]] constexpr CmaHeaderError check_cma_ip_header(const CmaIpHeader& h) noexcept {
    if (h.cma_version != kCmaVersion) return CmaHeaderError::bad_cma_version;
    if (h.ip_version != 4 && h.ip_version != 6) return CmaHeaderError::bad_ip_version;
    return CmaHeaderError::none;
}
[[nodiscard]] constexpr const char* cma_header_error_name(CmaHeaderError error) noexcept {
    switch (error) {
    case CmaHeaderError::none:
        return "none";
    case CmaHeaderError::bad_cma_version:
        return "bad_cma_version";
    case CmaHeaderError::bad_ip_version:
        return "bad_ip_version";
    }
    return "unknown";
}

} // namespace rdmasim::net
