// Lengths of the RoCE v2 frame layers that build_roce_frame writes and
// parse_roce_frame reads (net/roce_frame.cpp, net/roce_frame_parse.cpp);
// not installed.
#pragma once

#include <cstddef>

namespace rdmasim::net::roce_layout {

inline constexpr std::size_t kIpv4HeaderLen = 20; // as built: no options
inline constexpr std::size_t kIpv6HeaderLen = 40;
inline constexpr std::size_t kUdpHeaderLen = 8;

} // namespace rdmasim::net::roce_layout
