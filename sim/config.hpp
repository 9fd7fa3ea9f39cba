// Configuration: one set of names, three spellings. A TOML file
// (RDMASIM_CONFIG), the environment (RDMASIM_<NAME>, dots as underscores,
// upper case) and CLI flags all land in Config::set(name, value), which
// validates and names the key and the value in every error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "device/caps.hpp"
#include "net/addresses.hpp"
#include "net/pcap_file_source.hpp"
#include "net/result.hpp"
#include "sim/fault_plan.hpp"

namespace rdmasim::sim {

enum class EngineKind { inline_, thread };
enum class StartTrigger { first_flow, now, delay, manual };
// Who moves a live source's frames under the thread engine (sim/README.md, "Progress").
enum class Progress { auto_, thread, inline_ };
// Whether `rdmasim run` shows the devices in /dev/infiniband and /sys/class
// (a private mount namespace, tools/README.md): auto tries, on must, off never.
enum class DeviceNodes { auto_, on, off };

// One configuration key as the reference shows it. `NAME.N` stands for
// NAME.0 .. NAME.15 (device N; NAME.0 is NAME).
struct KeyInfo {
    std::string_view key;
    std::string_view values;        // what set() accepts; "on, off" for a switch
    std::string_view default_value;
    std::string_view example;       // a value set() accepts, shown in every spelling
    std::string_view flag;          // the `rdmasim run`/`env` option setting it ("" = --set only)
    std::string_view description;
};

// One device's port addresses and MTU (keys mac, ip, ip6, mtu and their
// .N forms); what is unset is derived (sim/README.md, "Addresses").
struct PortSettings {
    std::optional<net::MacAddress> mac;   // unicast
    std::optional<net::Ipv4Address> ip;
    std::optional<net::Ipv6Address> ip6;
    std::optional<std::uint32_t> mtu;     // 256, 512, 1024, 2048 or 4096
};

inline constexpr std::uint32_t kMaxRank = 4095; // key `rank`

struct Config {
    std::uint32_t devices = 1;
    // Per device index ("" = none), keys `NAME` (device 0) and `NAME.N`. At
    // most one source per device: pcap, iface, pcap_live, wire or a link.
    std::vector<std::string> pcap;          // capture file replayed into the port
    std::vector<std::string> iface;         // live interface, AF_PACKET TPACKET_V3 ring
    std::vector<std::string> pcap_live;     // live interface through libpcap
    std::vector<std::string> wire;          // libvdeplug URL: ptp://PATH, vde://PATH, vxvde://GROUP
    std::vector<std::string> tx_capture;    // pcap file of the frames the port sends
    std::vector<PortSettings> ports;        // addresses and MTU, by device index
    std::uint32_t wire_mode = 0600;         // socket files a ptp:// or vde:// wire creates
    std::string filter;                     // BPF expression for pcap_live sources
    bool promisc = false;                   // live interfaces in promiscuous mode
    // Devices wired back to back in this process: pairs of device indexes.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> links;
    EngineKind engine = EngineKind::thread;
    Progress progress = Progress::auto_;
    StartTrigger start = StartTrigger::first_flow;
    std::uint64_t start_delay_ns = 0;
    double speed = 0;                       // 0 = topspeed, else a multiple of capture time
    std::uint32_t burst = 32;               // frames per engine step
    // The thread engine of device i runs only on CPU engine_cpus[i]; devices
    // past the list (and all, when it is empty) run where the scheduler puts them.
    std::vector<int> engine_cpus;
    std::optional<int> source_fcs;          // force the source FCS length (0 or 4)
    // Addresses of the Ethernet header synthesized for captures without one;
    // unset: the destination is the receiving device's MAC, the source net's default.
    std::optional<net::MacAddress> synth_dst_mac;
    std::optional<net::MacAddress> synth_src_mac;
    // The fault plan (key `faults`, or TOML [[fault]] tables): parsed when set.
    std::string faults;
    FaultPlan fault_plan;
    std::string trace; // --trace: completions and injected faults as JSON lines
    std::string stats; // --stats: every counter as one JSON document when the simulator stops
    std::string report; // an HTML report of device 0, written when the simulator stops
    std::uint64_t idle_tick_ns = 10'000;    // inline engine: virtual time per idle poll
    // Key `rank` (sim/rank.hpp): `auto` (rank_auto), `off` (neither), or N (rank).
    bool rank_auto = true;
    std::optional<std::uint32_t> rank;
    std::string log_level = "warn";
    DeviceNodes device_nodes = DeviceNodes::auto_;
    device::Capabilities caps;

    // Every key `set` accepts, the single source of the configuration
    // reference (README.md, "Configuration reference"): `set` refuses a key
    // that is not here, and tests/sim/test_config.cpp sets each example in
    // all three spellings.
    static const std::vector<KeyInfo>& keys();
    // The row of `key`; "pcap.3" finds "pcap.N" (N a device index 0..15 or
    // not, set() checks the index). nullptr for an unknown key.
    static const KeyInfo* find_key(std::string_view key);

    Result<void> set(std::string_view key, std::string_view value);
    // Applies RDMASIM_CONFIG (if set) and then every RDMASIM_* variable.
    Result<void> apply_environment();
    Result<void> apply_toml_file(const std::string& path);
    // Checks the combination (e.g. a pcap for a device that does not exist,
    // two sources for one device).
    Result<void> validate() const;
    // What the file system must hold (tools check it before a program
    // starts): each pcap.N a readable file, each output file's directory
    // there (tx_capture.N, trace, stats and report; "-" is standard output
    // for stats and report). The errno of what is missing, naming the key.
    Result<void> check_files() const;

    // The per-device string keys ("pcap", "iface", ...) and their storage.
    static const std::vector<std::pair<std::string_view, std::vector<std::string> Config::*>>&
    device_keys();
};

// The environment variable that carries configuration key `key`: "RDMASIM_",
// then the key in upper case with dots as underscores ("caps.ip_csum" ->
// "RDMASIM_CAPS_IP_CSUM"). apply_environment() reads these names and
// `rdmasim run` sets them.
[[nodiscard]] std::string environment_name(std::string_view key);

} // namespace rdmasim::sim
