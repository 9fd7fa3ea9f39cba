#include "sim/config.hpp"
#include "sim/config_checks.hpp"
#include "sim/config_parse.hpp"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <sched.h>

namespace rdmasim::sim {

namespace {

using namespace config_parse;

// `key` as one of the port keys (mac, ip, ip6, mtu, or NAME.N): its name
// and device index (-1: a bad index).
std::optional<std::pair<std::string_view, int>> port_key(std::string_view key) {
    for (std::string_view name : {"mac", "ip", "ip6", "mtu"}) {
        if (key == name) return std::pair{name, 0};
        if (key.starts_with(name) && key.size() > name.size() && key[name.size()] == '.') {
            auto n = parse_uint<std::uint32_t>(key.substr(name.size() + 1), 0, 15);
            return std::pair{name, n ? static_cast<int>(*n) : -1};
        }
    }
    return std::nullopt;
}

// An address a port can own: not unspecified, broadcast, multicast or loopback.
bool port_ipv4(const net::Ipv4Address& ip) {
    return ip != net::Ipv4Address{} && ip != net::Ipv4Address{255, 255, 255, 255} && (ip[0] & 0xf0) != 0xe0 &&
           ip[0] != 127;
}
bool port_ipv6(const net::Ipv6Address& ip) {
    const net::Ipv6Address loopback{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return ip != net::Ipv6Address{} && ip != loopback && ip[0] != 0xff;
}

Result<void> set_port_key(PortSettings& port, std::string_view name, std::string_view key, std::string_view v) {
    if (name == "mac") {
        auto mac = net::parse_mac(v);
        if (!mac) return bad(key, v, "a MAC address like 02:00:00:00:00:01");
        if (!net::is_unicast(*mac) || *mac == net::MacAddress{})
            return bad(key, v, "a unicast MAC address (first byte even, not all zero) like 02:00:00:00:00:01");
        port.mac = *mac;
    } else if (name == "ip") {
        auto ip = net::parse_ipv4(v);
        if (!ip) return bad(key, v, "an IPv4 address like 192.0.2.1");
        if (!port_ipv4(*ip))
            return bad(key, v, "an IPv4 address a port can own (not 0.0.0.0, broadcast, multicast or 127/8) like 192.0.2.1");
        port.ip = *ip;
    } else if (name == "ip6") {
        auto ip = net::parse_ipv6(v);
        if (!ip) return bad(key, v, "an IPv6 address like fe80::1");
        if (!port_ipv6(*ip)) return bad(key, v, "an IPv6 address a port can own (not ::, ::1 or multicast) like fe80::1");
        port.ip6 = *ip;
    } else {
        auto n = parse_uint<std::uint32_t>(v, 256, 4096);
        if (!n || (*n & (*n - 1)) != 0) return bad(key, v, "256, 512, 1024, 2048 or 4096");
        port.mtu = *n;
    }
    return {};
}

// Capability switches by name.
bool* cap_switch(device::Capabilities& c, std::string_view key) {
    if (key == "caps.cvlan_stripping") return &c.cvlan_stripping;
    if (key == "caps.scatter_fcs") return &c.scatter_fcs;
    if (key == "caps.ip_csum") return &c.ip_csum;
    if (key == "caps.delay_drop") return &c.delay_drop;
    if (key == "caps.pci_write_end_padding") return &c.pci_write_end_padding;
    if (key == "caps.delay_drop_needs_rawio") return &c.delay_drop_needs_rawio;
    if (key == "caps.delay_drop_rearm") return &c.delay_drop_rearm;
    if (key == "caps.deliver_bad_fcs") return &c.deliver_bad_fcs;
    return nullptr;
}

// "rdmasim0:rdmasim1,rdmasim2:rdmasim3" as index pairs; a device links to
// another one, never to itself.
std::optional<std::vector<std::pair<std::uint32_t, std::uint32_t>>> parse_links(std::string_view v) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
    auto device = [](std::string_view name) -> std::optional<std::uint32_t> {
        if (!name.starts_with("rdmasim")) return std::nullopt;
        return parse_uint<std::uint32_t>(name.substr(7), 0, 15);
    };
    while (!v.empty()) {
        const auto comma = v.find(',');
        const std::string_view pair = v.substr(0, comma);
        v = comma == std::string_view::npos ? std::string_view{} : v.substr(comma + 1);
        const auto colon = pair.find(':');
        if (colon == std::string_view::npos) return std::nullopt;
        auto a = device(pair.substr(0, colon));
        auto b = device(pair.substr(colon + 1));
        if (!a || !b || *a == *b) return std::nullopt;
        out.emplace_back(*a, *b);
    }
    if (out.empty()) return std::nullopt;
    return out;
}

} // namespace

const std::vector<std::pair<std::string_view, std::vector<std::string> Config::*>>&
Config::device_keys() {
    static const std::vector<std::pair<std::string_view, std::vector<std::string> Config::*>> k{
        {"pcap", &Config::pcap},           {"iface", &Config::iface},
        {"pcap_live", &Config::pcap_live}, {"wire", &Config::wire},
        {"tx_capture", &Config::tx_capture},
    };
    return k;
}

namespace {

// `key` as a per-device key: its storage and device index (-1: a bad index).
std::optional<std::pair<std::vector<std::string> Config::*, int>> device_key(std::string_view key) {
    for (const auto& [name, member] : Config::device_keys()) {
        if (key == name) return std::pair{member, 0};
        if (key.starts_with(name) && key.size() > name.size() && key[name.size()] == '.') {
            auto n = parse_uint<std::uint32_t>(key.substr(name.size() + 1), 0, 15);
            return std::pair{member, n ? static_cast<int>(*n) : -1};
        }
    }
    return std::nullopt;
}

} // namespace

std::string environment_name(std::string_view key) {
    std::string s = "RDMASIM_";
    for (char ch : key)
        s += ch == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return s;
}

const KeyInfo* Config::find_key(std::string_view key) {
    for (const KeyInfo& info : keys()) {
        if (key == info.key) return &info;
        if (!info.key.ends_with(".N")) continue;
        const std::string_view stem = info.key.substr(0, info.key.size() - 1); // "pcap."
        if (key.size() > stem.size() && key.starts_with(stem)) return &info;
    }
    return nullptr;
}

namespace {

// One family of keys, set on `c`: nullopt when `key` is none of its keys,
// else what setting it gave. Config::set asks each family in turn.

// devices, the per-device source keys (pcap.N, ...) and the port keys (mac.N, ...).
Outcome set_layout_key(Config& c, std::string_view key, std::string_view v) {
    if (key == "devices") {
        auto n = parse_uint<std::uint32_t>(v, 1, 16);
        if (!n) return bad(key, v, "a number from 1 to 16");
        c.devices = *n;
        return Result<void>{};
    }
    if (auto per_device = device_key(key)) {
        auto [member, idx] = *per_device;
        if (idx < 0)
            return bad(key, v, fmt::format("{}.N with N a device index 0..15", key.substr(0, key.find('.'))));
        if (auto r = check_device_value(key, v); !r) return r;
        auto& slots = c.*member;
        if (slots.size() <= static_cast<std::size_t>(idx)) slots.resize(static_cast<std::size_t>(idx) + 1);
        slots[static_cast<std::size_t>(idx)] = std::string(v);
        return Result<void>{};
    }
    if (auto port = port_key(key)) {
        auto [name, idx] = *port;
        if (idx < 0) return bad(key, v, fmt::format("{}.N with N a device index 0..15", name));
        if (c.ports.size() <= static_cast<std::size_t>(idx)) c.ports.resize(static_cast<std::size_t>(idx) + 1);
        return set_port_key(c.ports[static_cast<std::size_t>(idx)], name, key, v);
    }
    return std::nullopt;
}

// `wire_mode`: octal digits, as chmod takes them ("660" and "0660" alike).
Result<void> set_wire_mode(Config& c, std::string_view key, std::string_view v) {
    std::uint32_t m = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), m, 8);
    if (v.empty() || ec != std::errc{} || p != v.data() + v.size() || m > 0777 || (m & 0600) != 0600)
        return bad(key, v, "an octal mode with owner read and write, like 0600 or 0660");
    c.wire_mode = m;
    return {};
}

