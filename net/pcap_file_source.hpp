// Frames from a pcap or pcapng file, read through libpcap; the records of a
// classic pcap file are read straight from a window of it (one reused 1 MiB
// buffer, refilled by pread: no system call per frame), and any record the
// fast path does not take as ordinary (longer than the snapshot length, cut
// by the end of the file) goes to libpcap, so both paths give the same
// frames and the same errors (net/README.md, "Reading captures").
//
// Link types: Ethernet (DLT_EN10MB) is handed over as captured. Captures of IP
// traffic without an Ethernet header (Linux cooked v1/v2 from `tcpdump -i
// any`, raw IP, IPv4, IPv6, BSD loopback NULL/LOOP) are handed over with an
// Ethernet header synthesized in front of the packet, as a NIC would have
// received it (net/README.md, "Captures without an Ethernet header"). Every
// other link type is refused at open().
//
// The FCS length of Ethernet captures is taken from the file itself (the FCS
// bits of a classic pcap header's link type field, as pcap_datalink_ext()
// reports them, or if_fcslen of the pcapng interface description blocks), or
// forced by the caller. Synthesized frames never carry an FCS.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/addresses.hpp"
#include "net/frame_source.hpp"
#include "net/huge_buffer.hpp"
#include "net/result.hpp"

// libpcap's handles, declared at global scope so the members below name them
// (an unqualified `struct pcap*` member would declare rdmasim::net::pcap).
struct pcap;
struct pcap_pkthdr;

