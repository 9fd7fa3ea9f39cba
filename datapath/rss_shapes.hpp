// The input shapes of RSS (rss.cpp and its CPU-specific families): an
// RssInput selects A address bytes (0, 4, 8, 16 or 32) and ports P (0 none,
// 1 the source, 2 the destination, 3 both); code is compiled per shape, so
// that a frame's input is built without a branch, and picked once per group.
#pragma once

#include <cstddef>

#include "datapath/rss.hpp"

namespace rdmasim::datapath::rss_detail {

// Bytes of ports, and 8-byte words of input, of a shape.
template <unsigned P> constexpr std::size_t kPortLen = P == 3 ? 4 : P != 0 ? 2 : 0;
template <std::size_t A, unsigned P> constexpr std::size_t kInputWords = (A + kPortLen<P> + 7) / 8;

// Family F's function for `in`'s shape: rows by address bytes (0, 4, 8, 16,
// 32), columns by ports (none, source, destination, both).
template <template <std::size_t, unsigned> class F>
auto pick_shape(const RssInput& in) noexcept {
    static constexpr decltype(F<0, 0>::fn) kTable[5][4] = {
        {F<0, 0>::fn, F<0, 1>::fn, F<0, 2>::fn, F<0, 3>::fn},
        {F<4, 0>::fn, F<4, 1>::fn, F<4, 2>::fn, F<4, 3>::fn},
        {F<8, 0>::fn, F<8, 1>::fn, F<8, 2>::fn, F<8, 3>::fn},
        {F<16, 0>::fn, F<16, 1>::fn, F<16, 2>::fn, F<16, 3>::fn},
        {F<32, 0>::fn, F<32, 1>::fn, F<32, 2>::fn, F<32, 3>::fn}};
    const std::size_t row = in.addr_len == 0 ? 0 : in.addr_len == 4 ? 1 : in.addr_len == 8 ? 2
                          : in.addr_len == 16 ? 3 : 4;
    const unsigned col = in.port_len == 4 ? 3 : in.port_len == 0 ? 0 : in.dst_port_only ? 2 : 1;
    return kTable[row][col];
}

// The GFNI family (rss_gfni.cpp): nullptr where the build or the CPU lacks
// GFNI with AVX-512 (F, BW, VBMI); else the index function for `in`'s shape,
// which reads RssGroup::lanes.
[[nodiscard]] RssGroup::IndexFn gfni_index_fn(const RssInput& in) noexcept;

} // namespace rdmasim::datapath::rss_detail
