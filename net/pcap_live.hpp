// A live Ethernet interface through libpcap (net/README.md, "Live
// interfaces"): for hosts where users prefer libpcap's capture and its BPF
// filters. Receive: pcap_next_ex in non-blocking mode, immediate delivery,
// nanosecond timestamps, inbound frames only (PCAP_D_IN: our own sends do not
// come back). libpcap puts the VLAN tag the kernel stripped back into each
// frame (DLT_EN10MB). Send: pcap_inject on a non-blocking descriptor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "net/frame_sink.hpp"
#include "net/frame_source.hpp"
#include "net/result.hpp"
#include "net/send_counters.hpp"

struct pcap; // libpcap's pcap_t, at global scope (see pcap_file_source.hpp)

namespace rdmasim::net {

struct PcapLiveOptions {
    std::string iface;  // interface name, as tcpdump -i takes it
    std::string filter; // BPF expression (tcpdump syntax), "" = every frame
    bool promisc = false;
};

class PcapLivePort final : public FrameSource, public FrameSink {
public:
    // Errors, each naming the interface and carrying libpcap's text: ENODEV
    // (no such interface), EPERM (no CAP_NET_RAW), ENETDOWN (interface
    // down), EINVAL (a link type other than Ethernet; a bad filter, naming
    // the expression). Nothing stays open after an error.
    static Result<std::unique_ptr<PcapLivePort>> open(const PcapLiveOptions& options);
    ~PcapLivePort() override;
    PcapLivePort(const PcapLivePort&) = delete;
    PcapLivePort& operator=(const PcapLivePort&) = delete;

    // The frame stays valid until the next call (libpcap's buffer). Reads
    // pcap_stats' drop count every 4096 frames, and every 10 ms or so while
    // nothing is waiting.
    bool next(Frame& out) noexcept override;
    [[nodiscard]] bool exhausted() const noexcept override { return !failure_.empty(); }
    // "libpcap interface eth0 (filter 'udp', promiscuous)".
    [[nodiscard]] std::string describe() const override;
    [[nodiscard]] const SourceCounters& counters() const noexcept override { return counters_; }
    // A read error (the interface went away) ends the source; this says why.
    [[nodiscard]] std::string_view failure() const noexcept override { return failure_; }
    [[nodiscard]] int wait_fd() const noexcept override { return fd_; }
    [[nodiscard]] bool shared_across_fork() const noexcept override { return true; }
    // What pcap_activate warned about (promiscuous mode not supported, ...), or "".
    [[nodiscard]] const std::string& warning() const noexcept { return warning_; }

    // pcap_inject without waiting: a frame the kernel does not take at once
    // is counted in send_counters() and forgotten.
    void send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept override;
    [[nodiscard]] const SendCounters& send_counters() const noexcept { return sent_; }
    [[nodiscard]] const std::string& iface() const noexcept { return options_.iface; }

private:
    PcapLivePort() = default;
    void read_statistics() noexcept;

    struct pcap* pcap_ = nullptr;
    PcapLiveOptions options_;
    int fd_ = -1;
    std::string warning_;
    std::string failure_;
    std::uint64_t next_stats_ns_ = 0;
    unsigned last_drops_ = 0; // pcap_stats counts since open
    SourceCounters counters_;
    SendCounters sent_;
};

} // namespace rdmasim::net
