#include "tools/replay_poll.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tools/replay_fail.hpp"

namespace rdmasim::tools {

namespace {

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

// One completion: counted, written to the capture, shown, queued for re-posting.
class CompletionSink {
public:
    CompletionSink(const ReplayOptions& o, Receiver& rx, net::PcapWriter* writer, Tally& tally)
        : o_(o), rx_(rx), writer_(writer), tally_(tally), repost_(rx, !rx.delay_drop()) {}

    // Takes the CQ's completions until it is empty or a chain is full; true
    // when it took any. The WQEs go back at once.
    bool poll(ibv_cq_ex* cq) {
        ibv_poll_cq_attr pa{};
        if (ibv_start_poll(cq, &pa) == 0) {
            do take(cq);
            while (repost_.size() < Receiver::kMaxChain && ibv_next_poll(cq) == 0);
            ibv_end_poll(cq);
        }
        const bool reposted = repost_.size() != 0;
        repost_.flush();
        return reposted;
    }

private:
    void take(ibv_cq_ex* cq) {
        const std::uint64_t id = cq->wr_id;
        ++tally_.completions;
        tally_.count(cq->status);
        if (cq->status == IBV_WC_SUCCESS) {
            if (writer_)
                writer_->write({rx_.data(id), ibv_wc_read_byte_len(cq)}, ibv_wc_read_completion_ts(cq));
            if (shown_ < o_.show) [[unlikely]]
                show(cq, id);
        } else {
            ++tally_.errors;
        }
        // A flushed WQE came from a queue in error: posted again it
        // would only be flushed again, for ever (sim/README.md, "Fault
        // injection": cqe-error, wq-fatal). Every other WQE goes back.
        if (cq->status != IBV_WC_WR_FLUSH_ERR) repost_.add(rx_.wq_of(id), rx_.slot_of(id));
    }

    void show(ibv_cq_ex* cq, std::uint64_t id) {
        const std::uint32_t len = ibv_wc_read_byte_len(cq);
        const std::uint8_t* data = rx_.data(id);
        ++shown_;
        const std::uint16_t tci = ibv_wc_read_cvlan(cq);
        std::printf("frame %llu: wq %u len %u%s %s\n", static_cast<unsigned long long>(tally_.completions),
                    rx_.wq_of(id), len,
                    tci ? fmt::format(" vlan {} pcp {}", tci & 0xfff, tci >> 13).c_str() : "",
                    hex_head(data, len, 32).c_str());
    }

    const ReplayOptions& o_;
    Receiver& rx_;
    net::PcapWriter* writer_;
    Tally& tally_;
    Reposter repost_;
    std::uint64_t shown_ = 0;
};

// What the receiver does after a poll that re-posted nothing, while the
// engine still works.
class IdleWait {
public:
    IdleWait(const ReplayOptions& o, const sim::Simulator& sim)
        : paced_(sim.config().speed > 0), thread_(o.engine == "thread") {}
    void after_empty_poll() {
        if (paced_) { // paced: leave the CPU to the engine
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        } else if (thread_) {
            const auto now = Clock::now();
            if (since_ == Clock::time_point{}) since_ = now;
            if (now - since_ >= kSpinIdle) std::this_thread::yield();
        }
    }
    void after_busy_poll() { since_ = {}; }

private:
    // Thread engine, no pacing: polls that find nothing spin for kSpinIdle
    // before the receiver gives up its CPU (sched_yield). Yielding at once
    // put it behind every other runnable task of a busy machine for
    // milliseconds while the engine, still running, consumed every posted
    // WQE and dropped the rest as out of buffer (tests/bench/RESULTS.md,
    // 7c); while the engine delivers, completions come within microseconds.
    static constexpr auto kSpinIdle = std::chrono::microseconds(50);
    using Clock = std::chrono::steady_clock;
    bool paced_;
    bool thread_;
    Clock::time_point since_{}; // of the empty polls in a row; {}: the last poll found some
};

} // namespace

Tally receive(const ReplayOptions& o, sim::Simulator& sim, Receiver& rx, net::PcapWriter* writer,
              ReplayStop& stop) {
    ProgressBar bar(isatty(STDERR_FILENO) && !o.json);
    Tally tally;
    CompletionSink sink(o, rx, writer, tally);
    IdleWait wait(o, sim);
    const auto& port = sim.port_counters(0);
    ibv_cq_ex* cq = rx.cq();
    for (int quiet = 0; quiet < 2;) {
        stop.check();
        const bool reposted = sink.poll(cq);
        bar.update([&] { return std::pair{sim.engine(0).source().progress(), port.frames.get()}; });
        if (reposted) {
            quiet = 0;
            wait.after_busy_poll();
        } else if (sim.idle()) {
            ++quiet;
        } else {
            wait.after_empty_poll();
        }
    }
    bar.done();
    return tally;
}

} // namespace rdmasim::tools
