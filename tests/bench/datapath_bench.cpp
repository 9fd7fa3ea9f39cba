// In-process datapath benchmarks (issue 11, targets 2, 6 and 7): the
// library linked in, frames already in memory (FILE's frames loaded once,
// then handed out round-robin by a source that copies nothing), the bench
// receiver (bench_receiver.h: RSS, CVLAN stripping, FCS scatter, end
// padding, CQ-ex, re-post every round).
//
//   datapath_bench mpps FILE FRAMES [WQS]
//       inline engine (no thread: frames enter when the receiver polls, on
//       its core). The first tenth of FRAMES warms up; the rest is timed.
//       JSON: frames, seconds, cpu_seconds (this process's CPU time over
//       the same span: on a shared machine, the time the work took), mpps,
//       mpps_cpu (frames per CPU second), gbps (frame bytes per second), and
//       allocs_per_frame over the timed part when alloc_count.so is
//       preloaded (else null).
//   datapath_bench latency FILE FRAMES GAP_NS [WQS]
//       thread engine pacing frame i to GAP_NS * i after the first
//       (`speed=original`); the receiver busy-polls and takes, per frame,
//       the time from when the frame was due to when its completion was
//       polled. JSON: frames, offered, dropped (the port's drops, e.g. no
//       WQE posted in time), delivered, p50_us, p99_us, max_us, and the
//       engine's share: how late frames entered the port (entry_p50_us,
//       entry_p99_us, from Engine::pacing_stats); cpus: where the receiver
//       and the engine ran. Where the process may use two CPUs or more,
//       the receiver runs on the first and the engine on the second
//       (engine_cpus), as a latency-minded program places them, and as
//       handoff_floor places its two threads; else "unpinned".
#include <dlfcn.h>
#include <pcap/pcap.h>

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "net/frame_source.hpp"
#include "sim/config.hpp"
#include "sim/simulator.hpp"
#include "tests/bench/bench_probe.h"
#include "tests/bench/bench_receiver.h"

namespace {

using Clock = std::chrono::steady_clock;

std::int64_t cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
        .count();
}

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "datapath_bench: %s\n", what.c_str());
    std::exit(1);
}

// Every frame of a capture, back to back in one buffer.
struct Frames {
    std::vector<std::uint8_t> bytes;
    std::vector<std::uint32_t> offset, len;
};

Frames load(const char* path) {
    char err[PCAP_ERRBUF_SIZE];
    pcap_t* p = pcap_open_offline(path, err);
    if (p == nullptr) fail(std::string(path) + ": " + err);
    Frames f;
    pcap_pkthdr* h = nullptr;
    const std::uint8_t* d = nullptr;
    while (pcap_next_ex(p, &h, &d) == 1) {
        f.offset.push_back(static_cast<std::uint32_t>(f.bytes.size()));
        f.len.push_back(h->caplen);
        f.bytes.insert(f.bytes.end(), d, d + h->caplen);
    }
    pcap_close(p);
    if (f.len.empty()) fail(std::string(path) + ": no frames");
    return f;
}

// Hands out `count` frames, FILE's in turn, frame i stamped i * gap_ns. With
// `stamp`, frame i is copied and carries i in bytes 8..11 (the source MAC,
// which no offload moves) and the time it was first handed out is kept.
class CyclicSource final : public rdmasim::net::FrameSource {
public:
    CyclicSource(const Frames& frames, std::uint64_t count, std::uint64_t gap_ns, bool stamp)
        : f_(frames), count_(count), gap_ns_(gap_ns), stamp_(stamp) {}

    bool next(rdmasim::net::Frame& out) noexcept override { return next_burst({&out, 1}) == 1; }
    // A whole burst at a time, counted once: a source as cheap as a PMD's
    // ring, so that case 2 measures the device. Stamped frames share
    // scratch_: one a call.
    std::uint32_t next_burst(std::span<rdmasim::net::Frame> out) noexcept override {
        const std::uint64_t room = stamp_ ? 1 : out.size();
        const auto n = static_cast<std::uint32_t>(std::min(room, count_ - i_));
        // Locals: a Frame has one-byte fields, whose stores may alias anything.
        const std::uint32_t* const lens = f_.len.data();
        const std::uint32_t* const offsets = f_.offset.data();
        const std::uint8_t* const bytes_at = f_.bytes.data();
        const std::size_t frames = f_.len.size();
        std::size_t k = k_; // i_ % frames, without a division
        std::uint64_t ts = 1'700'000'000'000'000'000ull + i_ * gap_ns_, bytes = 0;
        for (std::uint32_t j = 0; j < n; ++j) {
            rdmasim::net::Frame f;
            f.data = bytes_at + offsets[k];
            f.len = f.wire_len = lens[k];
            f.ts_ns = ts;
            if (stamp_) f.data = stamped(f.data, f.len);
            out[j] = f;
            bytes += f.len;
            ts += gap_ns_;
            if (++k == frames) k = 0;
        }
        k_ = k;
        i_ += n;
        counters_.frames += n;
        counters_.bytes += bytes;
        return n;
    }
    [[nodiscard]] bool exhausted() const noexcept override { return i_ >= count_; }
    [[nodiscard]] std::string describe() const override { return "benchmark frames in memory"; }
    [[nodiscard]] const rdmasim::net::SourceCounters& counters() const noexcept override {
        return counters_;
    }

