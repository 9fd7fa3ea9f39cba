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

} // namespace rdmasim::datapath
