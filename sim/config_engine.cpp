// The engine's keys (sim/README.md, "Engines", "Progress").
#include <sched.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "sim/config_parse.hpp"

namespace rdmasim::sim::config_parse {

namespace {

// `start`: first-flow, now, manual or a delay like 250ms.
Result<void> set_start(Config& c, std::string_view key, std::string_view v) {
    constexpr std::string_view forms = "first-flow, now, manual, or a delay in ms like 250ms";
    if (v == "first-flow") c.start = StartTrigger::first_flow;
    else if (v == "now") c.start = StartTrigger::now;
    else if (v == "manual") c.start = StartTrigger::manual;
    else if (v.ends_with("ms")) {
        auto n = parse_uint<std::uint64_t>(v.substr(0, v.size() - 2), 0, 3'600'000);
        if (!n) return bad(key, v, forms);
        c.start = StartTrigger::delay;
        c.start_delay_ns = *n * 1'000'000;
    } else return bad(key, v, forms);
    return {};
}

// `speed`: topspeed, original or a multiple like 2x.
Result<void> set_speed(Config& c, std::string_view key, std::string_view v) {
    constexpr std::string_view forms = "topspeed, original or a multiple like 2x";
    if (v == "topspeed") c.speed = 0;
    else if (v == "original") c.speed = 1;
    else {
        std::string s(v);
        if (s.empty() || s.back() != 'x') return bad(key, v, forms);
        char* end = nullptr;
        const double x = std::strtod(s.c_str(), &end);
        if (end != s.c_str() + s.size() - 1 || !(x > 0) || x > 1e6) return bad(key, v, forms);
        c.speed = x;
    }
    return {};
}

// `engine_cpus`: CPU numbers, comma-separated; "none" or "": every thread
// where the scheduler puts it.
Result<void> set_engine_cpus(Config& c, std::string_view key, std::string_view v) {
    std::vector<int> cpus;
    for (std::string_view rest = v == "none" ? std::string_view{} : v; !rest.empty();) {
        const auto comma = rest.find(',');
        auto n = parse_uint<int>(rest.substr(0, comma), 0, CPU_SETSIZE - 1);
        if (!n) return bad(key, v, fmt::format("CPU numbers from 0 to {}, comma-separated, like 1 or 1,3", CPU_SETSIZE - 1));
        cpus.push_back(*n);
        if (comma == std::string_view::npos) break;
        rest = rest.substr(comma + 1);
        if (rest.empty()) return bad(key, v, "CPU numbers, comma-separated, like 1 or 1,3");
    }
    c.engine_cpus = std::move(cpus);
    return {};
}

// engine, progress, start, speed, burst, engine_cpus, idle_tick_us.
} // namespace

Outcome set_engine_key(Config& c, std::string_view key, std::string_view v) {
    if (key == "engine") {
        if (v == "inline") c.engine = EngineKind::inline_;
        else if (v == "thread") c.engine = EngineKind::thread;
        else return bad(key, v, "inline or thread");
    } else if (key == "progress") {
        if (v == "auto") c.progress = Progress::auto_;
        else if (v == "thread") c.progress = Progress::thread;
        else if (v == "inline") c.progress = Progress::inline_;
        else return bad(key, v, "auto, thread or inline");
    } else if (key == "start") {
        return set_start(c, key, v);
    } else if (key == "speed") {
        return set_speed(c, key, v);
    } else if (key == "burst") {
        auto n = parse_uint<std::uint32_t>(v, 1, 4096);
        if (!n) return bad(key, v, "a number from 1 to 4096");
        c.burst = *n;
    } else if (key == "engine_cpus") {
        return set_engine_cpus(c, key, v);
    } else if (key == "idle_tick_us") {
        auto n = parse_uint<std::uint64_t>(v, 1, 1'000'000);
        if (!n) return bad(key, v, "a number of microseconds from 1 to 1000000");
        c.idle_tick_ns = *n * 1000;
    } else {
        return std::nullopt;
    }
    return Result<void>{};
}

} // namespace rdmasim::sim::config_parse
