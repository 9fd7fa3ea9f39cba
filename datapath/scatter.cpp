#include "datapath/scatter.hpp"

#include <array>
#include <cstring>

namespace rdmasim::datapath {

ScatterStatus scatter_sges(const Wqe& wqe, const Sge* sges, const RxImage& image,
                           const MrTable& mrs, const void* pd, std::uint32_t pad_align) noexcept {
    if (image.byte_len > wqe.total_len) [[unlikely]]
        return ScatterStatus::length_error;
    // Check (and translate) every SGE the image touches before writing any.
    constexpr std::uint32_t kMaxSge = 64;
    std::array<std::uint8_t*, kMaxSge> host; // [0, used) set below; not zeroed per frame
    std::uint32_t left = image.byte_len;
    std::uint32_t used = 0;
    for (std::uint32_t i = 0; i < wqe.num_sge && i < kMaxSge && left > 0; ++i) {
        host[i] = mrs.translate(sges[i].lkey, pd, sges[i].addr, sges[i].length, true);
        if (host[i] == nullptr) [[unlikely]]
            return ScatterStatus::protection_error;
        used = i + 1;
        left -= sges[i].length < left ? sges[i].length : left;
    }
    if (left != 0) [[unlikely]]
        return ScatterStatus::length_error;

    std::uint32_t sge = 0;
    std::uint32_t off = 0;
    for (const auto& piece : image.pieces) {
        std::size_t done = 0;
        while (done < piece.size()) {
            if (off == sges[sge].length) {
                ++sge;
                off = 0;
            }
            const std::size_t room = sges[sge].length - off;
            const std::size_t n = piece.size() - done < room ? piece.size() - done : room;
            std::memcpy(host[sge] + off, piece.data() + done, n);
            done += n;
            off += static_cast<std::uint32_t>(n);
        }
    }

    if (pad_align != 0 && used != 0) {
        const std::uint64_t end = sges[sge].addr + off; // alignment is of the bus address
        const std::uint64_t pad = end_padding_len(end, sges[sge].addr + sges[sge].length, pad_align);
        if (pad != 0) std::memset(host[sge] + off, 0, pad);
    }
    return ScatterStatus::ok;
}

} // namespace rdmasim::datapath
