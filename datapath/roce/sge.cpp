#include "datapath/roce/sge.hpp"

#include <algorithm>
#include <cstring>

namespace rdmasim::datapath {

namespace {
// Calls f(host pointer, piece) for each SGE piece of [offset, offset + len);
// false when a check fails or the SGEs end first.
template <class F>
bool walk(const MrTable& mrs, const void* pd, const Sge* sges, std::uint32_t n,
          std::uint32_t offset, std::uint32_t len, F&& f) noexcept {
    for (std::uint32_t i = 0; i < n && len > 0; ++i) {
        if (offset >= sges[i].length) {
            offset -= sges[i].length;
            continue;
        }
        const std::uint32_t k = std::min(len, sges[i].length - offset);
        std::uint8_t* p = mrs.translate(sges[i].lkey, pd, sges[i].addr + offset, k, true);
        if (p == nullptr) return false;
        f(p, k);
        len -= k;
        offset = 0;
    }
    return len == 0;
}
} // namespace

bool place_at(const MrTable& mrs, const void* pd, const Sge* sges, std::uint32_t n,
              std::uint32_t offset, std::span<const std::uint8_t> data) noexcept {
    const auto len = static_cast<std::uint32_t>(data.size());
    if (!walk(mrs, pd, sges, n, offset, len, [](std::uint8_t*, std::uint32_t) {})) return false;
    const std::uint8_t* src = data.data();
    (void)walk(mrs, pd, sges, n, offset, len, [&](std::uint8_t* p, std::uint32_t k) {
        std::memcpy(p, src, k);
        src += k;
    });
    return true;
}

} // namespace rdmasim::datapath
