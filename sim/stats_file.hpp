// --stats FILE (sim/README.md, "Statistics"): every counter of a run as one
// JSON document, schema 1, written when the simulator stops (the drop-in
// library's exit, the end of `rdmasim replay`), atomically: a temporary
// file beside FILE, then a rename, so a reader never sees half a document.
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

// Writes `doc` to `path` through a temporary file in the same directory
// (created, written, fsync'ed, renamed over `path`); on any failure the
// temporary file is removed and `path` is left as it was. The error names
// `path` and the reason.
Result<void> write_stats_file(const std::string& path, const nlohmann::json& doc);

// Both, for the configured `stats` key (nothing to do without it); never
// throws.
Result<void> write_stats(Simulator& sim, std::string_view writer) noexcept;

} // namespace rdmasim::sim
