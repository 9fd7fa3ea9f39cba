// Scatter: writes a receive image across a WQE's SGEs, after the MR check.
#pragma once

#include <cstdint>

#include "datapath/mr_table.hpp"
#include "datapath/offloads.hpp"
#include "datapath/recv_ring.hpp"
#include "datapath/small_copy.hpp"

namespace rdmasim::datapath {

enum class ScatterStatus : std::uint8_t { ok, length_error, protection_error };

// scatter() past its one-SGE fast path: the SGE walk.
[[nodiscard]] ScatterStatus scatter_sges(const Wqe& wqe, const Sge* sges, const RxImage& image,
                                         const MrTable& mrs, const void* pd,
                                         std::uint32_t pad_align) noexcept;

// Checks first, then writes: on an error nothing is written. Every SGE the
// image touches must pass MrTable::translate (write) for `pd`
// (protection_error); an image longer than the WQE is a length_error. With
// pad_align != 0 the write is padded with zeros up to the next multiple of
// pad_align of the address, inside the last SGE written. Without it, no byte
// past byte_len is touched. Inline: one SGE (the common WQE) is the
// per-frame path; the pieces go back to back, with no SGE walk. Always
// inline: as a call from the queue's receive it cost 18 instructions a frame.
[[nodiscard, gnu::always_inline]] inline ScatterStatus scatter(const Wqe& wqe, const Sge* sges, const RxImage& image,
                                           const MrTable& mrs, const void* pd,
                                           std::uint32_t pad_align) noexcept {
    if (wqe.num_sge != 1 || image.byte_len == 0 || image.byte_len > wqe.total_len) [[unlikely]]
        return scatter_sges(wqe, sges, image, mrs, pd, pad_align);
    const Sge& s = sges[0];
    std::uint8_t* const host = mrs.translate(s.lkey, pd, s.addr, s.length, true);
    if (host == nullptr) [[unlikely]]
        return ScatterStatus::protection_error;
    // The usual shapes (build_rx_image) get fixed-size moves: 12 MAC bytes
    // before a stripped tag, 4 FCS bytes at the end (33 instructions per
    // frame fewer than copy_bytes on each piece).
    const auto& p = image.pieces;
    std::uint8_t* out = host;
    if (p[0].size() == 12)
        __builtin_memcpy(out, p[0].data(), 12);
    else
        copy_bytes(out, p[0].data(), p[0].size());
    out += p[0].size();
    if (!p[1].empty()) { // only a stripped frame has a second piece
        copy_bytes(out, p[1].data(), p[1].size());
        out += p[1].size();
    }
    if (p[2].size() == 4)
        __builtin_memcpy(out, p[2].data(), 4);
    else
        copy_bytes(out, p[2].data(), p[2].size());
    out += p[2].size();
    if (pad_align != 0)
        zero_bytes(out, end_padding_len(s.addr + image.byte_len, s.addr + s.length, pad_align));
    return ScatterStatus::ok;
}

} // namespace rdmasim::datapath
