// What `rdmasim replay` prints when the capture is done: one JSON object
// (--json) or a human table, both from the port's and each WQ's counters.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <nlohmann/json.hpp>
#include <vector>

#include "datapath/counters.hpp"
#include "net/frame_source.hpp"
#include "sim/frame_faults.hpp"
#include "sim/pacing_stats.hpp"
#include "tools/replay.hpp"

namespace rdmasim::tools {

struct QueueReport {
    std::uint32_t index;                  // WQ index in the replay's set-up
    std::uint32_t wq_num;                 // the verbs WQ number
    const datapath::RxCounters* counters; // the Simulator's, valid while the WQ lives
};

struct ReplayReport {
    const ReplayOptions& options;
    const datapath::RxCounters& port;
    std::vector<QueueReport> queues;
    std::uint64_t completions = 0;            // polled, successful or not
    std::uint64_t error_completions = 0;      // polled with a status other than IBV_WC_SUCCESS
    const net::FrameSource* source = nullptr; // the capture's, for what it made or skipped
    std::string source_description = {};      // the source's, with the fault stage's (Engine::describe_source)
    std::string_view stopped_by = {};         // "end", "count", "duration", "signal"
    const sim::FaultCounts* faults = nullptr; // with a fault plan: what it injected
    const sim::PacingStats* pacing = nullptr; // a paced replay's lateness, else nullptr
};

// {"file", "engine", "frames_offered", "delivered", "delivered_bytes", "drops",
//  "completions", "error_completions", "wqs": [...], "port": {...}}, and
// "source": {"description", "synthesized_headers", "skipped_records"} only
// when the source synthesized Ethernet headers or skipped records (an
// Ethernet capture's report is unchanged). A live source (interface, wire)
// has no "file"; its "source" object is always there and also has "frames",
// "truncated_records" and "kernel_drops". "stopped_by" ("end", "count",
// "duration", "signal") is there for a live source or a --count/--duration;
// "faults": {kind: n} only with a fault plan; "pacing" (sim::pacing_json)
// only for a paced replay.
[[nodiscard]] nlohmann::json report_json(const ReplayReport& report);
// On stdout: report_json() when options.json, else the table.
void print_report(const ReplayReport& report);

} // namespace rdmasim::tools
