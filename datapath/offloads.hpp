// Receive offloads as pure functions over one frame and a WQ's settings, in
// the order of datapath/README.md, "Per-frame order": CVLAN strip, scatter
// FCS, (delay drop is the queue's business), scatter with end padding,
// completion. The bytes of each are in "Offloads, byte by byte".
#pragma once

#include <array>
#include <cstring>
#include <cstdint>
#include <span>

#include "net/crc32.hpp"
#include "net/frame.hpp"
#include "net/headers.hpp"

namespace rdmasim::datapath {

// A WQ's offload switches, fixed at creation except strip_cvlan (ibv_modify_wq).
struct WqSettings {
    bool strip_cvlan = false;
    bool scatter_fcs = false;
    bool delay_drop = false;
    bool end_padding = false;
    // Report IBV_WC_IP_CSUM_OK: a raw-packet QP's own receive queue on a device
    // with the capability; never a WQ (datapath/README.md, "Per-frame order").
    bool ip_csum = false;
    // The port already dropped every frame whose carried FCS is bad (the
    // default, PortConfig::deliver_bad_fcs off): a carried FCS reaching this
    // queue is good and is not checked a second time.
    bool fcs_checked = false;
    std::uint32_t pad_align = 64; // cache line for end padding: 64 or 128
};

// True when `frame` carries no FCS, or carries one that matches its bytes.
[[nodiscard]] bool carried_fcs_ok(const net::Frame& frame) noexcept;

// The bytes a completion delivers, as up to three pieces to be written in
// order: the frame around a stripped tag, and the FCS.
struct RxImage {
    // The frame from its first byte, or (stripped) its 12 MAC bytes and the
    // bytes after the tag; then the 4 FCS bytes or nothing.
    std::array<std::span<const std::uint8_t>, 3> pieces{};
    std::uint32_t byte_len = 0;
    std::uint16_t cvlan = 0; // TCI stripped, host order
    bool stripped = false;
    bool fcs_bad = false;    // the frame carried an FCS that does not match its bytes
    std::array<std::uint8_t, 4> fcs{};
};

// Builds the delivered image of `frame` (whose parse is `parsed`). The image
// points into `frame` and into its own fcs array: keep both alive while used.
// Inline: once per delivered frame.
inline void build_rx_image(const net::Frame& frame, const net::ParsedFrame& parsed,
                           const WqSettings& settings, RxImage& image) noexcept {
    const auto bytes = frame.payload(); // without a carried FCS
    image.stripped = false;
    image.cvlan = 0;
    image.fcs_bad = false;
    if (settings.strip_cvlan && parsed.has_vlan &&
        bytes.size() >= net::kEthHeaderLen + net::kVlanTagLen) {
        // Destination and source MAC, then everything after the 4-byte tag.
        image.pieces[0] = bytes.first(12);
        image.pieces[1] = bytes.subspan(12 + net::kVlanTagLen);
        image.cvlan = parsed.vlan_tci;
        image.stripped = true;
    } else {
        image.pieces[0] = bytes;
        image.pieces[1] = {};
    }
    if (frame.fcs_len == net::kFcsLen) {
        // The wire's FCS, kept as it came, good or bad.
        std::memcpy(image.fcs.data(), frame.data + frame.len - net::kFcsLen, net::kFcsLen);
        image.fcs_bad = !settings.fcs_checked && !carried_fcs_ok(frame);
    } else if (settings.scatter_fcs) {
        net::write_fcs(bytes, image.fcs.data()); // over the frame as on the wire, tag included
    }
    image.pieces[2] = settings.scatter_fcs ? std::span<const std::uint8_t>(image.fcs)
                                           : std::span<const std::uint8_t>{};
    image.byte_len = static_cast<std::uint32_t>(image.pieces[0].size() + image.pieces[1].size() +
                                                image.pieces[2].size());
}

// End padding: how many bytes after a write that ends at address `end` may be
// padded, given that the SGE ends at `sge_end`: up to the next multiple of
// `align` (a power of two: 64 or 128, the cache line), never past the SGE.
[[nodiscard]] inline std::uint64_t end_padding_len(std::uint64_t end, std::uint64_t sge_end,
                                                   std::uint32_t align) noexcept {
    const std::uint64_t rem = end & (align - 1); // a mask, not a division, on every frame
    if (rem == 0) return 0;
    const std::uint64_t want = align - rem;
    const std::uint64_t room = sge_end > end ? sge_end - end : 0;
    return want < room ? want : room;
}

} // namespace rdmasim::datapath