    std::atomic<std::int64_t> first_ns{0};

private:
    // Frame i_'s bytes copied to scratch_ with i_ in bytes 8..11; the
    // first one's time kept.
    const std::uint8_t* stamped(const std::uint8_t* data, std::uint32_t len) noexcept {
        std::memcpy(scratch_, data, std::min<std::size_t>(len, sizeof scratch_));
        const auto i = static_cast<std::uint32_t>(i_);
        std::memcpy(scratch_ + 8, &i, sizeof i);
        if (i_ == 0) first_ns.store(now_ns(), std::memory_order_release);
        return scratch_;
    }

    const Frames& f_;
    std::uint64_t count_, gap_ns_, i_ = 0;
    std::size_t k_ = 0;
    bool stamp_;
    std::uint8_t scratch_[9216];
    rdmasim::net::SourceCounters counters_;
};

struct Setup {
    std::unique_ptr<rdmasim::sim::Simulator> sim;
    CyclicSource* source = nullptr;
    ibv_context* ctx = nullptr;
    bench_rx rx{};
};

void open(Setup& s, const Frames& frames, std::uint64_t count, std::uint64_t gap_ns, bool stamp,
          std::initializer_list<std::pair<const char*, const char*>> settings, std::uint32_t wqs) {
    rdmasim::sim::Config config;
    for (auto [key, value] : settings)
        if (auto r = config.set(key, value); !r) fail(r.error().message);
    auto src = std::make_unique<CyclicSource>(frames, count, gap_ns, stamp);
    s.source = src.get();
    std::vector<std::unique_ptr<rdmasim::net::FrameSource>> sources;
    sources.push_back(std::move(src));
    auto sim = rdmasim::sim::Simulator::create(config, std::move(sources));
    if (!sim) fail(sim.error().message);
    s.sim = std::move(sim.value());
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr || n < 1) fail("no device");
    s.ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    if (s.ctx == nullptr) fail("ibv_open_device failed");
    if (bench_rx_open(&s.rx, s.ctx, wqs, 256, 2048) != 0) fail("receiver set-up failed");
}

void close(Setup& s) {
    const int err = bench_rx_close(&s.rx);
    ibv_close_device(s.ctx);
    s.sim.reset();
    if (err != 0) fail("receiver teardown failed");
}

using AllocCount = unsigned long long (*)();

int mpps(const char* file, std::uint64_t count, std::uint32_t wqs) {
    const Frames frames = load(file);
    Setup s;
    open(s, frames, count, 1000, false, {{"engine", "inline"}}, wqs);
    const auto alloc_count =
        reinterpret_cast<AllocCount>(dlsym(RTLD_DEFAULT, "rdmasim_alloc_count"));
    const std::uint64_t warm = count / 10;
    std::uint64_t t0 = 0, bytes0 = 0, timed_from = 0;
    std::int64_t cpu0 = 0;
    unsigned long long allocs0 = 0;
    std::uint64_t empty = 0;
    while (s.rx.completions < count && empty < 1000) {
        if (t0 == 0 && s.rx.completions >= warm) {
            timed_from = s.rx.completions;
            bytes0 = s.rx.bytes;
            if (alloc_count) allocs0 = alloc_count();
            cpu0 = cpu_ns();
            t0 = static_cast<std::uint64_t>(now_ns());
        }
        const long got = bench_rx_poll(&s.rx, nullptr, nullptr);
        if (got < 0) fail("poll failed");
        empty = got == 0 ? empty + 1 : 0;
    }
    const double secs = static_cast<double>(static_cast<std::uint64_t>(now_ns()) - t0) / 1e9;
    const double cpu_secs = static_cast<double>(cpu_ns() - cpu0) / 1e9;
    const unsigned long long allocs = alloc_count ? alloc_count() - allocs0 : 0;
    const std::uint64_t timed = s.rx.completions - timed_from, bytes = s.rx.bytes - bytes0;
    const std::uint64_t done = s.rx.completions, errors = s.rx.errors;
    close(s);
    if (done < count || errors != 0)
        fail(std::to_string(done) + " of " + std::to_string(count) + " frames, " +
             std::to_string(errors) + " error completions");
    std::string per_frame = "null";
    if (alloc_count) per_frame = std::to_string(static_cast<double>(allocs) / static_cast<double>(timed));
    std::printf("{\"frames\": %llu, \"seconds\": %.6f, \"cpu_seconds\": %.6f, \"mpps\": %.3f, "
                "\"mpps_cpu\": %.3f, \"gbps\": %.3f, \"allocs_per_frame\": %s}\n",
                static_cast<unsigned long long>(timed), secs, cpu_secs,
                static_cast<double>(timed) / secs / 1e6, static_cast<double>(timed) / cpu_secs / 1e6,
                static_cast<double>(bytes) / secs / 1e9, per_frame.c_str());
    return 0;
}

