#include "sim/config_reference.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace rdmasim::sim {

namespace {

constexpr std::string_view kSwitch = "on, off";

// Single quotes around a value a shell would split or expand.
std::string shell_word(std::string_view v) {
    const bool plain = !v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               std::string_view("._:/=,+-@%").find(c) != std::string_view::npos;
    });
    if (plain) return std::string(v);
    std::string out = "'";
    for (char c : v) out += c == '\'' ? std::string_view("'\\''") : std::string_view(&c, 1);
    out += '\'';
    return out;
}

bool toml_integer(std::string_view v) {
    if (v.empty() || v.size() > 18 || (v.size() > 1 && v[0] == '0')) return false;
    return std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A table cell: pipes escaped, as Markdown tables need.
std::string cell(std::string_view text) {
    std::string out;
    for (char c : text) out += c == '|' ? std::string_view("\\|") : std::string_view(&c, 1);
    return out;
}

// (fmt::format rather than "..." + std::string: GCC 12 at -O3 warns falsely, -Wrestrict, on that.)
std::string code(std::string_view text) { return text.empty() ? "" : fmt::format("`{}`", cell(text)); }

} // namespace

std::string example_key(const KeyInfo& info) {
    if (info.key.ends_with(".N")) return fmt::format("{}1", info.key.substr(0, info.key.size() - 1));
    return std::string(info.key);
}

std::string toml_spelling(const KeyInfo& info) {
    const std::string_view v = info.example;
    std::string value;
    if (info.values == kSwitch) value = v == "on" ? "true" : "false";
    else if (toml_integer(v)) value = std::string(v);
    else value = fmt::format("\"{}\"", v); // no example holds a quote or a backslash
    return fmt::format("{} = {}", example_key(info), value);
}

std::string environment_spelling(const KeyInfo& info) {
    return fmt::format("{}={}", environment_name(example_key(info)), shell_word(info.example));
}

std::string set_spelling(const KeyInfo& info) {
    return fmt::format("--set {}", shell_word(fmt::format("{}={}", example_key(info), info.example)));
}

std::string flag_spelling(const KeyInfo& info) {
    if (info.flag.empty()) return "";
    if (info.values == kSwitch) return std::string(info.flag);
    return fmt::format("{} {}", info.flag, shell_word(info.example));
}

std::string reference_markdown() {
    std::string out =
        "| key | values | default | TOML file | environment | `rdmasim run`, `rdmasim env` | meaning |\n"
        "|---|---|---|---|---|---|---|\n";
    for (const KeyInfo& info : Config::keys()) {
        std::string cli = code(set_spelling(info));
        if (!info.flag.empty()) cli = fmt::format("{}, {}", code(flag_spelling(info)), cli);
        out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", code(info.key), cell(info.values),
                           cell(info.default_value), code(toml_spelling(info)),
                           code(environment_spelling(info)), cli, cell(info.description));
    }
    return out;
}

} // namespace rdmasim::sim
