#include "tools/replay_report.hpp"

#include <cstdio>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "sim/stats.hpp"

namespace rdmasim::tools {

namespace {

unsigned long long ull(std::uint64_t v) {
    return static_cast<unsigned long long>(v);
}

// "cvlan,fcs", or "none". (Joined by hand: fmt::join trips GCC 12's
// stringop-overflow false positive inside fmt's headers at -O3.)
std::string flag_list(const std::vector<std::string>& flags) {
    if (flags.empty()) return "none";
    std::string s = flags.front();
    for (std::size_t i = 1; i < flags.size(); ++i)
        s += "," + flags[i];
    return s;
}

// The source made Ethernet headers or skipped records, or is live: the report says so.
bool source_worth_reporting(const ReplayReport& r) {
    if (r.source == nullptr) return false;
    const net::SourceCounters& c = r.source->counters();
    return c.synthesized_headers != 0 || c.skipped_records != 0 || live_source(r.options);
}

bool stop_worth_reporting(const ReplayReport& r) {
    return live_source(r.options) || r.options.count != 0 || r.options.duration_s > 0;
}

void print_table(const ReplayReport& r) {
    const ReplayOptions& o = r.options;
    const std::string from =
        o.file.empty() && r.source != nullptr ? r.source_description : o.file;
    std::printf("replay %s: %u WQs x %u WQEs of %u bytes, flags %s, %s engine\n", from.c_str(),
                o.wqs, o.ring, o.buf, flag_list(o.flags).c_str(), o.engine.c_str());
    std::printf("\n  %-4s %-8s %10s %12s %8s\n", "WQ", "wq_num", "delivered", "bytes", "drops");
    for (const QueueReport& q : r.queues)
        std::printf("  %-4u 0x%-6x %10llu %12llu %8llu\n", q.index, q.wq_num,
                    ull(q.counters->delivered.get()), ull(q.counters->delivered_bytes.get()),
                    ull(q.counters->drops_total()));
    std::printf("\n  frames offered %llu = delivered %llu + dropped %llu\n",
                ull(r.port.frames.get()), ull(r.port.delivered.get()), ull(r.port.drops_total()));
    for (std::size_t i = 0; i < datapath::kDropKinds; ++i)
        if (r.port.drops[i].get() != 0)
            std::printf("    %-20s %llu\n",
                        std::string(datapath::drop_name(static_cast<datapath::Drop>(i))).c_str(),
                        ull(r.port.drops[i].get()));
    if (source_worth_reporting(r)) {
        const net::SourceCounters& c = r.source->counters();
        if (live_source(o))
            std::printf("  source: %s: %llu frames, %llu truncated, %llu records skipped, %llu "
                        "dropped by the kernel\n",
                        r.source_description.c_str(), ull(c.frames), ull(c.truncated_records),
                        ull(c.skipped_records), ull(c.kernel_drops));
        else
            std::printf("  source: %s: %llu headers synthesized, %llu records skipped\n",
                        r.source_description.c_str(), ull(c.synthesized_headers),
                        ull(c.skipped_records));
    }
    if (stop_worth_reporting(r))
        std::printf("  stopped by: %.*s\n", static_cast<int>(r.stopped_by.size()),
                    r.stopped_by.data());
    if (r.pacing != nullptr) {
        const sim::PacingStats& p = *r.pacing;
        std::printf("  pacing: %llu frames, %.3f s for a %.3f s schedule; late by p50 %.1f us, "
                    "p99 %.1f us, max %.1f us\n",
                    ull(p.frames()), static_cast<double>(p.elapsed_ns()) / 1e9,
                    static_cast<double>(p.schedule_ns()) / 1e9,
                    static_cast<double>(p.quantile_ns(0.5)) / 1e3,
                    static_cast<double>(p.quantile_ns(0.99)) / 1e3,
                    static_cast<double>(p.max_ns()) / 1e3);
    }
    if (!o.capture.empty()) std::printf("  capture: %s\n", o.capture.c_str());
    if (r.faults) {
        std::string line;
        for (std::size_t k = 0; k < r.faults->size(); ++k)
            if ((*r.faults)[k] != 0)
                line += fmt::format("{}{} {}", line.empty() ? "" : ", ",
                                    sim::fault_kind_name(static_cast<sim::FaultKind>(k)), (*r.faults)[k]);
        std::printf("  faults injected: %s\n", line.empty() ? "none" : line.c_str());
    }
}

} // namespace

nlohmann::json report_json(const ReplayReport& r) {
    nlohmann::json out;
    if (!r.options.file.empty()) out["file"] = r.options.file;
    out["engine"] = r.options.engine;
    out["frames_offered"] = r.port.frames.get();
    out["delivered"] = r.port.delivered.get();
    out["delivered_bytes"] = r.port.delivered_bytes.get();
    out["drops"] = sim::drops_json(r.port);
    out["completions"] = r.completions;
    out["error_completions"] = r.error_completions;
    nlohmann::json wqs = nlohmann::json::array();
    for (const QueueReport& q : r.queues)
        wqs.push_back({{"index", q.index},
                       {"wq_num", q.wq_num},
                       {"delivered", q.counters->delivered.get()},
                       {"bytes", q.counters->delivered_bytes.get()},
                       {"drops", q.counters->drops_total()}});
    out["wqs"] = wqs;
    out["port"] = sim::counters_json(r.port);
    if (source_worth_reporting(r)) {
        const net::SourceCounters& c = r.source->counters();
        out["source"] = {{"description", r.source_description},
                         {"synthesized_headers", c.synthesized_headers},
                         {"skipped_records", c.skipped_records}};
        if (live_source(r.options)) {
            out["source"]["frames"] = c.frames;
            out["source"]["truncated_records"] = c.truncated_records;
            out["source"]["kernel_drops"] = c.kernel_drops;
        }
    }
    if (stop_worth_reporting(r)) out["stopped_by"] = r.stopped_by;
    if (r.faults) out["faults"] = sim::faults_json(*r.faults);
    if (r.pacing != nullptr) out["pacing"] = sim::pacing_json(*r.pacing);
    return out;
}

void print_report(const ReplayReport& r) {
    if (r.options.json)
        std::printf("%s\n", report_json(r).dump(2).c_str());
    else
        print_table(r);
}

} // namespace rdmasim::tools
