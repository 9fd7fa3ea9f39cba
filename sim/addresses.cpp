#include "sim/addresses.hpp"

#include <endian.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <vector>

namespace rdmasim::sim {

namespace {

// 64 random bits drawn once per process (getrandom(2); should it fail, the
// clock and the pid, which still differ between two processes).
std::uint64_t process_seed() {
    static std::once_flag once;
    static std::uint64_t seed = 0;
    std::call_once(once, [] {
        if (::getrandom(&seed, sizeof seed, 0) != static_cast<ssize_t>(sizeof seed))
            seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                   (static_cast<std::uint64_t>(::getpid()) << 32);
    });
    return seed;
}

std::uint64_t splitmix64(std::uint64_t x) noexcept {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

const PortSettings& settings(const Config& config, std::uint32_t index) {
    static const PortSettings none;
    return index < config.ports.size() ? config.ports[index] : none;
}

// Whether device `index` can meet another host: a wire or a live interface.
bool meets_other_hosts(const Config& config, std::uint32_t index) {
    const auto set = [&](const std::vector<std::string>& v) { return index < v.size() && !v[index].empty(); };
    return set(config.wire) || set(config.iface) || set(config.pcap_live);
}

// Device `index`'s MAC: configured, or the stable or random default, moved
// past the MACs configured for other devices. The stable default is only for
// devices that meet no other host: two deterministic processes on one wire
// would otherwise both be 02:52:44:4d:00:00.
net::MacAddress device_mac(const Config& config, std::uint32_t index) {
    if (const auto& mac = settings(config, index).mac) return *mac;
    net::MacAddress mac;
    if (!mac_drawn_at_random(config, index)) {
        mac = {0x02, 0x52, 0x44, 0x4d, 0x00, static_cast<std::uint8_t>(index)}; // "RDM"
    } else {
        const std::uint64_t r = splitmix64(process_seed() + index);
        // 02: locally administered, unicast; 40 random bits.
        mac = {0x02, static_cast<std::uint8_t>(r >> 32), static_cast<std::uint8_t>(r >> 24),
               static_cast<std::uint8_t>(r >> 16), static_cast<std::uint8_t>(r >> 8), static_cast<std::uint8_t>(r)};
    }
    const auto taken = [&](const net::MacAddress& candidate) {
        for (std::uint32_t j = 0; j < config.devices; ++j)
            if (j != index && settings(config, j).mac == candidate) return true;
        return false;
    };
    while (taken(mac))
        if (++mac[5] == 0) ++mac[4];
    return mac;
}

// The next address of 169.254.1.0 - 169.254.254.255 after `ip`, wrapping.
net::Ipv4Address next_link_local(net::Ipv4Address ip) noexcept {
    if (++ip[3] == 0 && ++ip[2] == 255) ip[2] = 1;
    return ip;
}

// Device `index`'s IPv4 address: configured, or derived from its MAC and
// moved past the addresses of the devices before it (configured or derived)
// and the configured ones after it.
net::Ipv4Address device_ipv4(const Config& config, std::uint32_t index) {
    std::vector<net::Ipv4Address> chosen; // devices 0..index, in order
    for (std::uint32_t i = 0; i <= index; ++i) {
        if (const auto& ip = settings(config, i).ip) {
            chosen.push_back(*ip);
            continue;
        }
        const auto taken = [&](const net::Ipv4Address& candidate) {
            for (const auto& ip : chosen)
                if (ip == candidate) return true;
            for (std::uint32_t j = i + 1; j < config.devices; ++j)
                if (settings(config, j).ip == candidate) return true;
            return false;
        };
        net::Ipv4Address ip = net::ipv4_link_local(device_mac(config, i));
        while (taken(ip)) ip = next_link_local(ip);
        chosen.push_back(ip);
    }
    return chosen[index];
}

} // namespace

bool mac_drawn_at_random(const Config& config, std::uint32_t index) {
    return !settings(config, index).mac &&
           !(config.engine == EngineKind::inline_ && !meets_other_hosts(config, index));
}

device::DeviceIdentity device_identity(const Config& config, std::uint32_t index) {
    device::DeviceIdentity id;
    id.name = fmt::format("rdmasim{}", index);
    id.index = index;
    id.mac = device_mac(config, index);
    // EUI-64 from the MAC (ff:fe in the middle), network order as verbs reports GUIDs.
    std::uint64_t g = 0;
    const std::uint8_t eui[8] = {id.mac[0], id.mac[1], id.mac[2], 0xff, 0xfe, id.mac[3], id.mac[4], id.mac[5]};
    for (std::uint8_t b : eui) g = g << 8 | b;
    id.node_guid = htobe64(g);
    id.ipv4 = device_ipv4(config, index);
    const PortSettings& port = settings(config, index);
    id.ipv6 = port.ip6 ? *port.ip6 : net::ipv6_link_local(id.mac);
    id.mtu = port.mtu.value_or(1024);
    return id;
}

} // namespace rdmasim::sim