namespace rdmasim::net {

// Addresses of a synthesized Ethernet header unless the caller says otherwise:
// locally administered (bit 1 of the first byte) unicast addresses.
inline constexpr MacAddress kSynthDstMacDefault{0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
inline constexpr MacAddress kSynthSrcMacDefault{0x02, 0x00, 0x00, 0x00, 0x00, 0x01};

struct PcapOpenOptions {
    std::optional<int> force_fcs_len; // overrides the file's FCS length: 0 or 4
    MacAddress synth_dst_mac = kSynthDstMacDefault;
    MacAddress synth_src_mac = kSynthSrcMacDefault;
    // Read a classic pcap file's records through the fast path's window
    // (the name is from when it was a mapping); false: libpcap reads every
    // record (the tests compare the two).
    bool map_file = true;
};

class PcapFileSource final : public FrameSource {
public:
    // Errors: ENOENT / EACCES / EISDIR (file), EINVAL (not a capture, an
    // unsupported link type, pcapng interfaces libpcap cannot read as one
    // stream, an FCS length other than 0 or 4, or any FCS on a link type
    // without one), each naming the file, with libpcap's text where it has one.
    static Result<std::unique_ptr<PcapFileSource>> open(const std::string& path,
                                                        const PcapOpenOptions& options = {});
    ~PcapFileSource() override;

    // Records that cannot have come out of an Ethernet frame (a cooked record
    // of CAN or netlink, a raw record that is not IPv4 or IPv6, a record cut
    // inside its link header) are skipped and counted in skipped_records.
    bool next(Frame& out) noexcept override;
    // A classic Ethernet capture's records in bursts (every frame's bytes lie
    // in the window); otherwise one frame, as next().
    std::uint32_t next_burst(std::span<Frame> out) noexcept override;
    [[nodiscard]] bool exhausted() const noexcept override {
        return done_.load(std::memory_order_acquire);
    }
    // "pcap file F (EN10MB, fcs 4 bytes)", or for a synthesizing source
    // "pcap file F (LINUX_SLL2, Ethernet header synthesized, SRC -> DST)".
    [[nodiscard]] std::string describe() const override;
    [[nodiscard]] const SourceCounters& counters() const noexcept override { return counters_; }
    // A read error in the middle of the file ends the source; this says why,
    // naming the file and the record ("pcap file F: record 7: <libpcap's
    // text>"), or is "" when the file was read to its end.
    [[nodiscard]] const std::string& read_error() const noexcept { return read_error_; }
    [[nodiscard]] std::string_view failure() const noexcept override { return read_error_; }
    [[nodiscard]] int fcs_len() const noexcept { return fcs_len_; }
    // libpcap's DLT_ value for the file (pcap_datalink).
    [[nodiscard]] int link_type() const noexcept { return linktype_; }
    // True when frames get a synthesized Ethernet header (every link type but Ethernet).
    [[nodiscard]] bool synthesizes_headers() const noexcept { return link_ != Link::ethernet; }
    // File position over file size, as of the last 1024 records. Any thread
    // (a progress bar reads it while the engine thread reads the file).
    [[nodiscard]] double progress() const noexcept override;
    // Bytes of the buffer that holds a frame with a synthesized header (0
    // for Ethernet captures): bounded by the largest record libpcap reads.
    [[nodiscard]] std::size_t scratch_bytes() const noexcept { return scratch_.size(); }

private:
    // How a record of the file's link type becomes an Ethernet frame.
    enum class Link : std::uint8_t {
        ethernet,   // as captured
        linux_sll,  // 16-byte cooked header, protocol in its last 2 bytes
        linux_sll2, // 20-byte cooked header, protocol in its first 2 bytes
        raw_ip,     // IPv4 or IPv6 by the version nibble (DLT_RAW)
        ipv4,       // IPv4 only (LINKTYPE_IPV4)
        ipv6,       // IPv6 only (LINKTYPE_IPV6)
        bsd_null,   // 4-byte address family (DLT_NULL, DLT_LOOP): IP by the version nibble
    };

    static constexpr int kMaxRecordLen = 262144; // libpcap's MAXIMUM_SNAPLEN

    PcapFileSource() = default;
    // open()'s steps: the Link for a DLT_ value (none: not supported), and
    // the FCS length from the declared and forced ones, with what a source
    // that synthesizes headers needs.
    static std::optional<Link> link_of(int dlt) noexcept;
    Result<void> settle_fcs(const PcapOpenOptions& options, int declared, const std::string& what);
    // Opens a classic pcap file for the fast path; leaves win_ empty (libpcap
    // reads everything) for pcapng, a file that is not a regular one, or a
    // magic number libpcap alone knows.
    void map_classic(int snapshot);
    // Makes the window hold the file from map_offset_ on: at least `need`
    // bytes of it, or all that is left; false on a read error.
    bool fill_window(std::size_t need) noexcept;
    // The next record from the window: true with its header and bytes, or
    // false when libpcap must read it (or the file ended: done_ set).
    bool next_mapped(pcap_pkthdr& hdr, const std::uint8_t*& data) noexcept;
    // The fast path of next() and next_burst(), for an Ethernet capture: the
    // next records from the window straight into `out`, counted as take()
    // counts them, up to the first one that is not an ordinary record (which
    // next() then reads the general way). Returns how many it filled.
    std::uint32_t next_mapped_frames(std::span<Frame> out) noexcept;
    // The next record through libpcap, from map_offset_ on the fast path: 1, or
    // libpcap's return code.
    int next_libpcap(pcap_pkthdr*& hdr, const std::uint8_t*& data) noexcept;
    // One record's frame into `out`; false when the record is skipped.
    bool take(const pcap_pkthdr& hdr, const std::uint8_t* data, Frame& out) noexcept;
    // Builds the Ethernet frame for one record in scratch_; false when the
    // record carries nothing an Ethernet NIC could have received.
    bool synthesize(std::uint32_t caplen, std::uint32_t wire_len, const std::uint8_t* data,
                    Frame& out) noexcept;
    void fail_read(const char* why) noexcept;

    struct pcap* pcap_ = nullptr; // pcap_t
    std::string path_;
    std::string read_error_;
    int fcs_len_ = 0;
    int linktype_ = 0;
    Link link_ = Link::ethernet;
    MacAddress synth_dst_{};
    MacAddress synth_src_{};
    // The read window, classic pcap only: file bytes [win_off_, win_off_ +
    // win_len_) in win_ (win_cap_ bytes), read with pread() on win_fd_.
    HugeBuffer win_;
    std::size_t win_cap_ = 0, win_off_ = 0, win_len_ = 0;
    int win_fd_ = -1;
    std::size_t map_len_ = 0;           // the file's length
    std::size_t map_offset_ = 0;        // of the next record
    std::uint32_t map_snapshot_ = 0;    // longer records go to libpcap
    bool map_swapped_ = false;          // the file's byte order is not ours
    bool map_nano_ = false;             // nanosecond timestamps
    std::vector<std::uint8_t> scratch_; // synthesized frames; snapshot + 14 bytes, sized at open
    std::uint64_t records_ = 0;         // records libpcap returned, skipped ones included
    long long file_size_ = 0;
    std::atomic<long long> position_{0}; // file offset, sampled by next()
    std::atomic<bool> done_{false};      // written by next() only
    SourceCounters counters_;
};

} // namespace rdmasim::net
