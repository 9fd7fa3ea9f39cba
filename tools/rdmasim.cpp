// The rdmasim command line: replay (more subcommands join as they land).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "sim/logging.hpp"
#include "tools/replay.hpp"

#ifndef RDMASIM_SAMPLE_PCAP
#error "RDMASIM_SAMPLE_PCAP must name the bundled sample capture"
#endif

int main(int argc, char** argv) {
    CLI::App app{"rdmasim: a software-emulated RDMA HCA with a work-queue receive datapath"};
    app.require_subcommand(1);
    std::string log_level = "warn";
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));

    rdmasim::tools::ReplayOptions ro;
    auto* replay = app.add_subcommand(
        "replay", "Replay a capture into an emulated device and receive it on WQs with RSS");
    replay->add_option("file", ro.file, "pcap or pcapng file (default: the bundled sample)");
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

    CLI11_PARSE(app, argc, argv);
    rdmasim::sim::set_log_level(log_level);
    if (replay->parsed()) {
        if (ro.file.empty()) ro.file = RDMASIM_SAMPLE_PCAP;
        return rdmasim::tools::run_replay(ro);
    }
    return 0;
}
