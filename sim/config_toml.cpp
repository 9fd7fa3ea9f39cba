// Config::apply_toml_file: a TOML configuration file (RDMASIM_CONFIG), its
// keys as Config::set takes them, its [[fault]] tables as the fault plan's
// text form (sim/README.md, "Configuration: one set of names, three spellings").
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <toml++/toml.h>

#include "sim/config.hpp"

namespace rdmasim::sim {

namespace {

// One [[fault]] table as an item of the plan's text form: `kind` first
// (`verb` after it for verb-fail), the other keys as key=value; a table
// holding only `seed` is the seed item.
Result<std::string> fault_item_text(const toml::node& node) {
    const toml::table* t = node.as_table();
    if (!t) return make_error(EINVAL, "each fault must be a table");
    auto scalar = [](const toml::node& n) -> std::optional<std::string> {
        if (auto s = n.value_exact<std::string>()) return *s;
        if (auto i = n.value_exact<int64_t>()) return std::to_string(*i);
        if (auto d = n.value_exact<double>()) return fmt::format("{}", *d);
        return std::nullopt;
    };
    std::string out;
    if (const toml::node* kind = t->get("kind")) {
        auto k = scalar(*kind);
        if (!k) return make_error(EINVAL, "kind must be a string");
        out = *k;
    }
    std::string params;
    if (const toml::node* verb = t->get("verb")) params = scalar(*verb).value_or("");
    for (auto&& [key, value] : *t) {
        if (key == "kind" || key == "verb") continue;
        auto v = scalar(value);
        if (!v) return make_error(EINVAL, fmt::format("{} must be a string or a number", key.str()));
        if (key == "seed" && out.empty()) return "seed=" + *v;
        // fmt, not string operator+: GCC 12 -O3 warns falsely (-Wrestrict) on that chain
        params += fmt::format("{}{}={}", params.empty() ? "" : ",", key.str(), *v);
    }
    if (out.empty()) return make_error(EINVAL, "a fault table needs kind = \"...\" (or only seed = N)");
    return params.empty() ? out : out + ":" + params;
}

} // namespace

Result<void> Config::apply_toml_file(const std::string& path) {
    // A file that cannot be read is not a configuration error: its errno, not EINVAL.
    if (::access(path.c_str(), R_OK) != 0) {
        const int err = errno;
        return make_error(err, fmt::format("configuration file {} (RDMASIM_CONFIG): {}", path, std::strerror(err)));
    }
    toml::table parsed;
    try { // Debian's toml++ reports parse errors as exceptions
        parsed = toml::parse_file(path);
    } catch (const toml::parse_error& e) {
        return make_error(EINVAL, fmt::format("configuration file {}:{}:{}: {}", path,
                                              e.source().begin.line, e.source().begin.column,
                                              e.description()));
    }
    // Flatten one level of tables ("caps.ip_csum") and turn scalars into text.
    Result<void> result;
    auto visit = [&](const std::string& key, const toml::node& node) -> bool {
        std::string text;
        if (auto s = node.value<std::string>()) text = *s;
        else if (auto b = node.value_exact<bool>()) text = *b ? "on" : "off";
        else if (auto i = node.value_exact<int64_t>()) text = std::to_string(*i);
        else if (auto d = node.value_exact<double>()) text = fmt::format("{}", *d);
        else {
            result = make_error(EINVAL, fmt::format("configuration file {}: {} must be a string, number or boolean", path, key));
            return false;
        }
        if (auto r = set(key, text); !r) {
            result = make_error(EINVAL, fmt::format("{} (in {})", r.error().message, path));
            return false;
        }
        return true;
    };
    // [[fault]] tables: each one item of the plan's text form, in order.
    if (const toml::array* faults_array = parsed["fault"].as_array()) {
        std::string text = faults;
        for (const toml::node& item : *faults_array) {
            auto spelled = fault_item_text(item);
            if (!spelled) return make_error(EINVAL, fmt::format("configuration file {}: [[fault]]: {}", path, spelled.error().message));
            text += (text.empty() ? "" : "; ") + spelled.value();
        }
        if (auto r = set("faults", text); !r)
            return make_error(EINVAL, fmt::format("{} (in {})", r.error().message, path));
        parsed.erase("fault");
    }
    for (auto&& [k, node] : parsed) {
        if (const toml::table* t = node.as_table()) {
            for (auto&& [k2, n2] : *t)
                if (!visit(std::string(k.str()) + "." + std::string(k2.str()), n2)) return result;
        } else if (!visit(std::string(k.str()), node)) {
            return result;
        }
    }
    return result;
}

} // namespace rdmasim::sim