Result<void> set_rank(Config& c, std::string_view key, std::string_view v) {
    if (v == "auto" || v == "off") {
        c.rank_auto = v == "auto";
        c.rank.reset();
        return {};
    }
    auto n = parse_uint<std::uint32_t>(v, 0, kMaxRank);
    if (!n) return bad(key, v, fmt::format("auto, off or a rank 0..{}", kMaxRank));
    c.rank_auto = false;
    c.rank = *n;
    return {};
}

// deterministic, the output files, faults, wire_mode, filter, promisc, link, rank, log_level,
// device_nodes.
Outcome set_run_key(Config& c, std::string_view key, std::string_view v) {
    if (key == "deterministic" || key == "promisc") {
        auto b = parse_bool(v);
        if (!b) return bad(key, v, "on or off");
        if (key == "promisc") c.promisc = *b;
        else if (*b) c.engine = EngineKind::inline_; // off leaves the engine as configured
    } else if (key == "trace" || key == "stats" || key == "report") {
        if (auto r = check_output_file(key, v); !r) return r;
        (key == "trace" ? c.trace : key == "stats" ? c.stats : c.report) = std::string(v);
    } else if (key == "faults") {
        auto plan = FaultPlan::parse(v);
        if (!plan) return make_error(EINVAL, fmt::format("configuration: {} = '{}': {}", key, v, plan.error().message));
        c.faults = std::string(v);
        c.fault_plan = std::move(plan.value());
    } else if (key == "wire_mode") {
        return set_wire_mode(c, key, v);
    } else if (key == "filter") {
        if (auto r = check_filter(key, v); !r) return r;
        c.filter = std::string(v);
    } else if (key == "link") {
        auto parsed = parse_links(v);
        if (!parsed) return bad(key, v, "pairs of devices like rdmasim0:rdmasim1, comma-separated");
        c.links = std::move(*parsed);
    } else if (key == "rank") {
        return set_rank(c, key, v);
    } else if (key == "log_level") {
        if (v != "trace" && v != "debug" && v != "info" && v != "warn" && v != "error" && v != "off")
            return bad(key, v, "trace, debug, info, warn, error or off");
        c.log_level = std::string(v);
    } else if (key == "device_nodes") {
        if (v == "auto") c.device_nodes = DeviceNodes::auto_;
        else if (v == "on") c.device_nodes = DeviceNodes::on;
        else if (v == "off") c.device_nodes = DeviceNodes::off;
        else return bad(key, v, "auto, on or off");
    } else {
        return std::nullopt;
    }
    return Result<void>{};
}

