// `rdmasim replay --report FILE`: the HTML report (sim/html_report.hpp) of a
// replay, with what only the replay knows: its WQ flags and set-up, the WQ
// each queue number is, and the completion statuses it polled.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "net/result.hpp"
#include "sim/config.hpp"
#include "sim/timeline.hpp"
#include "tools/replay_report.hpp"

namespace rdmasim::tools {

// Completions polled, by ibv_wc_status_str name, in status order; statuses never seen are left out.
using StatusCounts = std::vector<std::pair<std::string, std::uint64_t>>;

Result<void> write_replay_html(const std::string& path, const ReplayReport& report,
                               const sim::Config& config, sim::Timeline& timeline,
                               const StatusCounts& statuses);

} // namespace rdmasim::tools
