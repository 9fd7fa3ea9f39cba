// Frames from a pcap or pcapng file, read through libpcap. Link types:
// Ethernet (DLT_EN10MB). The FCS length is taken from the file itself: the
// FCS bits of a classic pcap header's link type field, or if_fcslen of the
// pcapng interface description block; or forced by the caller.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "net/frame_source.hpp"
#include "net/result.hpp"

// libpcap's handles, declared at global scope so the members below name them
// (an unqualified `struct pcap*` member would declare rdmasim::net::pcap).
struct pcap;

namespace rdmasim::net {

class PcapFileSource final : public FrameSource {
public:
    // Errors: ENOENT / EACCES (file), EINVAL (not a capture, unsupported link
    // type), each with libpcap's text. `force_fcs_len` overrides the file's (0 or 4).
    static Result<std::unique_ptr<PcapFileSource>> open(const std::string& path,
                                                        std::optional<int> force_fcs_len = {});
    ~PcapFileSource() override;

    bool next(Frame& out) noexcept override;
    [[nodiscard]] bool exhausted() const noexcept override {
        return done_.load(std::memory_order_acquire);
    }
    [[nodiscard]] std::string describe() const override;
    [[nodiscard]] const SourceCounters& counters() const noexcept override { return counters_; }
    // A read error in the middle of the file ends the source; this says why ("" if none).
    [[nodiscard]] const std::string& read_error() const noexcept { return read_error_; }
    [[nodiscard]] std::string_view failure() const noexcept override { return read_error_; }
    [[nodiscard]] int fcs_len() const noexcept { return fcs_len_; }
    // File position over file size, as of the last 1024 frames. Any thread
    // (a progress bar reads it while the engine thread reads the file).
    [[nodiscard]] double progress() const noexcept override;

private:
    PcapFileSource() = default;
    struct pcap* pcap_ = nullptr; // pcap_t
    std::string path_;
    std::string read_error_;
    int fcs_len_ = 0;
    int linktype_ = 0;
    long long file_size_ = 0;
    std::atomic<long long> position_{0}; // file offset, sampled by next()
    std::atomic<bool> done_{false};
    SourceCounters counters_;
};

} // namespace rdmasim::net
