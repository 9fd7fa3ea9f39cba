// What sim/config*.cpp share to parse a key's value (sim/README.md,
// "Configuration"): the error every bad value gives, numbers and switches,
// and the families Config::set asks in turn.
#pragma once

#include <charconv>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "net/result.hpp"
#include "sim/config.hpp"

namespace rdmasim::sim::config_parse {

inline Error bad(std::string_view key, std::string_view value, std::string_view expected) {
    return make_error(EINVAL, fmt::format("configuration: {} = '{}': expected {}", key, value, expected));
}

template <class T>
std::optional<T> parse_uint(std::string_view v, T lo, T hi) {
    T out{};
    const auto* end = v.data() + v.size();
    auto [p, ec] = std::from_chars(v.data(), end, out);
    if (ec != std::errc{} || p != end || out < lo || out > hi) return std::nullopt;
    return out;
}

inline std::optional<bool> parse_bool(std::string_view v) {
    if (v == "1" || v == "true" || v == "on" || v == "yes") return true;
    if (v == "0" || v == "false" || v == "off" || v == "no") return false;
    return std::nullopt;
}

// One family of keys: nullopt when `key` is none of its keys, else what
// setting it gave.
using Outcome = std::optional<Result<void>>;

// engine, progress, start, speed, burst, engine_cpus, idle_tick_us (config_engine.cpp).
Outcome set_engine_key(Config& c, std::string_view key, std::string_view v);

} // namespace rdmasim::sim::config_parse
