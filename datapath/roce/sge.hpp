// Message bytes against a scatter list: where byte `offset` of a message
// lands in a WQE's SGEs. (datapath/README.md, "RoCE transport")
#pragma once

#include <cstdint>
#include <span>

#include "datapath/mr_table.hpp"
#include "datapath/recv_ring.hpp"

namespace rdmasim::datapath {

// Writes `data` at message offset `offset` across sges[0..n), each piece
// through the MR check (local write access, `pd`). False, with nothing
// written, when the SGEs end first or a piece fails the check; false too
// when an ODP piece turns out unmapped (the pieces before it are written).
[[nodiscard]] bool place_at(const MrTable& mrs, const void* pd, const Sge* sges, std::uint32_t n,
                            std::uint32_t offset, std::span<const std::uint8_t> data) noexcept;

} // namespace rdmasim::datapath
