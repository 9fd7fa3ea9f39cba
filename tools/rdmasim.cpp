// The rdmasim command line: replay a capture, run a program on emulated
// devices, print a --stats file.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "sim/logging.hpp"
#include "tools/config_command.hpp"
#include "tools/exit_codes.hpp"
#include "tools/install_paths.hpp"
#include "tools/replay.hpp"
#include "tools/run.hpp"
#include "tools/stats_cmd.hpp"


// `--set KEY=VALUE` arguments as pairs; false (and a message) for one without KEY=.
static bool split_sets(const std::vector<std::string>& sets,
                       std::vector<std::pair<std::string, std::string>>& out) {
    for (const auto& kv : sets) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) {
            std::fprintf(stderr, "rdmasim: --set %s: expected KEY=VALUE\n", kv.c_str());
            return false;
        }
        out.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
    return true;
}

namespace {

// `replay` and its options, into `ro`.
CLI::App* add_replay(CLI::App& app, rdmasim::tools::ReplayOptions& ro) {
    auto* replay = app.add_subcommand(
        "replay", "Replay a capture into an emulated device and receive it on WQs with RSS");
    replay->add_option("file", ro.file, "pcap or pcapng file (default: the bundled sample)");
    replay->add_option("--iface", ro.iface, "receive from a live interface (AF_PACKET ring; CAP_NET_RAW)");
    replay->add_option("--pcap-live", ro.pcap_live, "receive from a live interface through libpcap");
    replay->add_option("--filter", ro.filter, "BPF expression for --pcap-live");
    replay->add_flag("--promisc", ro.promisc, "live interfaces in promiscuous mode");
    replay->add_option("--wire", ro.wire, "receive from a virtual wire: ptp:///path, vde:///path, vxvde://group");
    replay->add_option("--count", ro.count, "stop after N frames offered to the port")
        ->check(CLI::PositiveNumber);
    replay->add_option("--duration", ro.duration_s, "stop after this many seconds")
        ->check(CLI::PositiveNumber);
    replay->add_option("--wqs", ro.wqs, "number of receive WQs")->check(CLI::Range(1, 1024));
    replay->add_option("--flags", ro.flags, "WQ creation flags: cvlan, fcs, pad, delay-drop")
        ->delimiter(',');
    replay->add_option("--ring", ro.ring, "WQEs per WQ")->check(CLI::Range(1, 32768));
    replay->add_option("--buf", ro.buf, "bytes per WQE buffer")->check(CLI::Range(1, 1 << 20));
    replay->add_option("--rss-fields", ro.rss_fields,
                       "RSS hash input: src-ip, dst-ip, src-port, dst-port")
        ->delimiter(',');
    replay->add_option("--speed", ro.speed, "topspeed, original, or a multiple like 2x");
    replay->add_option("--engine", ro.engine, "inline (deterministic) or thread (real time)")
        ->check(CLI::IsMember({"inline", "thread"}));
    replay->add_option("--capture", ro.capture, "write every delivered frame to this pcap");
    replay->add_flag("--json", ro.json, "print one JSON object instead of the table");
    replay->add_option("--show", ro.show, "print the first N delivered frames");
    replay->add_option("--faults", ro.faults, "fault plan, like 'seed=7; drop:p=0.01'");
    replay->add_option("--trace", ro.trace, "write completions and injected faults to FILE as JSON lines");
    replay->add_option("--stats", ro.stats, "write every counter to FILE as JSON at the end (rdmasim stats FILE)");

    replay->add_option("--report", ro.report, "write an HTML report (charts over time, configuration) to FILE");
    return replay;
}

// The source options `run` and `env` share; each becomes an RDMASIM_* setting.
struct SourceFlags {
    std::string pcap, devices, engine, speed, start, faults, trace, stats, report, iface, pcap_live,
        filter, wire, tx_capture, link, device_nodes;
    std::vector<std::string> sets;
    bool deterministic = false, promisc = false;

    void add_to(CLI::App* sub) {
        sub->add_option("--pcap", pcap, "capture replayed into rdmasim0");
        sub->add_option("--iface", iface, "live interface for rdmasim0 (AF_PACKET ring; CAP_NET_RAW)");
        sub->add_option("--pcap-live", pcap_live, "live interface for rdmasim0 through libpcap");
        sub->add_option("--filter", filter, "BPF expression for --pcap-live");
        sub->add_flag("--promisc", promisc, "live interfaces in promiscuous mode");
        sub->add_option("--wire", wire, "virtual wire for rdmasim0: ptp:///path, vde:///path, vxvde://group, shm:///path");
        sub->add_option("--tx-capture", tx_capture, "write every frame rdmasim0 sends to this pcap");
        sub->add_option("--link", link, "wire two devices back to back, like rdmasim0:rdmasim1");
        sub->add_option("--devices", devices, "number of devices (rdmasim0, rdmasim1, ...)");
        sub->add_option("--engine", engine, "thread (real time, default) or inline");
        sub->add_flag("--deterministic", deterministic, "the inline engine: virtual time, bit-identical reruns");
        sub->add_option("--speed", speed, "topspeed, original, or a multiple like 2x");
        sub->add_option("--start", start, "first-flow (default), now, or a delay like 250ms");
        sub->add_option("--faults", faults, "fault plan, like 'seed=7; drop:p=0.01' (RDMASIM_FAULTS)");
        sub->add_option("--trace", trace, "write completions and injected faults to FILE as JSON lines");
        sub->add_option("--stats", stats, "write every counter to FILE as JSON when the program exits (RDMASIM_STATS)");
        sub->add_option("--report", report, "write an HTML report of rdmasim0 to FILE at exit (RDMASIM_REPORT)");
        sub->add_option("--device-nodes", device_nodes,
                        "auto (default), on or off: the devices in /dev/infiniband and sysfs (UCX)");
        sub->add_option("--set", sets, "any configuration key, as KEY=VALUE (repeatable)")
            ->allow_extra_args(false); // one KEY=VALUE each: `--set k=v -- cmd -x` keeps -x for cmd
    }

