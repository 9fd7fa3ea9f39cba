#include "datapath/offloads.hpp"

#include <array>
#include <cstring>

#include "net/crc32.hpp"

namespace rdmasim::datapath {

bool carried_fcs_ok(const net::Frame& frame) noexcept {
    if (frame.fcs_len != net::kFcsLen) return true;
    std::array<std::uint8_t, net::kFcsLen> good{};
    net::write_fcs(frame.payload(), good.data());
    return std::memcmp(good.data(), frame.data + frame.len - net::kFcsLen, net::kFcsLen) == 0;
}

void build_rx_image(const net::Frame& frame, const net::ParsedFrame& parsed,
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

} // namespace rdmasim::datapath
