#include "tools/replay_html.hpp"

#include <fmt/format.h>

#include "sim/html_report.hpp"
#include "sim/run_report.hpp"

namespace rdmasim::tools {

namespace {

// Joined by hand, as in replay_report.cpp (fmt::join trips GCC 12 at -O3).
std::string joined(const std::vector<std::string>& names) {
    if (names.empty()) return "none";
    std::string s = names.front();
    for (std::size_t i = 1; i < names.size(); ++i) s += "," + names[i];
    return s;
}

} // namespace

Result<void> write_replay_html(const std::string& path, const ReplayReport& report,
                               const sim::Config& config, sim::Timeline& timeline,
                               const StatusCounts& statuses) {
    const ReplayOptions& o = report.options;
    sim::HtmlReport r;
    r.title = fmt::format("rdmasim replay {}",
                          o.file.empty() && report.source ? report.source_description : o.file);
    r.clock = sim::report_clock(config);
    r.config = sim::report_config(config);
    r.config.emplace_back("WQs", std::to_string(o.wqs));
    r.config.emplace_back("WQ flags", joined(o.flags));
    r.config.emplace_back("RSS fields", joined(o.rss_fields));
    r.config.emplace_back("ring", fmt::format("{} WQEs of {} bytes", o.ring, o.buf));
    if (!report.stopped_by.empty()) r.config.emplace_back("stopped by", std::string(report.stopped_by));
    for (const QueueReport& q : report.queues) {
        r.queue_names[q.wq_num] = fmt::format("WQ {}", q.index);
        r.rss_queues.push_back(q.wq_num);
    }
    r.statuses = statuses;
    r.timeline = timeline.finish();
    r.counters = report_json(report).dump(2);
    return sim::write_html_report(path, r);
}

} // namespace rdmasim::tools
