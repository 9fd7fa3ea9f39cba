// Config::keys(): every configuration key, the one table the parser, the
// reference (rdmasim config --reference) and README.md's table come from
// (sim/README.md, "Configuration").
#include "sim/config.hpp"

namespace rdmasim::sim {

const std::vector<KeyInfo>& Config::keys() {
    // key, values, default, example, `rdmasim run` option, description
    static const std::vector<KeyInfo> k{
        {"devices", "1..16", "1", "2", "--devices", "number of emulated devices: rdmasim0, rdmasim1, ..."},
        {"pcap", "a pcap or pcapng file", "none (a source that never delivers)", "capture.pcap", "--pcap",
         "capture replayed into rdmasim0's port"},
        {"pcap.N", "a pcap or pcapng file", "none", "capture.pcap", "", "capture replayed into device N's port"},
        {"iface", "an interface name", "none", "eth0", "--iface",
         "live interface rdmasim0's port receives from and sends to (AF_PACKET ring; needs CAP_NET_RAW)"},
        {"iface.N", "an interface name", "none", "eth0", "", "the same for device N"},
        {"pcap_live", "an interface name", "none", "eth0", "--pcap-live",
         "live interface through libpcap, for rdmasim0 (needs CAP_NET_RAW)"},
        {"pcap_live.N", "an interface name", "none", "eth0", "", "the same for device N"},
        {"filter", "a BPF expression (tcpdump syntax)", "none (every frame)", "udp port 4791", "--filter",
         "what pcap_live sources receive (iface takes every frame)"},
        {"promisc", "on, off", "off", "on", "--promisc", "put live interfaces in promiscuous mode"},
        {"wire", "ptp://PATH, vde://PATH or vxvde://GROUP", "none", "ptp:///tmp/rdmasim-wire/sock", "--wire",
         "virtual wire (libvdeplug) rdmasim0's port plugs into: its source and one of its sinks"},
        {"wire.N", "ptp://PATH, vde://PATH or vxvde://GROUP", "none", "vde:///tmp/rdmasim-switch", "",
         "the same for device N"},
        {"wire_mode", "an octal mode with owner read and write", "0600", "0660", "",
         "mode of the socket files ptp:// and vde:// wires create"},
        {"tx_capture", "a pcap file", "none", "sent.pcap", "--tx-capture", "pcap file of every frame rdmasim0's port sends"},
        {"tx_capture.N", "a pcap file", "none", "sent.pcap", "", "the same for device N"},
        {"link", "pairs like rdmasim0:rdmasim1, comma-separated", "none", "rdmasim0:rdmasim1", "--link",
         "devices wired back to back in this process (a source for both ends)"},
        {"engine", "thread, inline", "thread", "inline", "--engine",
         "thread: real time; inline: virtual time, frames pulled when the program polls"},
        {"deterministic", "on, off", "off", "on", "--deterministic",
         "on: engine=inline, bit-identical reruns; off leaves the engine as set"},
        {"start", "first-flow, now, a delay like 250ms, manual", "first-flow", "250ms", "--start",
         "when a replay starts; first-flow: a program loses nothing while it sets up"},
        {"speed", "topspeed, original, a multiple like 2x", "topspeed", "2x", "--speed",
         "pace of a capture replay against its timestamps"},
        {"burst", "1..4096", "32", "64", "", "frames per engine step"},
        {"source_fcs", "auto, 0, 4", "auto (the capture says)", "4", "", "FCS bytes the capture's frames carry"},
        {"synth_dst_mac", "a MAC address", "the receiving device's MAC", "02:00:00:00:00:02", "",
         "destination of the Ethernet header synthesized for captures without one"},
        {"synth_src_mac", "a unicast MAC address", "02:00:00:00:00:01", "02:00:00:00:00:03", "",
         "source of that header"},
        {"faults", "a fault plan (sim/README.md, \"Fault injection\")", "none", "seed=7; drop:p=0.01", "--faults",
         "frames lost, corrupted, reordered; WQs gone fatal; verbs failing"},
        {"trace", "a file", "none", "trace.jsonl", "--trace",
         "every completion polled and every fault injected, as JSON lines"},
        {"stats", "a file", "none", "stats.json", "--stats",
         "every counter and every injected fault, one JSON document written when the simulator stops (rdmasim stats FILE)"},
        {"report", "a file", "none", "report.html", "--report",
         "an HTML report (inline SVG charts over time, the configuration) written when the simulator stops"},
        {"idle_tick_us", "1..1000000", "10", "100", "", "inline engine: virtual microseconds per idle poll"},
        {"log_level", "trace, debug, info, warn, error, off", "warn", "info", "", "what the library logs to stderr"},
        {"caps.cvlan_stripping", "on, off", "on", "off", "", "the device offers CVLAN stripping"},
        {"caps.scatter_fcs", "on, off", "on", "off", "", "the device offers FCS scatter"},
        {"caps.ip_csum", "on, off", "on", "off", "", "the device offers IP checksum offload"},
        {"caps.delay_drop", "on, off", "on", "off", "", "the device offers delay drop"},
        {"caps.pci_write_end_padding", "on, off", "on", "off", "", "the device offers PCI write end padding"},
        {"caps.delay_drop_needs_rawio", "on, off", "off", "on", "",
         "strict profile: IBV_WQ_FLAGS_DELAY_DROP needs CAP_SYS_RAWIO, as the mlx5 driver asks"},
        {"caps.delay_drop_rearm", "on, off", "on", "off", "", "delay drop re-arms after a timeout (the driver's job)"},
        {"caps.deliver_bad_fcs", "on, off", "off", "on", "",
         "deliver frames whose carried FCS is bad (counted in fcs_bad) instead of dropping them as fcs_errors"},
        {"caps.delay_drop_timeout_us", "100..100000 in steps of 100", "100000", "500", "",
         "how long delay drop holds frames"},
        {"caps.pad_align", "64, 128", "64", "128", "", "end padding cache line"},
        {"caps.max_wr", "1..1048576", "32768", "1024", "", "largest WQ"},
        {"caps.max_sge", "1..64", "16", "4", "", "largest SGE list"},
    };
    return k;
}

} // namespace rdmasim::sim