struct Latencies {
    CyclicSource* source;
    std::uint64_t gap_ns;
    std::vector<std::uint32_t> ns;
};

void take_latency(void* arg, ibv_cq_ex*, const std::uint8_t* bytes) {
    auto& l = *static_cast<Latencies*>(arg);
    std::uint32_t i = 0;
    std::memcpy(&i, bytes + 8, sizeof i);
    const std::int64_t due =
        l.source->first_ns.load(std::memory_order_acquire) + static_cast<std::int64_t>(i * l.gap_ns);
    const std::int64_t late = now_ns() - due;
    l.ns.push_back(static_cast<std::uint32_t>(std::clamp<std::int64_t>(late, 0, UINT32_MAX)));
}

int latency(const char* file, std::uint64_t count, std::uint64_t gap_ns, std::uint32_t wqs) {
    const Frames frames = load(file);
    int cpus[2];
    const bool pin = probe_two_cpus(cpus) != 0;
    const std::string engine_cpu = pin ? std::to_string(cpus[1]) : "none";
    Setup s;
    open(s, frames, count, gap_ns, true,
         {{"engine", "thread"}, {"speed", "original"}, {"start", "manual"}, {"engine_cpus", engine_cpu.c_str()}},
         wqs);
    // The engine thread exists by now: only this one moves.
    if (pin && probe_pin_self(cpus[0]) != 0) fail("sched_setaffinity");
    Latencies l{s.source, gap_ns, {}};
    l.ns.reserve(count);
    s.sim->engine(0).begin();
    const std::int64_t give_up =
        now_ns() + static_cast<std::int64_t>(count * gap_ns) + 10'000'000'000;
    for (;;) {
        const bool idle = s.sim->idle(); // before the poll: every frame has its outcome
        const long got = bench_rx_poll(&s.rx, take_latency, &l);
        if (got < 0) fail("poll failed");
        if (s.rx.completions + s.rx.errors >= count || (idle && got == 0)) break;
        if (now_ns() > give_up) fail("the replay did not finish in time");
    }
    const std::uint64_t offered = s.sim->port_counters(0).frames.get();
    const std::uint64_t dropped = s.sim->port_counters(0).drops_total();
    // The engine's own part: how late frames entered the port.
    const auto& pacing = s.sim->engine(0).pacing_stats();
    const double entry_p50 = static_cast<double>(pacing.quantile_ns(0.5)) / 1e3;
    const double entry_p99 = static_cast<double>(pacing.quantile_ns(0.99)) / 1e3;
    close(s);
    std::sort(l.ns.begin(), l.ns.end());
    const auto pct = [&l](double p) { return probe_quantile_us(l.ns.data(), l.ns.size(), p); };
    std::printf("{\"frames\": %llu, \"offered\": %llu, \"dropped\": %llu, \"delivered\": %zu, "
                "\"p50_us\": %.2f, \"p99_us\": %.2f, \"max_us\": %.2f, \"entry_p50_us\": %.2f, "
                "\"entry_p99_us\": %.2f, \"cpus\": \"%s\"}\n",
                static_cast<unsigned long long>(count), static_cast<unsigned long long>(offered),
                static_cast<unsigned long long>(dropped), l.ns.size(), pct(0.5), pct(0.99), pct(1.0),
                entry_p50, entry_p99,
                pin ? (std::to_string(cpus[0]) + "," + std::to_string(cpus[1])).c_str() : "unpinned");
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    auto num = [&](int i) { return std::strtoull(argv[i], nullptr, 10); };
    if (mode == "mpps" && (argc == 4 || argc == 5))
        return mpps(argv[2], num(3), argc == 5 ? static_cast<std::uint32_t>(num(4)) : 4);
    if (mode == "latency" && (argc == 5 || argc == 6))
        return latency(argv[2], num(3), num(4), argc == 6 ? static_cast<std::uint32_t>(num(5)) : 4);
    std::fprintf(stderr, "usage: %s mpps FILE FRAMES [WQS]\n"
                         "       %s latency FILE FRAMES GAP_NS [WQS]\n",
                 argv[0], argv[0]);
    return 2;
}
