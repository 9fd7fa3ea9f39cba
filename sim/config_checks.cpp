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
        "ptp://PATH, vde://PATH or vxvde://GROUP (libvdeplug's other schemes are refused)";
    for (const std::string_view scheme : {"ptp://", "vde://"}) {
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

Result<void> Config::validate() const {
    std::vector<std::string> source_of(devices); // the key that gave device i its source
    auto claim = [&](std::uint32_t i, std::string what) -> Result<void> {
        if (!source_of[i].empty())
            return make_error(EINVAL, fmt::format("configuration: device {} has two sources, {} and {}; "
                                                  "a port receives from one", i, source_of[i], what));
        source_of[i] = std::move(what);
        return {};
    };
    for (const auto& [name, member] : device_keys()) {
        const auto& slots = this->*member;
        for (std::size_t i = 0; i < slots.size(); ++i) {
            if (slots[i].empty()) continue;
            const std::string key = i == 0 ? std::string(name) : fmt::format("{}.{}", name, i);
            if (i >= devices)
                return make_error(EINVAL, fmt::format("configuration: {}.{} = '{}' names device {} but devices = {}",
                                                      name, i, slots[i], i, devices));
            if (name != "tx_capture")
                if (auto r = claim(static_cast<std::uint32_t>(i), fmt::format("{} = '{}'", key, slots[i])); !r)
                    return r;
        }
    }
    // Port settings: for devices that exist; no address twice in one process.
    for (std::size_t i = 0; i < ports.size(); ++i) {
        const PortSettings& p = ports[i];
        if (i >= devices && (p.mac || p.ip || p.ip6 || p.mtu))
            return make_error(EINVAL, fmt::format("configuration: mac.{0}, ip.{0}, ip6.{0} or mtu.{0} set for device {0} "
                                                  "but devices = {1}", i, devices));
        for (std::size_t j = 0; j < i; ++j) {
            const PortSettings& q = ports[j];
            if (p.mac && q.mac && *p.mac == *q.mac)
                return make_error(EINVAL, fmt::format("configuration: devices {} and {} have the same mac {}", j, i,
                                                      net::to_string(*p.mac)));
            if (p.ip && q.ip && *p.ip == *q.ip)
                return make_error(EINVAL, fmt::format("configuration: devices {} and {} have the same ip {}", j, i,
                                                      net::to_string(*p.ip)));
        }
    }
    if (!engine_cpus.empty()) {
        if (engine != EngineKind::thread)
            return make_error(EINVAL, "configuration: engine_cpus places the thread engine's threads; "
                                      "engine = inline (or deterministic = on) has none");
        if (engine_cpus.size() > devices)
            return make_error(EINVAL, fmt::format("configuration: engine_cpus lists {} CPUs for {} device(s)",
                                                  engine_cpus.size(), devices));
        cpu_set_t allowed;
        CPU_ZERO(&allowed);
        if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
            for (const int cpu : engine_cpus) {
                if (CPU_ISSET(cpu, &allowed)) continue;
                std::string list;
                for (int c = 0; c < CPU_SETSIZE; ++c)
                    if (CPU_ISSET(c, &allowed)) list += fmt::format("{}{}", list.empty() ? "" : ",", c);
                return make_error(EINVAL, fmt::format("configuration: engine_cpus: this process may not run on "
                                                      "CPU {} (it may on {})", cpu, list));
            }
        }
    }
    for (const auto& [a, b] : links) {
        for (const std::uint32_t i : {a, b}) {
            if (i >= devices)
                return make_error(EINVAL, fmt::format("configuration: link rdmasim{}:rdmasim{} names device {} but devices = {}",
                                                      a, b, i, devices));
            if (auto r = claim(i, fmt::format("link rdmasim{}:rdmasim{}", a, b)); !r) return r;
        }
    }
    return {};
}

} // namespace rdmasim::sim
