// `rdmasim replay`: a receiving verbs program over an emulated device fed by
// a capture. It sets up what a DPDK-style receiver sets up (CQ-ex, WQs with
// the requested offload flags, RSS over them, flows), polls, re-posts and
// reports what every frame became.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rdmasim::tools {

struct ReplayOptions {
    std::string file;                   // a capture file; "" with a live source
    std::string iface;                  // live interface, AF_PACKET ring (config key iface)
    std::string pcap_live;              // live interface through libpcap (pcap_live)
    std::string filter;                 // BPF expression for pcap_live (filter)
    bool promisc = false;               // (promisc)
    std::string wire;                   // virtual wire URL (wire)
    std::uint64_t count = 0;            // stop after this many frames offered; 0 = no limit
    double duration_s = 0;              // stop after this many seconds; 0 = no limit
    std::uint32_t wqs = 4;
    std::vector<std::string> flags;     // cvlan, fcs, pad, delay-drop
    std::uint32_t ring = 256;           // WQEs per WQ
    std::uint32_t buf = 2048;           // bytes per WQE
    std::vector<std::string> rss_fields{"src-ip", "dst-ip", "src-port", "dst-port"};
    std::string speed = "topspeed";
    std::string engine;                 // inline, thread; "" = inline, thread with a --speed
    std::string capture;                // write delivered bytes here
    bool json = false;
    std::uint32_t show = 0;             // print the first N delivered frames
    std::string faults;                 // a fault plan (sim/README.md, "Fault injection")
    std::string trace;                  // --trace FILE
    std::string stats;                  // --stats FILE, written at the end
    std::string report;                 // --report FILE: the HTML report (config key report)
};

// True when the source is an interface or a wire: it never ends by itself.
[[nodiscard]] inline bool live_source(const ReplayOptions& o) {
    return !o.iface.empty() || !o.pcap_live.empty() || !o.wire.empty();
}

// Returns the process exit status; prints errors to stderr.
int run_replay(const ReplayOptions& options);

} // namespace rdmasim::tools
