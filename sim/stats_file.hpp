// --stats FILE (sim/README.md, "Statistics"): every counter of a run as one
// JSON document, schema 1, written when the simulator stops (the drop-in
// library's exit, the end of `rdmasim replay`) by write_output_file: a
// regular FILE is replaced atomically, a FIFO or character device written
// in place, "-" is standard output.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "net/result.hpp"
#include "sim/simulator.hpp"

namespace rdmasim::sim {

// The version of the document's layout: a reader checks it first. Adding a
// field keeps it; renaming, moving or removing one changes it.
inline constexpr int kStatsSchema = 1;

// The document for `sim` now: {"schema", "writer" (who wrote it: "drop-in",
// "replay"), "program", "config", "devices": [...]}. Each device is read
// under its port lock, so its counters balance: port frames = delivered +
// drops + held.
[[nodiscard]] nlohmann::json stats_document(Simulator& sim, std::string_view writer);

// Writes `doc` to `path` as write_output_file does (sim/output_file.hpp).
// The error names `path` and the reason.
Result<void> write_stats_file(const std::string& path, const nlohmann::json& doc);

// Both, for the configured `stats` key (nothing to do without it); never
// throws.
Result<void> write_stats(Simulator& sim, std::string_view writer) noexcept;

} // namespace rdmasim::sim
