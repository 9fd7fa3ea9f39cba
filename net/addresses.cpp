#include "net/addresses.hpp"

#include <arpa/inet.h>

#include <cctype>
#include <charconv>
#include <cstdio>

namespace rdmasim::net {

std::optional<MacAddress> parse_mac(std::string_view v) {
    MacAddress mac{};
    if (v.size() != 17) return std::nullopt;
    for (std::size_t i = 0; i < mac.size(); ++i) {
        const std::string_view byte = v.substr(i * 3, 2);
        if (i + 1 < mac.size() && v[i * 3 + 2] != ':') return std::nullopt;
        if (!std::isxdigit(static_cast<unsigned char>(byte[0])) ||
            !std::isxdigit(static_cast<unsigned char>(byte[1])))
            return std::nullopt;
        std::from_chars(byte.data(), byte.data() + 2, mac[i], 16);
    }
    return mac;
}

std::optional<Ipv4Address> parse_ipv4(std::string_view v) {
    Ipv4Address ip{};
    for (std::size_t i = 0; i < ip.size(); ++i) {
        const auto dot = v.find('.');
        const std::string_view field = v.substr(0, dot);
        if (i + 1 < ip.size() ? dot == std::string_view::npos : dot != std::string_view::npos)
            return std::nullopt;
        if (field.empty() || field.size() > 3 || (field.size() > 1 && field[0] == '0')) return std::nullopt;
        unsigned n = 0;
        const auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), n);
        if (ec != std::errc{} || p != field.data() + field.size() || n > 255) return std::nullopt;
        ip[i] = static_cast<std::uint8_t>(n);
        v = dot == std::string_view::npos ? std::string_view{} : v.substr(dot + 1);
    }
    return ip;
}

std::optional<Ipv6Address> parse_ipv6(std::string_view v) {
    Ipv6Address ip{};
    const std::string text(v);
    if (::inet_pton(AF_INET6, text.c_str(), ip.data()) != 1) return std::nullopt;
    return ip;
}

std::string to_string(const MacAddress& m) {
    char text[18];
    std::snprintf(text, sizeof text, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
    return text;
}

std::string to_string(const Ipv4Address& ip) {
    char text[16];
    std::snprintf(text, sizeof text, "%u.%u.%u.%u", ip[0], ip[1], ip[2], ip[3]);
    return text;
}

std::string to_string(const Ipv6Address& ip) {
    char text[INET6_ADDRSTRLEN];
    if (::inet_ntop(AF_INET6, ip.data(), text, sizeof text) == nullptr) return "?";
    return text;
}

Ipv6Address ipv6_link_local(const MacAddress& m) noexcept {
    return {0xfe, 0x80, 0, 0, 0, 0, 0, 0,
            static_cast<std::uint8_t>(m[0] ^ 0x02), m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]};
}

Ipv6Address ipv4_mapped(const Ipv4Address& ip) noexcept {
    return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ip[0], ip[1], ip[2], ip[3]};
}

Ipv4Address ipv4_link_local(const MacAddress& mac) noexcept {
    return {169, 254, static_cast<std::uint8_t>(1 + mac[4] % 254), mac[5]};
}

} // namespace rdmasim::net
