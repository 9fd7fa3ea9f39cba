// Writes frames to a classic pcap file (link type Ethernet) through libpcap.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "net/result.hpp"

// libpcap's handles, declared at global scope so the members below name them
// (an unqualified `struct pcap*` member would declare rdmasim::net::pcap).
struct pcap;
struct pcap_dumper;

namespace rdmasim::net {

class PcapWriter {
public:
    // snaplen: the largest frame that will be written (default 262144).
    static Result<std::unique_ptr<PcapWriter>> open(const std::string& path,
                                                    std::uint32_t snaplen = 262144);
    ~PcapWriter();
    PcapWriter(const PcapWriter&) = delete;
    PcapWriter& operator=(const PcapWriter&) = delete;

    // Records `bytes` whole (caplen == len) with the given timestamp.
    void write(std::span<const std::uint8_t> bytes, std::uint64_t ts_ns) noexcept;
    // Flushes and closes; reports a write error (disk full) if one happened.
    Result<void> close();
    // In a forked child (sim/README.md, "Fork"): closes the child's copy of
    // the file without writing the frames buffered in it (they are the
    // parent's); writes nothing more. Standard output is left open.
    void abandon_after_fork() noexcept;
    [[nodiscard]] std::uint64_t frames_written() const noexcept { return frames_; }

private:
    PcapWriter() = default;
    struct pcap* dead_ = nullptr;          // pcap_t
    struct pcap_dumper* dumper_ = nullptr; // pcap_dumper_t
    std::string path_;
    std::uint64_t frames_ = 0;
};

} // namespace rdmasim::net
