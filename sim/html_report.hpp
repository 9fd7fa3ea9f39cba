// The HTML report (sim/README.md, "Reports"): one self-contained page, charts
// as inline SVG, no script and nothing fetched. `rdmasim replay --report`
// and the drop-in library (key `report`) both write it. Every string put in
// the page is escaped; the page's size follows the timeline's bounded
// samples, never the number of frames.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/result.hpp"
#include "sim/timeline.hpp"

namespace rdmasim::sim {

struct HtmlReport {
    std::string title;                                       // the page's heading
    std::string clock;                                       // what the time axis is, e.g. "capture time"
    std::vector<std::pair<std::string, std::string>> config; // what ran: source, flags, engine, plan, ...
    TimelineData timeline;
    std::map<std::uint32_t, std::string> queue_names; // labels by queue number; others "queue 0x.."
    // Queues the RSS table spreads over, by number (empty: every queue in
    // the timeline): the RSS chart compares them with a uniform hash.
    std::vector<std::uint32_t> rss_queues;
    std::vector<std::pair<std::string, std::uint64_t>> statuses; // completion status -> count
    std::string counters; // the final counters as text (JSON), shown as is
};

// &, <, >, " and ' as character references.
[[nodiscard]] std::string html_escape(std::string_view s);
[[nodiscard]] std::string render_html_report(const HtmlReport& report);
// Renders and writes `path` as write_output_file does (sim/output_file.hpp):
// a regular file atomically, a FIFO or character device in place, "-" to
// standard output. Errors name the path.
Result<void> write_html_report(const std::string& path, const HtmlReport& report);

} // namespace rdmasim::sim
