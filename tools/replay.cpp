// `rdmasim replay`: options -> Config -> Simulator -> receiver (its verbs
// set-up, tools/replay_receiver.cpp) -> poll loop -> report
// (tools/replay_report.cpp) -> exit status.
#include "tools/replay.hpp"

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <fmt/format.h>
#include <memory>
#include <optional>
#include <utility>

#include "net/pcap_writer.hpp"
#include "sim/simulator.hpp"
#include "sim/stats_file.hpp"
#include "tools/replay_html.hpp"
#include "tools/replay_receiver.hpp"
#include "tools/replay_report.hpp"
#include "tools/exit_codes.hpp"
#include "tools/replay_stop.hpp"
#include "tools/replay_fail.hpp"
#include "tools/replay_poll.hpp"

namespace rdmasim::tools {

namespace {

std::uint32_t parse_flags(const std::vector<std::string>& names) {
    std::uint32_t f = 0;
    for (const auto& n : names) {
        if (n == "cvlan")
            f |= IBV_WQ_FLAGS_CVLAN_STRIPPING;
        else if (n == "fcs")
            f |= IBV_WQ_FLAGS_SCATTER_FCS;
        else if (n == "pad")
            f |= IBV_WQ_FLAGS_PCI_WRITE_END_PADDING;
        else if (n == "delay-drop")
            f |= IBV_WQ_FLAGS_DELAY_DROP;
        else
            usage_error(fmt::format("--flags: unknown flag '{}' (cvlan, fcs, pad, delay-drop)", n));
    }
    return f;
}

HashInputs parse_hash_inputs(const std::vector<std::string>& names) {
    HashInputs h;
    for (const auto& n : names) {
        if (n == "src-ip")
            h.src_ip = true;
        else if (n == "dst-ip")
            h.dst_ip = true;
        else if (n == "src-port")
            h.src_port = true;
        else if (n == "dst-port")
            h.dst_port = true;
        else
            usage_error(fmt::format(
                "--rss-fields: unknown field '{}' (src-ip, dst-ip, src-port, dst-port)", n));
    }
    return h;
}

ReceiverSettings receiver_settings(const ReplayOptions& o) {
    if (o.wqs == 0 || o.wqs > 1024) usage_error("--wqs: expected 1..1024");
    if (o.ring == 0) usage_error("--ring: expected at least 1");
    if (o.buf == 0 || o.buf > (1u << 20)) usage_error("--buf: expected 1..1048576 bytes");
    ReceiverSettings s;
    s.wqs = o.wqs;
    s.ring = o.ring;
    s.buf = o.buf;
    s.wq_flags = parse_flags(o.flags);
    s.hash = parse_hash_inputs(o.rss_fields);
    return s;
}

// Pacing needs real time: without --engine a paced replay takes the thread
// engine; the inline engine (virtual time) cannot pace.
ReplayOptions with_engine(ReplayOptions o) {
    sim::Config probe;
    if (auto r = probe.set("speed", o.speed); !r) config_error(r.error());
    if (o.engine.empty())
        o.engine = probe.speed > 0 ? "thread" : "inline";
    else if (o.engine == "inline" && probe.speed > 0)
        usage_error(fmt::format("--speed {}: the inline engine runs on virtual time and cannot pace; "
                         "use --engine thread (the default with --speed)",
                         o.speed));
    return o;
}

// The configuration: the environment's, then the options (the source
// options map to the keys `rdmasim run` sets), one device; validated.
sim::Config replay_config(const ReplayOptions& o) {
    sim::Config cfg;
    if (auto r = cfg.apply_environment(); !r) config_error(r.error());
    std::vector<std::pair<std::string, std::string>> keys{
        {"engine", o.engine}, {"speed", o.speed}, {"start", "manual"}};
    for (const auto& [k, v] : {std::pair<const char*, const std::string&>{"pcap", o.file},
                               {"iface", o.iface},
                               {"pcap_live", o.pcap_live},
                               {"filter", o.filter},
                               {"wire", o.wire}})
        if (!v.empty()) keys.emplace_back(k, v);
    if (o.promisc) keys.emplace_back("promisc", "on");
    // --report wins over RDMASIM_REPORT, as the others over theirs.
    for (const auto& [k, v] : {std::pair<const char*, const std::string&>{"faults", o.faults},
                               {"trace", o.trace},
                               {"stats", o.stats},
                               {"report", o.report}})
        if (!v.empty()) keys.emplace_back(k, v);
    for (const auto& [k, v] : keys)
        if (auto r = cfg.set(k, v); !r) config_error(r.error());
    cfg.devices = 1;
    if (auto r = cfg.validate(); !r) config_error(r.error()); // two sources, say
    return cfg;
}

// The Simulator, its source behind a StopSource (set in `stop_source`; owned
// by the engine, which outlives its use) that ends it after --count frames.
std::unique_ptr<sim::Simulator> create_simulator(const sim::Config& cfg, const ReplayOptions& o,
                                                 StopSource*& stop_source) {
    auto created = sim::Simulator::create(
        cfg, [&](std::uint32_t, std::unique_ptr<net::FrameSource> source) {
            if (!source) return source;
            auto s = std::make_unique<StopSource>(std::move(source), o.count);
            stop_source = s.get();
            return std::unique_ptr<net::FrameSource>(std::move(s));
        });
    if (!created) fail(created.error().message);
    return std::move(created.value());
}

// Prints the report (and writes the HTML one); false when the accounting
// shown does not balance: every frame offered must have one outcome.
bool print_results(const ReplayOptions& o, sim::Simulator& sim, Receiver& rx, const Tally& tally,
                   const StopSource* stop_source) {
    const auto& port = sim.port_counters(0);
    const sim::Config& cfg = sim.config();
    ReplayReport report{o, port, {}, tally.completions, tally.errors};
    report.source = &sim.engine(0).source();
    report.source_description = sim.engine(0).describe_source();
    if (stop_source != nullptr) report.stopped_by = stop_reason_name(stop_source->reason());
    const sim::FaultCounts faults = sim.faults_injected(0);
    if (!cfg.fault_plan.empty()) report.faults = &faults;
    if (cfg.speed > 0) report.pacing = &sim.engine(0).pacing_stats();
    for (std::uint32_t w = 0; w < rx.wq_count(); ++w) {
        const datapath::RxCounters* c = sim.queue_counters(0, rx.wq_num(w));
        if (c == nullptr) fail(fmt::format("no counters for WQ {:#x}", rx.wq_num(w)));
        report.queues.push_back({w, rx.wq_num(w), c});
    }
    print_report(report);
    if (sim::Timeline* timeline = sim.timeline(0); timeline != nullptr) {
        if (auto r = write_replay_html(cfg.report, report, cfg, *timeline, tally.status_counts()); !r)
            fail(r.error().message);
        if (!o.json) std::printf("report: %s\n", cfg.report.c_str());
    }
    return port.frames.get() == port.delivered.get() + port.drops_total();
}

// Tears the receiver and the capture down, writes --stats, and gives the
// exit status.
int finish(const ReplayOptions& o, sim::Simulator& sim, Receiver& rx, net::PcapWriter* writer, bool balanced) {
    int status = 0;
    if (auto r = rx.close(); !r) {
        std::fprintf(stderr, "rdmasim replay: %s\n", r.error().message.c_str());
        status = kExitRuntime;
    }
    if (writer)
        if (auto r = writer->close(); !r) fail(r.error().message);
    // After the receiver's teardown: its WQs are in the file as destroyed,
    // with their final counts (sim/README.md, "Statistics").
    if (auto r = sim::write_stats(sim, "replay"); !r) {
        std::fprintf(stderr, "rdmasim replay: %s\n", r.error().message.c_str());
        status = 1;
    }
    if (!balanced) {
        std::fprintf(stderr, "rdmasim replay: accounting does not balance\n");
        return kExitRuntime;
    }
    if (const auto why = sim.engine(0).source().failure(); !why.empty()) {
        std::fprintf(stderr, "rdmasim replay: %s: read error after %llu frames: %.*s\n",
                     o.file.empty() ? sim.engine(0).describe_source().c_str() : o.file.c_str(),
                     static_cast<unsigned long long>(sim.port_counters(0).frames.get()),
                     static_cast<int>(why.size()), why.data());
        return kExitRuntime;
    }
    return status;
}

int replay(const ReplayOptions& o) {
    const ReceiverSettings settings = receiver_settings(o);
    const sim::Config cfg = replay_config(o);
    std::optional<std::chrono::nanoseconds> duration;
    if (o.duration_s > 0)
        duration = std::chrono::nanoseconds(static_cast<std::int64_t>(o.duration_s * 1e9));
    ReplayStop stop(duration); // catches SIGINT/SIGTERM before a live source is bound
    StopSource* stop_source = nullptr;
    const std::unique_ptr<sim::Simulator> simulator = create_simulator(cfg, o, stop_source);
    sim::Simulator& sim = *simulator;
    stop.watch(stop_source);

    std::unique_ptr<net::PcapWriter> writer;
    if (!o.capture.empty()) {
        auto w = net::PcapWriter::open(o.capture);
        if (!w) fail(w.error().message);
        writer = std::move(w.value());
    }

    // Declared after the Simulator and the writer: torn down before them, on every path.
    auto opened = Receiver::open(settings);
    if (!opened) fail(opened.error().message);
    Receiver& rx = *opened.value();

    // The receive set-up is complete: only now does the capture start to flow
    // (a program under `rdmasim run` gets the same from start=first-flow).
    sim.engine(0).begin();
    stop.start();
    const Tally tally = receive(o, sim, rx, writer.get(), stop);
    const bool balanced = print_results(o, sim, rx, tally, stop_source);
    return finish(o, sim, rx, writer.get(), balanced);
}

} // namespace

int run_replay(const ReplayOptions& options) {
    try {
        return replay(with_engine(options));
    } catch (const ReplayFailure& f) {
        std::fprintf(stderr, "rdmasim replay: %s\n", f.message.c_str());
        return f.status;
    } catch (const std::exception& e) { // std::bad_alloc and the like
        std::fprintf(stderr, "rdmasim replay: %s\n", e.what());
        return kExitRuntime;
    }
}

} // namespace rdmasim::tools
