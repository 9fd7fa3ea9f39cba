// `rdmasim replay`: options -> Config -> Simulator -> receiver (its verbs
// set-up, tools/replay_receiver.cpp) -> poll loop -> report
// (tools/replay_report.cpp) -> exit status.
#include "tools/replay.hpp"

#include <infiniband/verbs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fmt/format.h>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "net/pcap_writer.hpp"
#include "sim/simulator.hpp"
#include "sim/stats_file.hpp"
#include "tools/replay_html.hpp"
#include "tools/replay_receiver.hpp"
#include "tools/replay_report.hpp"
#include "tools/exit_codes.hpp"
#include "tools/replay_stop.hpp"

namespace rdmasim::tools {

namespace {

struct Fail {
    std::string message;
    int status = kExitRuntime;
};

[[noreturn]] void fail(std::string message) {
    throw Fail{std::move(message)};
}

// A bad option value or setting: the usage status (tools/exit_codes.hpp).
[[noreturn]] void usage_error(std::string message) {
    throw Fail{std::move(message), kExitUsage};
}

[[noreturn]] void config_error(const Error& e) {
    throw Fail{e.message, config_error_status(e.code)};
}

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

std::string hex_head(const std::uint8_t* p, std::uint32_t len, std::uint32_t max) {
    std::string s;
    for (std::uint32_t i = 0; i < len && i < max; ++i)
        s += fmt::format("{:02x}", p[i]);
    if (len > max) s += "..";
    return s;
}

class ProgressBar {
public:
    explicit ProgressBar(bool on) : on_(on) {}
    // `progress()` gives {fraction done (< 0: unknown), frames}. Called only
    // when the bar is drawn: the source's position is a line the engine
    // thread writes, and reading it after every poll made the two threads
    // pass it back and forth.
    template <class Progress> void update(Progress&& progress) {
        if (!on_) return;
        const auto now = std::chrono::steady_clock::now();
        if (now - last_ < std::chrono::milliseconds(100)) return;
        last_ = now;
        const auto [fraction, frames] = progress();
        shown_ = true;
        const int width = 40;
        const int filled = fraction < 0 ? 0 : static_cast<int>(fraction * width);
        std::fprintf(stderr, "\r[%s%s] %3d%%  %llu frames", std::string(filled, '#').c_str(),
                     std::string(width - filled, ' ').c_str(),
                     fraction < 0 ? 0 : static_cast<int>(fraction * 100),
                     static_cast<unsigned long long>(frames));
    }
    void done() {
        if (shown_) std::fprintf(stderr, "\r%*s\r", 70, "");
    }

private:
    bool on_;
    bool shown_ = false;
    std::chrono::steady_clock::time_point last_{};
};

struct Tally {
    std::uint64_t completions = 0;
    std::uint64_t errors = 0;
    std::array<std::uint64_t, 64> statuses{}; // completions by ibv_wc_status (the last: any larger)

