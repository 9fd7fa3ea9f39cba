#include "sim/run_report.hpp"

#include <fmt/format.h>

#include "sim/stats.hpp"

namespace rdmasim::sim {

std::string report_clock(const Config& config) {
    return config.engine == EngineKind::inline_
               ? "on the inline engine's virtual clock (capture time)"
               : "on the thread engine's real-time clock";
}

std::vector<std::pair<std::string, std::string>> report_config(const Config& config) {
    std::vector<std::pair<std::string, std::string>> rows;
    const auto first = [](const std::vector<std::string>& v) { return v.empty() ? std::string() : v[0]; };
    for (const auto& [key, member] : Config::device_keys())
        if (const std::string v = first(config.*member); !v.empty()) rows.emplace_back(std::string(key), v);
    if (!config.filter.empty()) rows.emplace_back("filter", config.filter);
    rows.emplace_back("engine", config.engine == EngineKind::inline_ ? "inline" : "thread");
    rows.emplace_back("speed", config.speed > 0 ? fmt::format("{}x capture time", config.speed) : "topspeed");
    rows.emplace_back("burst", std::to_string(config.burst));
    rows.emplace_back("faults", config.faults.empty() ? "none" : config.faults);
    rows.emplace_back("caps.delay_drop_timeout_us", std::to_string(config.caps.delay_drop_timeout_ns / 1000));
    return rows;
}

Result<void> write_run_report(Simulator& sim) {
    Timeline* timeline = sim.timeline(0);
    if (sim.config().report.empty() || timeline == nullptr) return {};
    HtmlReport r;
    r.title = "rdmasim run: rdmasim0";
    r.clock = report_clock(sim.config());
    r.config = report_config(sim.config());
    r.config.emplace_back("devices", std::to_string(sim.device_count()));
    r.config.emplace_back("WQ flags", "as the program created its queues");
    r.timeline = timeline->finish();
    CountSnapshot sum;
    for (const auto& [qpn, c] : r.timeline.queues) {
        sum.delivered += c.delivered;
        sum.flushed_wqes += c.flushed_wqes;
        for (std::size_t d = 0; d < sum.drops.size(); ++d) sum.drops[d] += c.drops[d];
    }
    // The statuses ibv_wc_status_str names; drops without a completion are not here.
    const std::pair<const char*, std::uint64_t> statuses[] = {
        {"success", sum.delivered},
        {"local length error", sum.drop(datapath::Drop::length_error)},
        {"local protection error", sum.drop(datapath::Drop::protection_error)},
        {"Work Request Flushed Error", sum.flushed_wqes}};
    for (const auto& [name, n] : statuses)
        if (n != 0) r.statuses.emplace_back(name, n);
    nlohmann::json counters{{"port", counters_json(sim.port_counters(0))}};
    if (!sim.config().fault_plan.empty()) counters["faults"] = faults_json(sim.faults_injected(0));
    r.counters = counters.dump(2);
    return write_html_report(sim.config().report, r);
}

} // namespace rdmasim::sim
