// Processes started together by a launcher (mpirun, srun) on one host share
// one environment, so a configured address would be every rank's. The key
// `rank` names a process's place among them (sim/README.md, "Ranks"):
// configured MACs and IP addresses move up by rank * devices, and output
// files get ".rankR" before their extension.
#pragma once

#include <cstdint>
#include <optional>

#include "sim/config.hpp"

namespace rdmasim::sim {

// The launcher's local rank of this process: the first of
// OMPI_COMM_WORLD_LOCAL_RANK (Open MPI), MPI_LOCALRANKID (MPICH's Hydra),
// SLURM_LOCALID (srun) that holds a number; nullopt when none does.
[[nodiscard]] std::optional<std::uint32_t> launcher_local_rank();

// The rank `config` gives this process: `rank` = N, or under `auto` the
// launcher's; nullopt for `off`, and for `auto` outside a launcher.
[[nodiscard]] std::optional<std::uint32_t> process_rank(const Config& config);

// Applies the process's rank to `config` (nothing without one): each
// configured mac, ip and ip6 plus rank * devices (the last 32 bits of an
// IPv6 address), each output file (tx_capture, trace, stats, report; not
// "-") named "STEM.rankR.EXT". EINVAL, naming the key, when a moved address
// would leave its kind (a MAC past ff:ff:ff:ff:ff:ff, an IPv4 address into
// 224/4 and up).
Result<void> apply_rank(Config& config);

} // namespace rdmasim::sim
