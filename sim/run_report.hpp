// The HTML report of a Simulator's device 0 (sim/html_report.hpp) from what
// the Simulator alone knows: what the drop-in library writes at exit under
// `rdmasim run` (key `report`). The completion status mix comes from the
// queue counters: delivered, and each drop that completes with an error.
#pragma once

#include "net/result.hpp"
#include "sim/html_report.hpp"
#include "sim/simulator.hpp"

namespace rdmasim::sim {

// The time axis the engine of `config` samples on, in words.
[[nodiscard]] std::string report_clock(const Config& config);
// The configuration rows every report shows: source, engine, speed, plan.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> report_config(const Config& config);
// Writes config().report (nothing without it, or without a timeline).
Result<void> write_run_report(Simulator& sim);

} // namespace rdmasim::sim
