// PcapFileSource's records (net/README.md, "Reading captures"): each one
// handed over as a frame, or given a synthesized Ethernet header, or skipped.
// Opening the file and what it declares: net/pcap_file_open.cpp; the fast
// path over a window of a classic file: net/pcap_file_map.cpp.
#include "net/pcap_file_source.hpp"

#include <pcap/pcap.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sys/mman.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace rdmasim::net {

namespace {


constexpr std::uint32_t kEthHeaderLen = 14;
constexpr std::uint32_t kSllHeaderLen = 16;  // pcap/sll.h SLL_HDR_LEN
constexpr std::uint32_t kSll2HeaderLen = 20; // pcap/sll.h SLL2_HDR_LEN
constexpr std::uint32_t kNullHeaderLen = 4;  // the address family word of DLT_NULL / DLT_LOOP
constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
constexpr std::uint16_t kEtherTypeIpv6 = 0x86dd;
constexpr std::uint16_t kEtherTypeMin = 0x0600; // below: an 802.3 length, not a type
constexpr std::uint16_t kMax8023Length = 1500;
// Cooked protocol values that are not EtherTypes (pcap/sll.h LINUX_SLL_P_*):
// the payload follows an 802.3 length field.
constexpr std::uint16_t kSllProto8023 = 0x0001; // Novell raw 802.3
constexpr std::uint16_t kSllProto8022 = 0x0004; // 802.2 LLC
constexpr std::uint16_t kArphrdEther = 1;       // the cooked header's hatype for Ethernet devices

std::uint16_t be16(const std::uint8_t* p) noexcept {
    return static_cast<std::uint16_t>(p[0] << 8 | p[1]);
}


std::uint16_t ether_type_of_ip(std::uint8_t first_byte) noexcept {
    switch (first_byte >> 4) {
    case 4:
        return kEtherTypeIpv4;
    case 6:
        return kEtherTypeIpv6;
    default:
        return 0;
    }
}

// The type/length field for a cooked record's payload, or 0 when no Ethernet
// NIC could have received it (CAN, netlink, 802.11, ...). An EtherType is
// kept as it is, 0x8100 included (libpcap puts the VLAN tag of Linux's
// PACKET_AUXDATA back into LINUX_SLL records as a protocol of 0x8100 followed
// by the TCI); 802.2 and Novell 802.3 payloads from an Ethernet device get
// back their 802.3 length field.
std::uint16_t cooked_type(std::uint16_t hatype, std::uint16_t protocol,
                          std::uint32_t payload_wire_len) noexcept {
    if (protocol >= kEtherTypeMin) return protocol;
    if ((protocol == kSllProto8022 || protocol == kSllProto8023) && hatype == kArphrdEther &&
        payload_wire_len <= kMax8023Length)
        return static_cast<std::uint16_t>(payload_wire_len);
    return 0;
}

std::uint64_t timestamp_ns(const pcap_pkthdr& hdr) noexcept {
    // In nanosecond precision tv_usec holds nanoseconds.
    return static_cast<std::uint64_t>(hdr.ts.tv_sec) * 1'000'000'000u +
           static_cast<std::uint64_t>(hdr.ts.tv_usec);
}

} // namespace

PcapFileSource::~PcapFileSource() {
    if (pcap_) pcap_close(pcap_);
}

void PcapFileSource::fail_read(const char* why) noexcept {
    // Capacity was reserved at open(): every piece fits, so this cannot allocate.
    char number[24];
    const auto end = std::to_chars(number, number + sizeof number, records_ + 1).ptr;
    read_error_.clear();
    read_error_.append("pcap file ").append(path_).append(": record ");
    read_error_.append(number, end).append(": ");
    read_error_.append(why, ::strnlen(why, PCAP_ERRBUF_SIZE));
    done_.store(true, std::memory_order_release); // after the text: failure() follows exhausted()
}

std::uint32_t PcapFileSource::next_burst(std::span<Frame> out) noexcept {
    if (!win_.empty() && link_ == Link::ethernet) [[likely]] {
        if (const std::uint32_t n = next_mapped_frames(out); n != 0) [[likely]]
            return n;
    }
    return FrameSource::next_burst(out); // one frame, the general way
}

