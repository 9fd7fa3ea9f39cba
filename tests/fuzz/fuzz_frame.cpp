// libFuzzer target: one frame through parsing and steering, as the port sees
// it, and through the RoCE v2 parser (as received, then with its IPv4 header
// checksum and ICRC made right, so the fuzzer gets past both). Input: byte 0
// is the RSS fields mask (IBV_RX_HASH_* bits 0-7), byte 1 the receive
// settings, the rest the frame. Invariants are checked with
// __builtin_trap() so that a broken promise is a finding, not only a crash.
#include <infiniband/verbs.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "datapath/flow_rule.hpp"
#include "datapath/offloads.hpp"
#include "datapath/rss.hpp"
#include "datapath/toeplitz.hpp"
#include "net/frame.hpp"
#include "net/headers.hpp"
#include "net/icrc.hpp"
#include "net/roce_frame.hpp"

namespace {

using namespace rdmasim;

void check(bool ok) {
    if (!ok) __builtin_trap();
}

// A span lies inside [lo, lo + n).
bool inside(std::span<const std::uint8_t> s, const std::uint8_t* lo, std::size_t n) {
    if (s.empty()) return true;
    return s.data() >= lo && s.data() + s.size() <= lo + n;
}

// The RoCE parser's promises on a packet it accepts.
void check_roce(std::span<const std::uint8_t> f) {
    net::RocePacket pkt;
    if (net::parse_roce_frame(f, pkt) != net::RoceDrop::none) return;
    check(pkt.info != nullptr);
    check(inside(pkt.payload, f.data(), f.size()));
    check(inside(pkt.ip_header, f.data(), f.size()));
    check(pkt.ipv6 ? pkt.ip_header.size() == 40 : pkt.ip_header.size() >= 20 && pkt.ip_header.size() <= 60);
    std::uint8_t grh[40];
    net::write_ud_grh(pkt, grh);
    asm volatile("" : : "r"(grh[39]));
}

// A copy of the frame with the IPv4 header checksum and the ICRC recomputed
// (when it is IPv4 or IPv6 with room for them), through check_roce.
void check_roce_fixed(std::span<const std::uint8_t> f, const net::ParsedFrame& parsed) {
    if (parsed.l3 != net::L3Kind::ipv4 && parsed.l3 != net::L3Kind::ipv6) return;
    const std::size_t l3 = parsed.l3_offset;
    if (f.size() < l3 + 40 + 8 + 12 + 4) return;
    std::unique_ptr<std::uint8_t[]> copy(new std::uint8_t[f.size()]);
    std::memcpy(copy.get(), f.data(), f.size());
    std::uint8_t* ip = copy.get() + l3;
    std::size_t ihl = 40;
    std::size_t end = f.size() - 4; // the ICRC: the frame's last 4 bytes
    if (parsed.l3 == net::L3Kind::ipv4) {
        ihl = std::size_t{ip[0] & 0x0fu} * 4;
        if (ihl < 20) return;
        ip[10] = ip[11] = 0;
        std::uint32_t sum = 0;
        for (std::size_t i = 0; i + 1 < ihl; i += 2)
            sum += std::uint32_t{ip[i]} << 8 | ip[i + 1];
        while (sum >> 16)
            sum = (sum & 0xffff) + (sum >> 16);
        ip[10] = static_cast<std::uint8_t>(~sum >> 8);
        ip[11] = static_cast<std::uint8_t>(~sum);
        const std::size_t total = std::size_t{ip[2]} << 8 | ip[3];
        if (total >= ihl + 8 + 12 + 4 && l3 + total <= f.size()) end = l3 + total - 4;
    }
    if (end < l3 + ihl + 8 + 12) return;
    const std::uint32_t icrc =
        net::roce_icrc_in_place(std::span<std::uint8_t>(ip, end - l3), ihl);
    net::store_icrc(copy.get() + end, icrc);
    check_roce(std::span<const std::uint8_t>(copy.get(), f.size()));
}

struct Rules {
    datapath::FlowRule catch_all;   // ETH spec, all masks zero: every frame
    datapath::FlowRule dst_mac;     // one destination MAC
    datapath::FlowRule vlan_ipv4;   // tagged VID 5, IPv4 10.0.0.0/8, TCP dst 80
    datapath::FlowRule ipv6_udp;    // IPv6 next header UDP, flow label, src port 4791
    Rules() {
        catch_all.has_eth = true;

        dst_mac.has_eth = true;
        dst_mac.eth_value.dst_mac = {0x02, 0, 0, 0, 0, 1};
        dst_mac.eth_mask.dst_mac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

        vlan_ipv4.has_eth = true;
        vlan_ipv4.eth_value.vlan_tci = 5;
        vlan_ipv4.eth_mask.vlan_tci = 0x0fff;
        vlan_ipv4.l3 = net::L3Kind::ipv4;
        vlan_ipv4.ipv4_value.dst = {10, 0, 0, 0};
        vlan_ipv4.ipv4_mask.dst = {0xff, 0, 0, 0};
        vlan_ipv4.ipv4_mask.flags = 0x7;
        vlan_ipv4.l4 = net::L4Kind::tcp;
        vlan_ipv4.l4_value.dst_port = 80;
        vlan_ipv4.l4_mask.dst_port = 0xffff;

        ipv6_udp.l3 = net::L3Kind::ipv6;
        ipv6_udp.ipv6_value.next_hdr = 17;
        ipv6_udp.ipv6_mask.next_hdr = 0xff;
        ipv6_udp.ipv6_mask.flow_label = 0xfffff;
        ipv6_udp.ipv6_mask.hop_limit = 0x80;
        ipv6_udp.l4 = net::L4Kind::udp;
        ipv6_udp.l4_value.src_port = 4791;
        ipv6_udp.l4_mask.src_port = 0xffff;
    }
};

void check_parse(const net::ParsedFrame& p, std::size_t size) {
    if (size < net::kEthHeaderLen) {
        check(p.l3 == net::L3Kind::none && p.ether_type == 0 && !p.has_vlan);
        return;
    }
    check(p.l3_offset == (p.has_vlan ? 18 : 14));
    if (p.has_vlan) check(size >= 18);
    switch (p.l3) {
    case net::L3Kind::none:
        check(p.l4 == net::L4Kind::none && !p.ip_fragment);
        return;
    case net::L3Kind::ipv4:
        check(p.ether_type == net::kEtherTypeIpv4 && p.l3_offset + 20u <= size);
        break;
    case net::L3Kind::ipv6:
        check(p.ether_type == net::kEtherTypeIpv6 && p.l3_offset + 40u <= size);
        check(!p.ip_fragment);
        break;
    }
    if (p.ip_fragment) {
        check(p.l4 == net::L4Kind::none);
        return;
    }
    check(p.l4_offset >= p.l3_offset + 20u && p.l4_offset <= size);
    if (p.l4 == net::L4Kind::tcp) check(p.ip_proto == 6 && p.l4_offset + 20u <= size);
    if (p.l4 == net::L4Kind::udp) check(p.ip_proto == 17 && p.l4_offset + 8u <= size);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const datapath::Toeplitz toeplitz{datapath::kMicrosoftRssKey};
    static const Rules rules;
    if (size < 2) return 0;
    const std::uint64_t fields = data[0];
    const std::uint8_t bits = data[1];

    // The frame in a block of its own exact size, so any read past it is caught.
    const std::size_t len = size - 2;
    std::unique_ptr<std::uint8_t[]> owned(new std::uint8_t[len]);
    if (len != 0) std::memcpy(owned.get(), data + 2, len);
    const std::uint8_t* bytes = owned.get();

    net::Frame frame;
    frame.data = bytes;
    frame.len = static_cast<std::uint32_t>(len);
    frame.wire_len = frame.len + ((bits & 0x10) ? 1u : 0u);
    // The Frame contract (every source keeps it): an FCS only when it was captured.
    frame.fcs_len = (bits & 0x04) && len >= net::kFcsLen ? net::kFcsLen : 0;

    const auto payload = frame.payload();
    check(payload.size() + frame.fcs_len == len);
    const net::ParsedFrame parsed = net::parse_frame(payload);
    check_parse(parsed, payload.size());

    const bool csum_ok = net::ip_checksums_ok(payload, parsed);
    if (csum_ok) check(parsed.l3 == net::L3Kind::ipv4);

    // RSS: the mask from byte 0; bit 5 of byte 1 adds a bit this HCA cannot hash on.
    const std::uint64_t rss_fields = fields | ((bits & 0x20) ? IBV_RX_HASH_INNER : 0);
    const std::uint32_t h = datapath::rss_hash(toeplitz, rss_fields, payload, parsed);
    if (rss_fields == 0 || (rss_fields & IBV_RX_HASH_INNER)) check(h == 0);
    if ((fields & (IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4)) && parsed.l3 != net::L3Kind::ipv4)
        check(h == 0);
    check(datapath::rss_entry(h, 3) < 8);
    // An RSS group's entry (masks and parities) is the hash's low bits; table
    // sizes 2^0..2^7 from bits 0-2 of byte 1 (shared with switches below).
    {
        datapath::RssGroup g;
        const std::uint32_t log_size = bits & 0x07u;
        g.configure(datapath::kMicrosoftRssKey, rss_fields, log_size);
        check(g.index(payload, parsed) == datapath::rss_entry(h, log_size));
    }

    check(datapath::flow_matches(rules.catch_all, payload, parsed));
    const bool m1 = datapath::flow_matches(rules.dst_mac, payload, parsed);
    if (m1) check(payload.size() >= 6 && bytes[0] == 0x02 && bytes[5] == 0x01);
    if (datapath::flow_matches(rules.vlan_ipv4, payload, parsed))
        check(parsed.has_vlan && parsed.l4 == net::L4Kind::tcp && parsed.dst_port == 80);
    if (datapath::flow_matches(rules.ipv6_udp, payload, parsed))
        check(parsed.l3 == net::L3Kind::ipv6 && parsed.l4 == net::L4Kind::udp);

    datapath::WqSettings settings;
    settings.strip_cvlan = (bits & 0x01) != 0;
    settings.scatter_fcs = (bits & 0x02) != 0;
    settings.end_padding = (bits & 0x08) != 0;
    settings.ip_csum = (bits & 0x40) != 0;
    settings.pad_align = (bits & 0x80) ? 128 : 64;
    datapath::RxImage image;
    datapath::build_rx_image(frame, parsed, settings, image);
    check(image.byte_len ==
          image.pieces[0].size() + image.pieces[1].size() + image.pieces[2].size());
    check(inside(image.pieces[0], bytes, payload.size()));
    check(inside(image.pieces[1], bytes, payload.size()));
    check(inside(image.pieces[2], image.fcs.data(), image.fcs.size()));
    check(image.pieces[2].size() == (settings.scatter_fcs ? net::kFcsLen : 0));
    const std::size_t frame_part = image.pieces[0].size() + image.pieces[1].size();
    if (image.stripped) {
        check(settings.strip_cvlan && parsed.has_vlan);
        check(frame_part + net::kVlanTagLen == payload.size());
        check(image.cvlan == parsed.vlan_tci);
    } else {
        check(frame_part == payload.size());
    }
    if (frame.fcs_len == 0) check(!image.fcs_bad);

    check_roce(payload);
    check_roce_fixed(payload, parsed);
    // Touch every delivered byte so a bad span is caught where it points.
    std::uint32_t sum = 0;
    for (const auto& piece : image.pieces)
        for (const std::uint8_t b : piece)
            sum += b;
    // Keep the loop: the sum goes where the optimiser must assume it is read.
    asm volatile("" : : "r"(sum + h));
    return 0;
}
