// Config::keys(): every configuration key, the one table the parser, the
// reference (rdmasim config --reference) and README.md's table come from
// (sim/README.md, "Configuration").
#include "sim/config.hpp"

namespace rdmasim::sim {

const std::vector<KeyInfo>& Config::keys() {
    // key, values, default, example, `rdmasim run` option, description
    static const std::vector<KeyInfo> k{
        {"devices", "1..16", "1", "2", "--devices",
         "number of emulated devices: rdmasim0, rdmasim1, ..."},
        {"pcap", "a pcap or pcapng file", "none (a source that never delivers)", "capture.pcap",
         "--pcap", "capture replayed into rdmasim0's port"},
        {"pcap.N", "a pcap or pcapng file", "none", "capture.pcap", "",
         "capture replayed into device N's port"},
        {"iface", "an interface name", "none", "eth0", "--iface",
         "live interface rdmasim0's port receives from and sends to (AF_PACKET ring; needs "
         "CAP_NET_RAW)"},
        {"iface.N", "an interface name", "none", "eth0", "", "the same for device N"},
        {"pcap_live", "an interface name", "none", "eth0", "--pcap-live",
         "live interface through libpcap, for rdmasim0 (needs CAP_NET_RAW)"},
        {"pcap_live.N", "an interface name", "none", "eth0", "", "the same for device N"},
        {"filter", "a BPF expression (tcpdump syntax)", "none (every frame)", "udp port 4791",
         "--filter", "what pcap_live sources receive (iface takes every frame)"},
        {"promisc", "on, off", "off", "on", "--promisc", "put live interfaces in promiscuous mode"},
        {"wire", "ptp://PATH, vde://PATH, vxvde://GROUP or shm://PATH", "none",
         "ptp:///tmp/rdmasim-wire/sock", "--wire",
         "virtual wire (libvdeplug, or shared memory) rdmasim0's port plugs into: its source and "
         "one of its sinks"},
        {"wire.N", "ptp://PATH, vde://PATH, vxvde://GROUP or shm://PATH", "none",
         "vde:///tmp/rdmasim-switch", "", "the same for device N"},
        {"wire_mode", "an octal mode with owner read and write", "0600", "0660", "",
         "mode of the files ptp://, vde:// and shm:// wires create"},
        {"tx_capture", "a pcap file", "none", "sent.pcap", "--tx-capture",
         "pcap file of every frame rdmasim0's port sends"},
        {"tx_capture.N", "a pcap file", "none", "sent.pcap", "", "the same for device N"},
        {"mac", "a unicast MAC address",
         "random 02:xx:xx:xx:xx:xx per process; 02:52:44:4d:00:NN on the inline engine without a "
         "wire or live interface",
         "02:00:00:00:00:01", "", "rdmasim0's port MAC (node GUID and the IPv6 GID follow it)"},
        {"mac.N", "a unicast MAC address", "as mac", "02:00:00:00:00:02", "",
         "the same for device N"},
        {"ip", "an IPv4 address", "169.254.X.Y derived from the MAC (RFC 3927)", "192.0.2.1", "",
         "rdmasim0's IPv4 address: GID 0 (::ffff:a.b.c.d), ARP answers"},
        {"ip.N", "an IPv4 address", "as ip", "192.0.2.2", "", "the same for device N"},
        {"ip6", "an IPv6 address", "fe80::/64 with the MAC's EUI-64", "fe80::1", "",
         "rdmasim0's IPv6 address: GID 1"},
        {"ip6.N", "an IPv6 address", "as ip6", "fe80::2", "", "the same for device N"},
        {"mtu", "256, 512, 1024, 2048, 4096", "1024", "4096", "",
         "rdmasim0's active_mtu (max_mtu is 4096)"},
        {"mtu.N", "256, 512, 1024, 2048, 4096", "1024", "2048", "", "the same for device N"},
        {"link", "pairs like rdmasim0:rdmasim1, comma-separated", "none", "rdmasim0:rdmasim1",
         "--link", "devices wired back to back in this process (a source for both ends)"},
        {"engine", "thread, inline", "thread", "inline", "--engine",
         "thread: real time; inline: virtual time, frames pulled when the program polls"},
        {"progress", "auto, thread, inline", "auto", "thread", "",
         "thread engine, live sources: who moves frames; auto: the program's CQ polls while it "
         "polls, the engine otherwise"},
        {"deterministic", "on, off", "off", "on", "--deterministic",
         "on: engine=inline, bit-identical reruns; off leaves the engine as set"},
        {"start", "first-flow, now, a delay like 250ms, manual", "first-flow", "250ms", "--start",
         "when a replay starts; first-flow: a program loses nothing while it sets up"},
        {"speed", "topspeed, original, a multiple like 2x", "topspeed", "2x", "--speed",
         "pace of a capture replay against its timestamps"},
        {"burst", "1..4096", "32", "64", "", "frames per engine step"},
        {"engine_cpus", "CPU numbers, comma-separated, or none",
         "none (the scheduler places the threads)", "1", "",
         "thread engine: device N's thread (rdmasim-engN) runs only on the Nth CPU listed"},
        {"source_fcs", "auto, 0, 4", "auto (the capture says)", "4", "",
         "FCS bytes the capture's frames carry"},
        {"synth_dst_mac", "a MAC address", "the receiving device's MAC", "02:00:00:00:00:02", "",
         "destination of the Ethernet header synthesized for captures without one"},
        {"synth_src_mac", "a unicast MAC address", "02:00:00:00:00:01", "02:00:00:00:00:03", "",
         "source of that header"},
        {"faults", "a fault plan (sim/README.md, \"Fault injection\")", "none",
         "seed=7; drop:p=0.01", "--faults",
         "frames lost, corrupted, reordered; WQs gone fatal; verbs failing"},
        {"trace", "a file", "none", "trace.jsonl", "--trace",
         "every completion polled and every fault injected, as JSON lines"},
        {"stats", "a file", "none", "stats.json", "--stats",
         "every counter and every injected fault, one JSON document written when the simulator "
         "stops (rdmasim stats FILE)"},
        {"report", "a file", "none", "report.html", "--report",
         "an HTML report (inline SVG charts over time, the configuration) written when the simulator stops"},
        {"rank", "auto, off, 0..4095", "auto (the launcher's local rank, if any)", "2", "",
         "this process's place among ranks sharing one environment: configured mac/ip/ip6 + rank * devices, "
         "output files STEM.rankR.EXT"},
        {"idle_tick_us", "1..1000000", "10", "100", "", "inline engine: virtual microseconds per idle poll"},
        {"log_level", "trace, debug, info, warn, error, off", "warn", "info", "", "what the library logs to stderr"},
        {"device_nodes", "auto, on, off", "auto", "off", "--device-nodes",
         "rdmasim run: the devices in /dev/infiniband and /sys/class of a private mount namespace (UCX lists "
         "them); auto: if namespaces are refused, say so and run anyway"},
        {"caps.cvlan_stripping", "on, off", "on", "off", "", "the device offers CVLAN stripping"},
        {"caps.scatter_fcs", "on, off", "on", "off", "", "the device offers FCS scatter"},
        {"caps.ip_csum", "on, off", "on", "off", "", "the device offers IP checksum offload"},
        {"caps.delay_drop", "on, off", "on", "off", "", "the device offers delay drop"},
        {"caps.pci_write_end_padding", "on, off", "on", "off", "",
         "the device offers PCI write end padding"},
        {"caps.delay_drop_needs_rawio", "on, off", "off", "on", "",
         "strict profile: IBV_WQ_FLAGS_DELAY_DROP needs CAP_SYS_RAWIO, as the mlx5 driver asks"},
        {"caps.delay_drop_rearm", "on, off", "on", "off", "",
         "delay drop re-arms after a timeout (the driver's job)"},
        {"caps.deliver_bad_fcs", "on, off", "off", "on", "",
         "deliver frames whose carried FCS is bad (counted in fcs_bad) instead of dropping them as "
         "fcs_errors"},
        {"caps.delay_drop_timeout_us", "100..100000 in steps of 100", "100000", "500", "",
         "how long delay drop holds frames"},
        {"caps.pad_align", "64, 128", "64", "128", "", "end padding cache line"},
        {"caps.cm_response_timeout", "0..31", "20", "12", "",
         "CM response timeout, 4.096 us * 2^N: REQ, REP and DREQ resent after twice that "
         "(rdma_cm's 20)"},
        {"caps.cm_max_retries", "0..15", "15", "3", "",
         "CM resends before a REQ is unreachable or a DREQ given up (rdma_cm's 15)"},
        {"caps.max_wr", "1..1048576", "32768", "1024", "", "largest WQ"},
        {"caps.max_sge", "1..64", "16", "4", "", "largest SGE list"},
    };
    return k;
}

} // namespace rdmasim::sim
