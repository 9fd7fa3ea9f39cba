#include "datapath/roce/sge.hpp"

#include <algorithm>
#include <cstring>

#include "datapath/mr_copy.hpp"

namespace rdmasim::datapath {

namespace {
// Calls f(checked range, piece) for each SGE piece of [offset, offset + len);
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
        const MrRef p = mrs.translate_ref(sges[i].lkey, pd, sges[i].addr + offset, k, true);
        if (p.host == nullptr || !f(p, k)) return false;
        len -= k;
        offset = 0;
    }
    return len == 0;
}
} // namespace

bool place_at(const MrTable& mrs, const void* pd, const Sge* sges, std::uint32_t n,
              std::uint32_t offset, std::span<const std::uint8_t> data) noexcept {
    const auto len = static_cast<std::uint32_t>(data.size());
    if (!walk(mrs, pd, sges, n, offset, len, [](MrRef, std::uint32_t) { return true; }))
        return false;
    const std::uint8_t* src = data.data();
    return walk(mrs, pd, sges, n, offset, len, [&](MrRef p, std::uint32_t k) {
        if (!mr_write(p, src, k)) return false;
        src += k;
        return true;
    });
}

} // namespace rdmasim::datapath
