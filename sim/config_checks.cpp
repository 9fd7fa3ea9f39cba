#include "sim/config_checks.hpp"

#include <net/if.h>
#include <pcap/pcap.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "net/vde_wire.hpp"
#include "sim/config.hpp"

namespace rdmasim::sim {

namespace {

Error bad(std::string_view key, std::string_view value, std::string_view expected) {
    return make_error(EINVAL, fmt::format("configuration: {} = '{}': expected {}", key, value, expected));
}

// The key's name without its device index: "wire.1" -> "wire".
std::string_view stem(std::string_view key) { return key.substr(0, key.find('.')); }

Result<void> check_wire(std::string_view key, std::string_view v) {
    constexpr std::string_view forms =
        "ptp://PATH, vde://PATH, vxvde://GROUP or shm://PATH (libvdeplug's other schemes are refused)";
    for (const std::string_view scheme : {"ptp://", "vde://", "shm://"}) {
        if (!v.starts_with(scheme)) continue;
        const std::string_view path = v.substr(scheme.size());
        if (path.empty()) return bad(key, v, fmt::format("{} with a socket path after {}", forms, scheme));
        if (scheme == "ptp://" && path.size() > net::VdeWire::kMaxPtpPath)
            return bad(key, v, fmt::format("a ptp:// socket path of at most {} bytes (this one has {})",
                                           net::VdeWire::kMaxPtpPath, path.size()));
        return {};
    }
    if (v.starts_with("vxvde://")) return {};
    return bad(key, v, forms);
}

bool blank_or_control(char c) { return c == ' ' || c == '\t' || (static_cast<unsigned char>(c) < 0x20); }

} // namespace

Result<void> check_device_value(std::string_view key, std::string_view v) {
    if (v.empty()) return {}; // none
    const std::string_view name = stem(key);
    if (name == "wire") return check_wire(key, v);
    if (name == "iface" || name == "pcap_live") {
        if (v.size() >= IFNAMSIZ || v == "." || v == ".." || v.find('/') != std::string_view::npos ||
            std::any_of(v.begin(), v.end(), blank_or_control))
            return bad(key, v, fmt::format("an interface name (1 to {} characters, no '/' or blank)", IFNAMSIZ - 1));
        return {};
    }
    if (v.ends_with('/')) return bad(key, v, "a file name, not a directory");
    return {};
}

Result<void> check_output_file(std::string_view key, std::string_view v) {
    if (v.empty() || (v == "-" && key != "trace")) return {};
    if (v.ends_with('/'))
        return bad(key, v, key == "trace" ? "a file name, not a directory"
                                          : "a file name (not a directory), or - for standard output");
    return {};
}

Result<void> check_filter(std::string_view key, std::string_view v) {
    if (v.empty()) return {};
    pcap_t* dead = pcap_open_dead(DLT_EN10MB, 262144);
    if (dead == nullptr) return make_error(ENOMEM, "configuration: filter: cannot compile it (pcap_open_dead)");
    bpf_program prog{};
    const std::string expr(v);
    const int rc = pcap_compile(dead, &prog, expr.c_str(), 1, PCAP_NETMASK_UNKNOWN);
    const std::string why = rc == 0 ? "" : pcap_geterr(dead);
    if (rc == 0) pcap_freecode(&prog);
    pcap_close(dead);
    if (rc != 0) return bad(key, v, fmt::format("a BPF expression in tcpdump's syntax ({})", why));
    return {};
}

Result<void> Config::check_files() const {
    // Inputs must be readable files; outputs need their directory.
    const auto fail = [](int err, const std::string& key, const std::string& v, std::string_view why) {
        return make_error(err, fmt::format("configuration: {} = '{}': {}", key, v, why));
    };
    const auto key_of = [](std::string_view name, std::size_t i) {
        return i == 0 ? std::string(name) : fmt::format("{}.{}", name, i);
    };
    struct stat st{};
    for (std::size_t i = 0; i < pcap.size(); ++i) {
        if (pcap[i].empty()) continue;
        if (::stat(pcap[i].c_str(), &st) != 0 || ::access(pcap[i].c_str(), R_OK) != 0)
            return fail(errno, key_of("pcap", i), pcap[i], std::strerror(errno));
        if (S_ISDIR(st.st_mode)) return fail(EISDIR, key_of("pcap", i), pcap[i], "a directory, not a capture");
    }
    std::vector<std::pair<std::string, std::string>> outputs;
    for (std::size_t i = 0; i < tx_capture.size(); ++i) outputs.emplace_back(key_of("tx_capture", i), tx_capture[i]);
    outputs.emplace_back("trace", trace);
    outputs.emplace_back("stats", stats);
    outputs.emplace_back("report", report);
    for (const auto& [key, v] : outputs) {
        if (v.empty() || (v == "-" && key != "trace" && !key.starts_with("tx_capture"))) continue;
        if (::stat(v.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
            return fail(EISDIR, key, v, "a directory, not a file");
        const auto slash = v.find_last_of('/');
        const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : v.substr(0, slash);
        if (::stat(dir.c_str(), &st) != 0)
            return fail(errno, key, v, fmt::format("its directory {}: {}", dir, std::strerror(errno)));
        if (!S_ISDIR(st.st_mode)) return fail(ENOTDIR, key, v, fmt::format("{} is not a directory", dir));
    }
    return {};
}

namespace {

// Which key gave each device its source: a second one is an error.
class SourceClaims {
public:
    explicit SourceClaims(std::uint32_t devices) : source_of_(devices) {}
    Result<void> claim(std::uint32_t i, std::string what) {
        if (!source_of_[i].empty())
            return make_error(EINVAL, fmt::format("configuration: device {} has two sources, {} and {}; "
                                                  "a port receives from one", i, source_of_[i], what));
        source_of_[i] = std::move(what);
        return {};
    }

private:
    std::vector<std::string> source_of_; // the key that gave device i its source
};

// The per-device keys: for devices that exist, one source each.
Result<void> check_device_keys(const Config& c, SourceClaims& claims) {
    for (const auto& [name, member] : Config::device_keys()) {
        const auto& slots = c.*member;
        for (std::size_t i = 0; i < slots.size(); ++i) {
            if (slots[i].empty()) continue;
            const std::string key = i == 0 ? std::string(name) : fmt::format("{}.{}", name, i);
            if (i >= c.devices)
                return make_error(EINVAL, fmt::format("configuration: {}.{} = '{}' names device {} but devices = {}",
                                                      name, i, slots[i], i, c.devices));
            if (name != "tx_capture")
                if (auto r = claims.claim(static_cast<std::uint32_t>(i), fmt::format("{} = '{}'", key, slots[i])); !r)
                    return r;
        }
    }
    return {};
}

// Port settings: for devices that exist; no address twice in one process.
Result<void> check_ports(const Config& c) {
    for (std::size_t i = 0; i < c.ports.size(); ++i) {
        const PortSettings& p = c.ports[i];
        if (i >= c.devices && (p.mac || p.ip || p.ip6 || p.mtu))
            return make_error(EINVAL, fmt::format("configuration: mac.{0}, ip.{0}, ip6.{0} or mtu.{0} set for device {0} "
                                                  "but devices = {1}", i, c.devices));
        for (std::size_t j = 0; j < i; ++j) {
            const PortSettings& q = c.ports[j];
            if (p.mac && q.mac && *p.mac == *q.mac)
                return make_error(EINVAL, fmt::format("configuration: devices {} and {} have the same mac {}", j, i,
                                                      net::to_string(*p.mac)));
            if (p.ip && q.ip && *p.ip == *q.ip)
                return make_error(EINVAL, fmt::format("configuration: devices {} and {} have the same ip {}", j, i,
                                                      net::to_string(*p.ip)));
        }
    }
    return {};
}

// engine_cpus: thread engines only, one CPU per device at most, CPUs this process may use.
Result<void> check_engine_cpus(const Config& c) {
    if (c.engine_cpus.empty()) return {};
    if (c.engine != EngineKind::thread)
        return make_error(EINVAL, "configuration: engine_cpus places the thread engine's threads; "
                                  "engine = inline (or deterministic = on) has none");
    if (c.engine_cpus.size() > c.devices)
        return make_error(EINVAL, fmt::format("configuration: engine_cpus lists {} CPUs for {} device(s)",
                                              c.engine_cpus.size(), c.devices));
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return {};
    for (const int cpu : c.engine_cpus) {
        if (CPU_ISSET(cpu, &allowed)) continue;
        std::string list;
        for (int n = 0; n < CPU_SETSIZE; ++n)
            if (CPU_ISSET(n, &allowed)) list += fmt::format("{}{}", list.empty() ? "" : ",", n);
        return make_error(EINVAL, fmt::format("configuration: engine_cpus: this process may not run on "
                                              "CPU {} (it may on {})", cpu, list));
    }
    return {};
}

// Links: between devices that exist, each end's only source.
Result<void> check_links(const Config& c, SourceClaims& claims) {
    for (const auto& [a, b] : c.links) {
        for (const std::uint32_t i : {a, b}) {
            if (i >= c.devices)
                return make_error(EINVAL, fmt::format("configuration: link rdmasim{}:rdmasim{} names device {} but devices = {}",
                                                      a, b, i, c.devices));
            if (auto r = claims.claim(i, fmt::format("link rdmasim{}:rdmasim{}", a, b)); !r) return r;
        }
    }
    return {};
}

} // namespace

Result<void> Config::validate() const {
    SourceClaims claims(devices);
    if (auto r = check_device_keys(*this, claims); !r) return r;
    if (auto r = check_ports(*this); !r) return r;
    if (auto r = check_engine_cpus(*this); !r) return r;
    return check_links(*this, claims);
}

} // namespace rdmasim::sim