    void count(ibv_wc_status s) noexcept {
        ++statuses[std::min<std::size_t>(static_cast<std::size_t>(s), statuses.size() - 1)];
    }
    [[nodiscard]] StatusCounts status_counts() const {
        StatusCounts out;
        for (std::size_t s = 0; s < statuses.size(); ++s)
            if (statuses[s] != 0)
                out.emplace_back(s + 1 < statuses.size() ? ibv_wc_status_str(static_cast<ibv_wc_status>(s))
                                                         : "other",
                                 statuses[s]);
        return out;
    }
};

// The WQEs one poll batch completed (at most Receiver::kMaxChain), posted
// again by flush(). Chained (no delay drop): each WQ's WQEs as one chain, the
// WQs in the order they first completed. Otherwise one post per WQE, in
// completion order: with delay drop each post lets held frames take the WQE
// at once, so chaining would change the order of completions in the CQ (the
// golden test's contract).
class Reposter {
public:
    Reposter(Receiver& rx, bool chain) : rx_(rx), chain_(chain), by_wq_(rx.wq_count()) {
        for (auto& slots : by_wq_) slots.reserve(Receiver::kMaxChain);
        if (!chain_) in_order_.reserve(Receiver::kMaxChain);
    }
    [[nodiscard]] std::size_t size() const noexcept { return n_; }
    void add(std::uint32_t wq, std::uint32_t slot) {
        ++n_;
        if (!chain_) {
            in_order_.push_back({wq, slot});
            return;
        }
        if (by_wq_[wq].empty()) touched_[touched_n_++] = wq;
        by_wq_[wq].push_back(slot); // within the capacity reserved: n_ <= kMaxChain
    }
    void flush() {
        for (const auto& [wq, slot] : in_order_)
            if (auto r = rx_.post(wq, slot); !r) fail(r.error().message);
        in_order_.clear();
        for (std::size_t i = 0; i < touched_n_; ++i) {
            auto& slots = by_wq_[touched_[i]];
            if (auto r = rx_.post_chain(touched_[i], slots); !r) fail(r.error().message);
            slots.clear();
        }
        touched_n_ = n_ = 0;
    }

private:
    Receiver& rx_;
    bool chain_;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> in_order_; // (wq, slot), unchained
    std::vector<std::vector<std::uint32_t>> by_wq_;                 // slots per WQ, chained
    std::array<std::uint32_t, Receiver::kMaxChain> touched_{};      // WQs in first-completion order
    std::size_t touched_n_ = 0, n_ = 0;
};

// Polls, captures, shows and re-posts until the capture is done: the source
// drained or stopped, nothing held, and the CQ empty twice in a row.
Tally receive(const ReplayOptions& o, sim::Simulator& sim, Receiver& rx, net::PcapWriter* writer,
              ReplayStop& stop) {
    ProgressBar bar(isatty(STDERR_FILENO) && !o.json);
    Tally tally;
    std::uint64_t shown = 0;
    Reposter repost(rx, !rx.delay_drop());
    const auto& port = sim.port_counters(0);
    ibv_cq_ex* cq = rx.cq();
    // Thread engine, no pacing: polls that find nothing spin for kSpinIdle
    // before the receiver gives up its CPU (sched_yield). Yielding at once
    // put it behind every other runnable task of a busy machine for
    // milliseconds while the engine, still running, consumed every posted
    // WQE and dropped the rest as out of buffer (tests/bench/RESULTS.md,
    // 7c); while the engine delivers, completions come within microseconds.
    constexpr auto kSpinIdle = std::chrono::microseconds(50);
    using IdleClock = std::chrono::steady_clock;
    IdleClock::time_point idle_since{}; // of the empty polls in a row; {}: the last poll found some
    for (int quiet = 0; quiet < 2;) {
        stop.check();
        ibv_poll_cq_attr pa{};
        if (ibv_start_poll(cq, &pa) == 0) {
            do {
                const std::uint64_t id = cq->wr_id;
                ++tally.completions;
                tally.count(cq->status);
                if (cq->status == IBV_WC_SUCCESS) {
                    if (writer)
                        writer->write({rx.data(id), ibv_wc_read_byte_len(cq)},
                                      ibv_wc_read_completion_ts(cq));
                    if (shown < o.show) [[unlikely]] {
                        const std::uint32_t len = ibv_wc_read_byte_len(cq);
                        const std::uint8_t* data = rx.data(id);
                        ++shown;
                        const std::uint16_t tci = ibv_wc_read_cvlan(cq);
                        std::printf(
                            "frame %llu: wq %u len %u%s %s\n",
                            static_cast<unsigned long long>(tally.completions), rx.wq_of(id), len,
                            tci ? fmt::format(" vlan {} pcp {}", tci & 0xfff, tci >> 13).c_str()
                                : "",
                            hex_head(data, len, 32).c_str());
                    }
                } else {
                    ++tally.errors;
                }
                // A flushed WQE came from a queue in error: posted again it
                // would only be flushed again, for ever (sim/README.md, "Fault
                // injection": cqe-error, wq-fatal). Every other WQE goes back.
                if (cq->status != IBV_WC_WR_FLUSH_ERR) repost.add(rx.wq_of(id), rx.slot_of(id));
            } while (repost.size() < Receiver::kMaxChain && ibv_next_poll(cq) == 0);
            ibv_end_poll(cq);
        }
        const bool reposted = repost.size() != 0;
        repost.flush();
        bar.update([&] { return std::pair{sim.engine(0).source().progress(), port.frames.get()}; });
        if (!reposted) {
            if (sim.idle())
                ++quiet;
            else if (sim.config().speed > 0) // paced: leave the CPU to the engine
                std::this_thread::sleep_for(std::chrono::microseconds(50));
            else if (o.engine == "thread") {
                const auto now = IdleClock::now();
                if (idle_since == IdleClock::time_point{}) idle_since = now;
                if (now - idle_since >= kSpinIdle) std::this_thread::yield();
            }
        } else {
            quiet = 0;
            idle_since = {};
        }
    }
    bar.done();
    return tally;
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

int replay(const ReplayOptions& o) {
    const ReceiverSettings settings = receiver_settings(o);

    sim::Config cfg;
    if (auto r = cfg.apply_environment(); !r) config_error(r.error());
    std::vector<std::pair<std::string, std::string>> keys{
        {"engine", o.engine}, {"speed", o.speed}, {"start", "manual"}};
    // The source options map to the configuration keys `rdmasim run` sets.
    for (const auto& [k, v] : {std::pair<const char*, const std::string&>{"pcap", o.file},
                               {"iface", o.iface},
                               {"pcap_live", o.pcap_live},
                               {"filter", o.filter},
                               {"wire", o.wire}})
        if (!v.empty()) keys.emplace_back(k, v);
    if (o.promisc) keys.emplace_back("promisc", "on");
    for (const auto& [k, v] : keys)
        if (auto r = cfg.set(k, v); !r) config_error(r.error());
    if (!o.faults.empty())
        if (auto r = cfg.set("faults", o.faults); !r) config_error(r.error());
    if (!o.trace.empty())
        if (auto r = cfg.set("trace", o.trace); !r) config_error(r.error());
    if (!o.stats.empty())
        if (auto r = cfg.set("stats", o.stats); !r) config_error(r.error());
    if (!o.report.empty()) // RDMASIM_REPORT works too; --report wins
        if (auto r = cfg.set("report", o.report); !r) config_error(r.error());
    cfg.devices = 1;
    if (auto r = cfg.validate(); !r) config_error(r.error()); // two sources, say
    std::optional<std::chrono::nanoseconds> duration;
    if (o.duration_s > 0)
        duration = std::chrono::nanoseconds(static_cast<std::int64_t>(o.duration_s * 1e9));
    ReplayStop stop(duration); // catches SIGINT/SIGTERM before a live source is bound
    StopSource* stop_source = nullptr; // owned by the engine, which outlives its use below
    auto created = sim::Simulator::create(
        cfg, [&](std::uint32_t, std::unique_ptr<net::FrameSource> source) {
            if (!source) return source;
            auto s = std::make_unique<StopSource>(std::move(source), o.count);
            stop_source = s.get();
            return std::unique_ptr<net::FrameSource>(std::move(s));
        });
    if (!created) fail(created.error().message);
    sim::Simulator& sim = *created.value();
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

    const auto& port = sim.port_counters(0);
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
    // The accounting shown must balance: every frame offered has one outcome.
    const bool balanced = port.frames.get() == port.delivered.get() + port.drops_total();

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
                     static_cast<unsigned long long>(port.frames.get()),
                     static_cast<int>(why.size()), why.data());
        return kExitRuntime;
    }
    return status;
}

} // namespace

int run_replay(const ReplayOptions& options) {
    try {
        return replay(with_engine(options));
    } catch (const Fail& f) {
        std::fprintf(stderr, "rdmasim replay: %s\n", f.message.c_str());
        return f.status;
    } catch (const std::exception& e) { // std::bad_alloc and the like
        std::fprintf(stderr, "rdmasim replay: %s\n", e.what());
        return kExitRuntime;
    }
}

} // namespace rdmasim::tools
