#include "tools/stats_cmd.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sim/stats_file.hpp"

namespace rdmasim::tools {

namespace {

using nlohmann::json;

struct Bad {
    std::string message;
};

// Rows of cells, printed with each column as wide as its widest cell: the
// first `text_columns` columns left-aligned, the others (numbers) right-aligned.
class Table {
public:
    explicit Table(std::vector<std::string> header, std::size_t text_columns = 1)
        : text_columns_(text_columns) {
        rows_.push_back(std::move(header));
    }
    void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
    [[nodiscard]] std::string text(std::string_view indent) const {
        std::vector<std::size_t> width;
        for (const auto& row : rows_)
            for (std::size_t c = 0; c < row.size(); ++c) {
                if (width.size() <= c) width.push_back(0);
                width[c] = std::max(width[c], row[c].size());
            }
        std::string out;
        for (const auto& row : rows_) {
            std::string line(indent);
            for (std::size_t c = 0; c < row.size(); ++c) {
                if (c != 0) line += "  ";
                const std::string pad(width[c] - row[c].size(), ' ');
                line += c < text_columns_ ? row[c] + pad : pad + row[c];
            }
            while (!line.empty() && line.back() == ' ') line.pop_back();
            out += line;
            out += '\n';
        }
        return out;
    }

private:
    std::size_t text_columns_;
    std::vector<std::vector<std::string>> rows_;
};

std::string num(const json& v) {
    return std::to_string(v.get<std::uint64_t>());
}

// "name n, name n" over an object's non-zero members, or "none".
std::string non_zero(const json& counts) {
    std::string s;
    for (const auto& [name, n] : counts.items())
        if (n.get<std::uint64_t>() != 0) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", name, num(n));
    return s.empty() ? "none" : s;
}

std::string config_text(const json& c) {
    const double speed = c.at("speed").get<double>();
    std::string out = fmt::format(
        "config: {} device(s), {} engine, {}, burst {}\n", num(c.at("devices")),
        c.at("engine").get<std::string>(),
        speed > 0 ? fmt::format("speed {}x", speed) : std::string("topspeed"), num(c.at("burst")));
    const auto faults = c.at("faults").get<std::string>();
    out += fmt::format("  faults: {}\n", faults.empty() ? "none"
                                                        : fmt::format("'{}' (seed {})", faults, num(c.at("seed"))));
    for (const json& io : c.at("io"))
        out += fmt::format("  rdmasim{}: {} {}\n", num(io.at("device")), io.at("key").get<std::string>(),
                           io.at("value").get<std::string>());
    for (const json& link : c.at("links")) out += fmt::format("  link {}\n", link.get<std::string>());
    return out;
}

// The source line: what it read and skipped.
std::string source_text(const json& src) {
    return fmt::format("  source: {}: {} frames, {} bytes, {} truncated, {} dropped by the kernel{}\n",
                       src.at("description").get<std::string>(), num(src.at("frames")), num(src.at("bytes")),
                       num(src.at("truncated_records")), num(src.at("kernel_drops")),
                       src.at("failure").get<std::string>().empty()
                           ? ""
                           : fmt::format("; failed: {}", src.at("failure").get<std::string>()));
}

std::uint64_t total(const json& counts) {
    std::uint64_t sum = 0;
    for (const auto& [name, n] : counts.items()) sum += n.get<std::uint64_t>();
    return sum;
}

// The port's counters, its addresses, ARP and wire counts, and its drops by reason.
std::string port_text(const json& d) {
    const json& port = d.at("port");
    const std::uint64_t dropped = total(port.at("drops"));
    Table counters({"port counter", "value"});
    counters.add({"offered", num(port.at("frames"))});
    counters.add({"delivered", num(port.at("delivered"))});
    counters.add({"dropped", std::to_string(dropped)});
    counters.add({"held", num(port.at("held"))});
    for (const char* k : {"bytes", "delivered_bytes", "fcs_bad", "flushed_wqes", "flush_cq_overflow",
                          "delay_drop_waits", "sniffer_copies"})
        counters.add({k, num(port.at(k))});
    std::string out = "\n" + counters.text("  ");
    // Files written before the port had addresses lack these two.
    if (d.contains("addresses")) {
        const json& a = d.at("addresses");
        out += fmt::format("  addresses: mac {}, ipv4 {}, ipv6 {}, mtu {}\n", a.at("mac").get<std::string>(),
                           a.at("ipv4").get<std::string>(), a.at("ipv6").get<std::string>(), num(a.at("mtu")));
    }
    if (port.contains("arp")) out += fmt::format("  arp: {}\n", non_zero(port.at("arp")));
    if (d.contains("wire")) out += fmt::format("  wire: {}\n", non_zero(d.at("wire")));

    Table drops({"drop reason", "frames"});
    for (const auto& [name, n] : port.at("drops").items())
        if (n.get<std::uint64_t>() != 0) drops.add({name, num(n)});
    out += '\n';
    out += dropped != 0 ? drops.text("  ") : std::string("  drops: none\n");
    return out;
}

// The queues, alive and destroyed, and why each dropped what it did.
std::string queues_text(const json& d) {
    Table queues({"queue", "kind", "index", "state", "frames", "delivered", "dropped", "held", "flushed"}, 4);
    std::string reasons;
    for (const json& q : d.at("queues")) {
        const std::uint64_t qdrops = total(q.at("drops"));
        const std::string qpn = fmt::format("{:#x}", q.at("qp_num").get<std::uint32_t>());
        queues.add({qpn, q.at("kind").get<std::string>(), q.at("index").is_null() ? "-" : num(q.at("index")),
                    q.at("destroyed").get<bool>() ? "destroyed" : "alive", num(q.at("frames")),
                    num(q.at("delivered")), std::to_string(qdrops), num(q.at("held")),
                    num(q.at("flushed_wqes"))});
        if (qdrops != 0) reasons += fmt::format("    {}: {}\n", qpn, non_zero(q.at("drops")));
    }
    std::string out = "\n";
    out += d.at("queues").empty() ? std::string("  queues: none\n") : queues.text("  ");
    if (!reasons.empty()) {
        out += "  queue drops:\n";
        out += reasons;
    }
    if (const auto lost = d.at("queues_unrecorded").get<std::uint64_t>(); lost != 0)
        out += fmt::format("  ({} destroyed queue(s) not recorded: out of memory)\n", lost);
    return out;
}

// What was sent, the faults and failed verbs, the pacing.
std::string send_text(const json& d) {
    const json& send = d.at("send");
    std::string out = fmt::format("\n  sent: {} frames, {} bytes, {} not sent\n", num(send.at("frames")),
                                  num(send.at("bytes")), num(send.at("not_sent")));
    out += fmt::format("  faults injected: {}\n", non_zero(d.at("faults")));
    out += fmt::format("  verbs failed: {}\n", non_zero(d.at("verb_fails")));
    if (d.contains("pacing")) {
        const json& p = d.at("pacing");
        out += fmt::format("  pacing: {} frames, {:.3f} s for a {:.3f} s schedule; late by p50 {:.1f} us, "
                           "p99 {:.1f} us, max {:.1f} us\n",
                           num(p.at("frames")), p.at("elapsed_s").get<double>(),
                           p.at("schedule_s").get<double>(), p.at("p50_us").get<double>(),
                           p.at("p99_us").get<double>(), p.at("max_us").get<double>());
    }
    return out;
}

std::string device_text(const json& d) {
    std::string out = fmt::format("\n{}\n", d.at("name").get<std::string>());
    out += source_text(d.at("source"));
    out += port_text(d);
    out += queues_text(d);
    out += send_text(d);
    return out;
}

json load(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Bad{fmt::format("{}: cannot open: {}", path, std::strerror(errno))};
    std::ostringstream text;
    text << in.rdbuf();
    json doc;
    try {
        doc = json::parse(text.str());
    } catch (const json::parse_error& e) {
        throw Bad{fmt::format("{}: not a stats file: not JSON ({})", path, e.what())};
    }
    if (!doc.is_object() || !doc.contains("schema"))
        throw Bad{fmt::format("{}: not a stats file: no \"schema\" field (rdmasim run --stats writes one)", path)};
    if (!doc["schema"].is_number_integer() || doc["schema"].get<std::int64_t>() != sim::kStatsSchema)
        throw Bad{fmt::format("{}: schema {}: this rdmasim reads schema {}", path, doc["schema"].dump(),
                              sim::kStatsSchema)};
    return doc;
}

} // namespace

int run_stats(const StatsOptions& o) {
    try {
        const json doc = load(o.file);
        // The whole text is made before any of it is printed: a malformed
        // document prints its error alone.
        std::string out;
        try {
            out = fmt::format("stats {}: schema {}, written by {} ({})\n", o.file, num(doc.at("schema")),
                              doc.at("writer").get<std::string>(), doc.at("program").get<std::string>());
            out += config_text(doc.at("config"));
            for (const json& d : doc.at("devices")) out += device_text(d);
        } catch (const json::exception& e) {
            throw Bad{fmt::format("{}: malformed stats document: {}", o.file, e.what())};
        }
        if (o.json) out = doc.dump(2) + "\n";
        std::fwrite(out.data(), 1, out.size(), stdout);
        return 0;
    } catch (const Bad& b) {
        std::fprintf(stderr, "rdmasim stats: %s\n", b.message.c_str());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rdmasim stats: %s: %s\n", o.file.c_str(), e.what());
        return 1;
    }
}

} // namespace rdmasim::tools
