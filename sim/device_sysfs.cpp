#include "sim/device_sysfs.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include "device/abi/sysfs.hpp"
#include "device/abi/sysfs_text.hpp"
#include "device/context.hpp"
#include "sim/addresses.hpp"

namespace rdmasim::sim {

namespace {

// Whether device `index`'s IPv4 address is the same in every process: set
// by `ip`, or derived from MACs (its own and those of the devices before it,
// which it is moved past) none of which is random.
bool ipv4_fixed(const Config& config, std::uint32_t index) {
    if (index < config.ports.size() && config.ports[index].ip) return true;
    for (std::uint32_t i = 0; i <= index; ++i)
        if (mac_drawn_at_random(config, i)) return false;
    return true;
}

bool ipv6_fixed(const Config& config, std::uint32_t index) {
    return (index < config.ports.size() && config.ports[index].ip6) ||
           !mac_drawn_at_random(config, index);
}

std::string host_name() {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    return host;
}

// The GID table of port 1 (device/README.md, "The GID table"): entries 0
// (::ffff:IPv4) and 1 (IPv6) when fixed, the zero GID from 2 to 255.
void add_gids(std::vector<SysfsEntry>& out, const std::string& port, const Config& config,
              std::uint32_t index, const std::string& netdev) {
    const device::DeviceIdentity id = device_identity(config, index);
    const net::Ipv6Address gid0 = net::ipv4_mapped(id.ipv4);
    const bool fixed[2] = {ipv4_fixed(config, index), ipv6_fixed(config, index)};
    const std::uint8_t* raw[2] = {gid0.data(), id.ipv6.data()};
    static constexpr std::uint8_t zero[16] = {};
    for (int i = 0; i < 2; ++i) {
        if (fixed[i])
            out.push_back(
                {fmt::format("{}/gids/{}", port, i), device::sysfs_gid_text(raw[i]) + "\n"});
        out.push_back({fmt::format("{}/gid_attrs/types/{}", port, i), "RoCE v2\n"});
        if (!netdev.empty())
            out.push_back({fmt::format("{}/gid_attrs/ndevs/{}", port, i), netdev + "\n"});
    }
    for (int i = 2; i < device::kGidTableLen; ++i)
        out.push_back({fmt::format("{}/gids/{}", port, i), device::sysfs_gid_text(zero) + "\n"});
}

void add_device(std::vector<SysfsEntry>& out, const Config& config, std::uint32_t index,
                const std::string& netdev) {
    const std::string name = fmt::format("rdmasim{}", index);
    const std::string dir = "infiniband/" + name;
    const auto file = [&](const std::string& rel, const std::string& text) {
        out.push_back({dir + "/" + rel, text + "\n"});
    };
    file("node_type", "1: CA");
    file("board_id", "RDMASIM");
    file("fw_ver", device::firmware_version);
    file("hca_type", "rdmasim");
    const std::string host = host_name();
    file("node_desc", host.empty() ? name : host + " " + name);
    if (!mac_drawn_at_random(config, index)) {
        const std::string guid = device::sysfs_guid_text(device_identity(config, index).node_guid);
        file("node_guid", guid);
        file("sys_image_guid", guid);
    }
    file("ports/1/link_layer", "Ethernet");
    file("ports/1/state", "4: ACTIVE");
    file("ports/1/phys_state", "5: LinkUp");
    file("ports/1/pkeys/0", "0xffff");
    add_gids(out, dir + "/ports/1", config, index, netdev);
    file("device/numa_node", "-1");
    if (!netdev.empty())
        out.push_back({dir + "/device/net/" + netdev, "../../../../net/" + netdev, true});
    out.push_back({fmt::format("infiniband_verbs/uverbs-{}/ibdev", name), name + "\n"});
}

} // namespace

std::vector<SysfsEntry> device_sysfs(const Config& config,
                                     const std::vector<std::string>& netdevs) {
    std::vector<SysfsEntry> out;
    for (std::uint32_t i = 0; i < config.devices; ++i)
        add_device(out, config, i, i < netdevs.size() ? netdevs[i] : std::string());
    return out;
}

} // namespace rdmasim::sim