// source_fcs and the addresses of synthesized Ethernet headers.
Outcome set_source_key(Config& c, std::string_view key, std::string_view v) {
    if (key == "source_fcs") {
        if (v == "auto") c.source_fcs.reset();
        else if (v == "0") c.source_fcs = 0;
        else if (v == "4") c.source_fcs = 4;
        else return bad(key, v, "auto, 0 or 4");
    } else if (key == "synth_dst_mac") {
        auto mac = net::parse_mac(v);
        if (!mac) return bad(key, v, "a MAC address like 02:00:00:00:00:02");
        c.synth_dst_mac = *mac;
    } else if (key == "synth_src_mac") {
        auto mac = net::parse_mac(v);
        if (!mac || !net::is_unicast(*mac))
            return bad(key, v, "a unicast MAC address like 02:00:00:00:00:01");
        c.synth_src_mac = *mac;
    } else {
        return std::nullopt;
    }
    return Result<void>{};
}

// caps.*: the switches and the numbers.
Outcome set_caps_key(device::Capabilities& caps, std::string_view key, std::string_view v) {
    if (bool* sw = cap_switch(caps, key)) {
        auto b = parse_bool(v);
        if (!b) return bad(key, v, "on or off");
        *sw = *b;
    } else if (key == "caps.delay_drop_timeout_us") {
        auto n = parse_uint<std::uint64_t>(v, 100, 100'000);
        if (!n || *n % 100 != 0) return bad(key, v, "100..100000 microseconds in steps of 100");
        caps.delay_drop_timeout_ns = *n * 1000;
    } else if (key == "caps.cm_response_timeout" || key == "caps.cm_max_retries") {
        const bool timeout = key == "caps.cm_response_timeout";
        auto n = parse_uint<std::uint32_t>(v, 0, timeout ? 31 : 15);
        if (!n) return bad(key, v, timeout ? "a number from 0 to 31" : "a number from 0 to 15");
        (timeout ? caps.cm_response_timeout : caps.cm_max_retries) = static_cast<std::uint8_t>(*n);
    } else if (key == "caps.pad_align") {
        if (v == "64") caps.pad_align = 64;
        else if (v == "128") caps.pad_align = 128;
        else return bad(key, v, "64 or 128");
    } else if (key == "caps.max_wr" || key == "caps.max_sge") {
        const bool wr = key == "caps.max_wr";
        auto n = parse_uint<std::uint32_t>(v, 1, wr ? 1u << 20 : 64);
        if (!n) return bad(key, v, wr ? "a number from 1 to 1048576" : "a number from 1 to 64");
        (wr ? caps.max_wr : caps.max_sge) = *n;
    } else {
        return std::nullopt;
    }
    return Result<void>{};
}

} // namespace

Result<void> Config::set(std::string_view key, std::string_view v) {
    if (find_key(key) == nullptr)
        return make_error(EINVAL, fmt::format("configuration: unknown key '{}' (value '{}'; "
                                              "the keys: rdmasim config --reference)", key, v));
    for (auto* family : {set_layout_key, set_run_key, set_engine_key, set_source_key})
        if (auto r = family(*this, key, v)) return std::move(*r);
    if (auto r = set_caps_key(caps, key, v)) return std::move(*r);
    // In keys() but not parsed here: tests/sim/test_config.cpp catches it.
    return make_error(EINVAL, fmt::format("configuration: key '{}' (value '{}') has no parser", key, v));
}

Result<void> Config::apply_environment() {
    if (const char* file = std::getenv("RDMASIM_CONFIG"); file && *file) {
        if (auto r = apply_toml_file(file); !r) return r;
    }
    for (const KeyInfo& info : keys()) {
        const std::string_view key = info.key;
        if (key.ends_with(".N")) {
            for (int i = 0; i < 16; ++i) {
                const std::string k = fmt::format("{}.{}", key.substr(0, key.size() - 2), i);
                if (const char* v = std::getenv(environment_name(k).c_str()))
                    if (auto r = set(k, v); !r)
                        return make_error(EINVAL, fmt::format("{} (from {})", r.error().message,
                                                              environment_name(k)));
            }
            continue;
        }
        if (const char* v = std::getenv(environment_name(key).c_str()))
            if (auto r = set(key, v); !r)
                return make_error(EINVAL, fmt::format("{} (from {})", r.error().message, environment_name(key)));
    }
    return {};
}

} // namespace rdmasim::sim
