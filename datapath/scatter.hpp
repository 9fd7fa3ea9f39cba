// Scatter: writes a receive image across a WQE's SGEs, after the MR check.
#pragma once

#include <cstdint>

#include "datapath/mr_table.hpp"
#include "datapath/offloads.hpp"
#include "datapath/recv_ring.hpp"

namespace rdmasim::datapath {

enum class ScatterStatus : std::uint8_t { ok, length_error, protection_error };

// Checks first, then writes: on an error nothing is written. Every SGE the
// image touches must pass MrTable::translate (write) for `pd`
// (protection_error); an image longer than the WQE is a length_error. With
// pad_align != 0 the write is padded with zeros up to the next multiple of
// pad_align of the address, inside the last SGE written. Without it, no byte
// past byte_len is touched.
[[nodiscard]] ScatterStatus scatter(const Wqe& wqe, const Sge* sges, const RxImage& image,
                                    const MrTable& mrs, const void* pd,
                                    std::uint32_t pad_align) noexcept;

} // namespace rdmasim::datapath