bool PcapFileSource::next(Frame& out) noexcept {
    if (!win_.empty() && link_ == Link::ethernet && next_mapped_frames({&out, 1}) == 1) [[likely]]
        return true;
    while (!done_.load(std::memory_order_relaxed)) {
        pcap_pkthdr mapped;
        pcap_pkthdr* hdr = &mapped;
        const u_char* data = nullptr;
        if (win_.empty() || !next_mapped(mapped, data)) {
            if (done_.load(std::memory_order_relaxed)) return false;
            const int rc = next_libpcap(hdr, data);
            if (rc == PCAP_ERROR_BREAK) { // end of file
                done_.store(true, std::memory_order_release);
                return false;
            }
            if (rc != 1) {
                if (rc < 0 && !done_.load(std::memory_order_relaxed)) fail_read(pcap_geterr(pcap_));
                return false;
            }
        }
        if ((records_++ & 1023) == 0) {
            FILE* f = pcap_file(pcap_);
            const long long pos = !win_.empty() ? static_cast<long long>(map_offset_)
                                  : f  ? static_cast<long long>(std::ftell(f))
                                       : -1;
            position_.store(pos, std::memory_order_relaxed);
        }
        if (take(*hdr, data, out)) return true;
    }
    return false;
}

bool PcapFileSource::take(const pcap_pkthdr& hdr, const std::uint8_t* data, Frame& out) noexcept {
    // A record claiming more captured bytes than the wire carried (a broken
    // writer) holds the frame and then bytes that were never part of it.
    const std::uint32_t caplen = std::min(hdr.caplen, hdr.len);
    if (link_ == Link::ethernet) {
        out = Frame{};
        out.data = data;
        out.len = caplen;
        out.wire_len = hdr.len;
        // Set only when the captured bytes hold a whole FCS, so payload() stays meaningful.
        out.fcs_len = out.len >= static_cast<std::uint32_t>(fcs_len_)
                          ? static_cast<std::uint8_t>(fcs_len_)
                          : 0;
    } else if (synthesize(caplen, hdr.len, data, out)) {
        ++counters_.synthesized_headers;
    } else {
        ++counters_.skipped_records;
        return false;
    }
    out.ts_ns = timestamp_ns(hdr);
    ++counters_.frames;
    counters_.bytes += out.len;
    if (out.len < out.wire_len) ++counters_.truncated_records;
    return true;
}

bool PcapFileSource::synthesize(std::uint32_t caplen, std::uint32_t wire_len,
                                const std::uint8_t* data, Frame& out) noexcept {
    std::uint32_t link_len = 0; // bytes of the record's own link header, replaced
    std::uint16_t type = 0;     // the Ethernet type/length field
    switch (link_) {
    case Link::linux_sll: // pkttype, hatype, halen, addr[8], protocol
        link_len = kSllHeaderLen;
        if (caplen < link_len) return false;
        type = cooked_type(be16(data + 2), be16(data + 14), wire_len - link_len);
        break;
    case Link::linux_sll2: // protocol, reserved, ifindex, hatype, pkttype, halen, addr[8]
        link_len = kSll2HeaderLen;
        if (caplen < link_len) return false;
        type = cooked_type(be16(data + 8), be16(data), wire_len - link_len);
        break;
    case Link::raw_ip:
        if (caplen < 1) return false;
        type = ether_type_of_ip(data[0]);
        break;
    case Link::ipv4:
        type = kEtherTypeIpv4;
        break;
    case Link::ipv6:
        type = kEtherTypeIpv6;
        break;
    case Link::bsd_null: // the address family's value differs between systems: look at the packet
        link_len = kNullHeaderLen;
        if (caplen <= link_len) return false;
        type = ether_type_of_ip(data[link_len]);
        break;
    case Link::ethernet:
        return false;
    }
    if (type == 0) return false;

    const auto room = static_cast<std::uint32_t>(scratch_.size()) - kEthHeaderLen;
    const std::uint32_t copied = std::min(caplen - link_len, room);
    std::uint8_t* f = scratch_.data();
    std::memcpy(f, synth_dst_.data(), 6);
    std::memcpy(f + 6, synth_src_.data(), 6);
    f[12] = static_cast<std::uint8_t>(type >> 8);
    f[13] = static_cast<std::uint8_t>(type);
    if (copied) std::memcpy(f + kEthHeaderLen, data + link_len, copied);
    out = Frame{};
    out.data = f;
    out.len = kEthHeaderLen + copied;
    const std::uint64_t wire = std::uint64_t{kEthHeaderLen} + (wire_len - link_len);
    out.wire_len = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(wire, std::numeric_limits<std::uint32_t>::max()));
    return true;
}

double PcapFileSource::progress() const noexcept {
    if (done_.load(std::memory_order_acquire)) return 1.0;
    const long long pos = position_.load(std::memory_order_relaxed);
    if (file_size_ <= 0 || pos < 0) return -1;
    return static_cast<double>(pos) / static_cast<double>(file_size_);
}

} // namespace rdmasim::net