    // The settings, in the order later ones override earlier ones; false
    // (and a message) for a --set without KEY=.
    bool settings(std::vector<std::pair<std::string, std::string>>& s) const {
        const std::pair<const char*, const std::string*> named[] = {
            {"pcap", &pcap}, {"devices", &devices}, {"iface", &iface}, {"pcap_live", &pcap_live},
            {"filter", &filter}};
        for (const auto& [key, value] : named)
            if (!value->empty()) s.emplace_back(key, *value);
        if (promisc) s.emplace_back("promisc", "on");
        const std::pair<const char*, const std::string*> more[] = {
            {"wire", &wire}, {"tx_capture", &tx_capture}, {"link", &link}};
        for (const auto& [key, value] : more)
            if (!value->empty()) s.emplace_back(key, *value);
        if (deterministic) s.emplace_back("engine", "inline");
        const std::pair<const char*, const std::string*> rest[] = {
            {"engine", &engine}, {"speed", &speed},
            {"start", &start},   {"faults", &faults},
            {"trace", &trace},   {"report", &report},
            {"stats", &stats},   {"device_nodes", &device_nodes}};
        for (const auto& [key, value] : rest)
            if (!value->empty()) s.emplace_back(key, *value);
        return split_sets(sets, s);
    }
};

// `config`: --reference, or --check with its --set values.
struct ConfigFlags {
    bool reference = false, check = false;
    std::vector<std::string> sets;

    CLI::App* add_to(CLI::App& app) {
        auto* config = app.add_subcommand("config", "The configuration: every key and its spellings, or a check");
        auto* what = config->add_option_group("action", "one of");
        what->add_flag("--reference", reference, "print the Markdown table of every key (README.md)");
        auto* check_flag = what->add_flag(
            "--check", check, "validate RDMASIM_CONFIG, the RDMASIM_* variables and the --set values");
        what->require_option(1);
        config->add_option("--set", sets, "a configuration key, as KEY=VALUE (repeatable)")->needs(check_flag);
        return config;
    }

    [[nodiscard]] int run() const {
        if (reference) return rdmasim::tools::print_config_reference();
        std::vector<std::pair<std::string, std::string>> settings;
        if (!split_sets(sets, settings)) return rdmasim::tools::kExitUsage;
        return rdmasim::tools::check_config(settings);
    }
};

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"rdmasim: a software-emulated RDMA HCA with a work-queue receive datapath"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "rdmasim " RDMASIM_VERSION);
    std::string log_level = "warn";
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));

    rdmasim::tools::ReplayOptions ro;
    auto* replay = add_replay(app, ro);
    rdmasim::tools::RunOptions run_opts;
    SourceFlags source;
    auto* run = app.add_subcommand("run", "Run an unmodified verbs program against emulated devices");
    source.add_to(run);
    run->add_option("command", run_opts.command, "the program and its arguments (after --)")->required();
    auto* env = app.add_subcommand("env", "Print the environment `run` would set, as shell exports");
    source.add_to(env);

    rdmasim::tools::StatsOptions so;
    auto* stats_cmd = app.add_subcommand("stats", "Print a --stats file as tables");
    stats_cmd->add_option("file", so.file, "the JSON document --stats wrote")->required();
    stats_cmd->add_flag("--json", so.json, "print the document itself, once checked");
    ConfigFlags config_flags;
    auto* config = config_flags.add_to(app);

    try { // every command-line error is a usage error (tools/exit_codes.hpp); --help is 0
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? rdmasim::tools::kExitOk : rdmasim::tools::kExitUsage;
    }
    if (stats_cmd->parsed()) return rdmasim::tools::run_stats(so);
    if (config->parsed()) return config_flags.run();
    if (run->parsed() || env->parsed()) {
        if (!source.settings(run_opts.settings)) return rdmasim::tools::kExitUsage;
        return run->parsed() ? rdmasim::tools::run_command(run_opts)
                             : rdmasim::tools::print_environment(run_opts);
    }
    rdmasim::sim::set_log_level(log_level);
    if (replay->parsed()) {
        if (ro.file.empty() && !rdmasim::tools::live_source(ro)) ro.file = rdmasim::tools::sample_capture();
        return rdmasim::tools::run_replay(ro);
    }
    return 0;
}
