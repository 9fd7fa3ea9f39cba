// Concurrency stress: the thread engine at top speed against program threads
// that poll, post and change WQ state at the same time, all through verbs.
// Every run proves the two accounting rules a user relies on:
//   * every WQE posted completes exactly once (success while running, or
//     IBV_WC_WR_FLUSH_ERR once its WQ goes to ERR): no loss, no duplicate;
//   * every frame offered to the port has exactly one outcome:
//     frames == delivered + drops (by reason) + held, and the successful
//     completions the program saw are exactly the port's delivered frames.
// RDMASIM_STRESS_FRAMES sets the frames per run (default 5,000,000; sanitizer
// runs use fewer). Each run prints its frames/s on stdout.
#include <infiniband/verbs.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "datapath/counters.hpp"
#include "device/device.hpp"
#include "device/objects.hpp"
#include "sim/config.hpp"
#include "sim/simulator.hpp"
#include "support/receive_rig.hpp"
#include "support/synthetic_source.hpp"

using namespace rdmasim;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint32_t kSlotBytes = 2048; // above the source's largest frame
constexpr auto kIdleTimeout = std::chrono::seconds(240);

std::uint64_t stress_frames() {
    const char* v = std::getenv("RDMASIM_STRESS_FRAMES");
    if (v == nullptr || *v == '\0') return 5'000'000;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (*end != '\0' || n == 0)
        FAIL("RDMASIM_STRESS_FRAMES='" << v << "': expected a positive number");
    return n;
}

// wr_id = generation << 32 | wq << 16 | slot: a completion names its WQ, its
// buffer slot and which posting of that slot it ends.
struct WrId {
    std::uint32_t wq;
    std::uint32_t slot;
    std::uint32_t gen;
    [[nodiscard]] std::uint64_t encode() const noexcept {
        return static_cast<std::uint64_t>(gen) << 32 | static_cast<std::uint64_t>(wq) << 16 | slot;
    }
    static WrId decode(std::uint64_t id) noexcept {
        return {static_cast<std::uint32_t>(id >> 16 & 0xffff),
                static_cast<std::uint32_t>(id & 0xffff), static_cast<std::uint32_t>(id >> 32)};
    }
};

// Failures seen on worker threads (Catch2 assertions are for the main thread):
// counted, the first few kept for the report.
class Failures {
public:
    void add(std::string what) noexcept {
        if (count_.fetch_add(1, std::memory_order_relaxed) >= kKept) return;
        std::lock_guard lock(mu_);
        try {
            messages_.push_back(std::move(what));
        } catch (...) {
        }
    }
    [[nodiscard]] std::uint64_t count() const noexcept { return count_.load(); }
    [[nodiscard]] std::string text() {
        std::lock_guard lock(mu_);
        std::string s;
        for (const auto& m : messages_)
            s += m + "\n";
        return s;
    }

private:
    static constexpr std::uint64_t kKept = 10;
    std::atomic<std::uint64_t> count_{0};
    std::mutex mu_;
    std::vector<std::string> messages_;
};

// Spins politely: the machine may have fewer cores than this test has threads.
class Backoff {
public:
    void idle() {
        if (++empty_ < 64) {
            std::this_thread::yield();
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
    }
    void reset() noexcept { empty_ = 0; }

private:
    unsigned empty_ = 0;
};

// Worker threads that are told to stop (every flag set) and joined when the
// scope ends, also when an assertion ends the test early.
class Threads {
public:
    explicit Threads(std::initializer_list<std::atomic<bool>*> flags) : flags_(flags) {}
    ~Threads() { join(); }
    Threads(const Threads&) = delete;
    Threads& operator=(const Threads&) = delete;
    template <class F> void spawn(F&& f) { threads_.emplace_back(std::forward<F>(f)); }
    void join() {
        for (auto* f : flags_)
            f->store(true, std::memory_order_release);
        for (auto& t : threads_)
            if (t.joinable()) t.join();
    }

private:
    std::vector<std::atomic<bool>*> flags_;
    std::vector<std::thread> threads_;
};

// One simulator (thread engine, manual start, top speed, bursts of 64) fed by
// a synthetic source.
std::unique_ptr<sim::Simulator> stress_sim(std::uint64_t frames, std::uint64_t seed) {
    sim::Config config;
    REQUIRE(config.set("engine", "thread"));
    REQUIRE(config.set("start", "manual"));
    REQUIRE(config.set("speed", "topspeed"));
    REQUIRE(config.set("burst", "64"));
    std::vector<std::unique_ptr<net::FrameSource>> sources;
    sources.push_back(std::make_unique<test::SyntheticSource>(frames, seed));
    auto s = sim::Simulator::create(config, std::move(sources));
    REQUIRE(s);
    return std::move(s.value());
}

// The stress simulator and a program's receive set-up on it: `wqs` WQs over
// `cqs` extended CQs (WQ w completes on CQ w % cqs), an indirection table over
// all WQs, an RSS QP hashing IPv4 addresses, a catch-all flow, one registered
// buffer with `ring` slots per WQ. A CQ holds every WQE its WQs can have
// outstanding: it never overflows. The test posts the WQEs (generation-tracked
// wr_ids).
class Rig {
public:
    Rig(std::uint64_t frames, std::uint64_t seed, std::uint32_t wqs, std::uint32_t cqs,
        std::uint32_t ring)
        : sim_(stress_sim(frames, seed)),
          rx_(dev_.ctx, dev_.pd,
              {.wqs = wqs,
               .depth = ring,
               .slot_bytes = kSlotBytes,
               .cqs = cqs,
               .fill = false,
               .hash_fields = wqs > 1 ? IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 : 0}) {}

    [[nodiscard]] sim::Simulator& sim() { return *sim_; }
    [[nodiscard]] device::Device& device() { return sim_->device(0); }
    [[nodiscard]] const datapath::RxCounters& port() { return device().port.counters(); }
    [[nodiscard]] std::uint32_t ring() const noexcept { return rx_.depth(); }
    [[nodiscard]] const std::vector<ibv_cq_ex*>& cqs() const { return rx_.cqs(); }
    [[nodiscard]] const std::vector<ibv_wq*>& wqs() const { return rx_.wqs(); }

    // Fills `wr` / `sge` to post slot `id` (one 2 KiB SGE).
    void make_wr(const WrId& id, ibv_recv_wr& wr, ibv_sge& sge) {
        sge = rx_.sge(std::uint64_t{id.wq} * rx_.depth() + id.slot);
        wr = ibv_recv_wr{};
        wr.wr_id = id.encode();
        wr.sg_list = &sge;
        wr.num_sge = 1;
    }
    int post_one(const WrId& id) {
        ibv_recv_wr wr;
        ibv_sge sge;
        make_wr(id, wr, sge);
        ibv_recv_wr* bad = nullptr;
        return ibv_post_wq_recv(wqs()[id.wq], &wr, &bad);
    }
    int move_to_err(std::uint32_t w) { return test::set_wq_state(wqs()[w], IBV_WQS_ERR); }
    // Starts the replay and waits until every frame has its outcome. Returns seconds taken.
    double run_to_idle() {
        const auto t0 = Clock::now();
        sim_->engine(0).begin();
        const bool idle =
            sim_->wait_idle(std::chrono::duration_cast<std::chrono::milliseconds>(kIdleTimeout));
        const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
        REQUIRE(idle);
        return secs;
    }

private:
    std::unique_ptr<sim::Simulator> sim_; // declared first: destroyed after the verbs objects
    test::VerbsDevice dev_;
    test::ReceiveRig rx_;
};

// What a program counted from its completions.
struct Tally {
    std::uint64_t posted = 0;
    std::uint64_t success = 0;
    std::uint64_t success_bytes = 0;
    std::uint64_t flushed = 0;
    Tally& operator+=(const Tally& o) {
        posted += o.posted;
        success += o.success;
        success_bytes += o.success_bytes;
        flushed += o.flushed;
        return *this;
    }
};

// One completion, read from the CQ's current entry.
struct Completion {
    WrId id;
    ibv_wc_status status;
    std::uint32_t byte_len;
    std::uint32_t qp_num;
};

// Polls one batch from `cq` into `out` (cleared first). Returns how many.
std::size_t poll_batch(ibv_cq_ex* cq, std::vector<Completion>& out) {
    out.clear();
    ibv_poll_cq_attr pa{};
    if (ibv_start_poll(cq, &pa) != 0) return 0; // ENOENT: empty
    for (;;) {
        out.push_back({WrId::decode(cq->wr_id), cq->status, ibv_wc_read_byte_len(cq),
                       ibv_wc_read_qp_num(cq)});
        // Stop with the last entry read still current: end_poll consumes it.
        if (out.size() == out.capacity() || ibv_next_poll(cq) != 0) break;
    }
    ibv_end_poll(cq);
    return out.size();
}

// Per-slot bookkeeping of one WQ, owned by one thread at a time: generation
// of the WQE last posted, and whether it is still outstanding.
struct Slot {
    std::uint32_t gen = 0;
    bool posted = false;
};

// Checks `c` against the slot it names and marks the slot complete. Returns
// false (and records why) for a completion nobody was waiting for.
bool complete(std::vector<std::vector<Slot>>& slots, const Rig& rig, const Completion& c,
              Failures& failures) {
    if (c.id.wq >= slots.size() || c.id.slot >= slots[c.id.wq].size()) {
        failures.add("completion for an unknown slot: wq " + std::to_string(c.id.wq) + " slot " +
                     std::to_string(c.id.slot));
        return false;
    }
    Slot& s = slots[c.id.wq][c.id.slot];
    if (!s.posted || s.gen != c.id.gen) {
        failures.add("duplicate or stale completion: wq " + std::to_string(c.id.wq) + " slot " +
                     std::to_string(c.id.slot) + " gen " + std::to_string(c.id.gen) +
                     " (slot gen " + std::to_string(s.gen) + (s.posted ? ", posted)" : ", idle)"));
        return false;
    }
    if (c.qp_num != rig.wqs()[c.id.wq]->wq_num)
        failures.add("completion of wq " + std::to_string(c.id.wq) + " reports qp_num " +
                     std::to_string(c.qp_num));
    if (c.status == IBV_WC_SUCCESS && (c.byte_len < test::SyntheticSource::kMinLen ||
                                       c.byte_len > test::SyntheticSource::kMaxLen))
        failures.add("byte_len " + std::to_string(c.byte_len) + " out of the source's range");
    s.posted = false;
    return true;
}

std::vector<std::vector<Slot>> make_slots(std::uint32_t wqs, std::uint32_t ring) {
    return std::vector<std::vector<Slot>>(wqs, std::vector<Slot>(ring));
}

// After the run: every WQE still posted is flushed (WQ to ERR, if not
// already) and must complete with IBV_WC_WR_FLUSH_ERR, exactly once.
void flush_and_drain(Rig& rig, std::vector<std::vector<Slot>>& slots, Tally& tally,
                     Failures& failures) {
    for (std::uint32_t w = 0; w < rig.wqs().size(); ++w)
        if (rig.wqs()[w]->state != IBV_WQS_ERR) REQUIRE(rig.move_to_err(w) == 0);
    std::vector<Completion> batch;
    batch.reserve(256);
    for (ibv_cq_ex* cq : rig.cqs()) {
        while (poll_batch(cq, batch) != 0) {
            for (const Completion& c : batch) {
                if (!complete(slots, rig, c, failures)) continue;
                if (c.status == IBV_WC_WR_FLUSH_ERR) {
                    ++tally.flushed;
                } else {
                    failures.add("after the run, status " + std::to_string(c.status) +
                                 " instead of IBV_WC_WR_FLUSH_ERR");
                }
            }
        }
    }
}

// The slot-level proof: nothing left outstanding, and as many completions as posts.
void check_slots(const std::vector<std::vector<Slot>>& slots, const Tally& tally) {
    std::uint64_t outstanding = 0;
    for (const auto& wq : slots)
        for (const Slot& s : wq)
            outstanding += s.posted ? 1 : 0;
    CHECK(outstanding == 0);
    CHECK(tally.posted == tally.success + tally.flushed);
}

// The port-level proof. `allowed` lists the drop reasons this run may see;
// every other reason must stay at zero.
void check_balance(Rig& rig, std::uint64_t frames, const Tally& tally,
                   std::initializer_list<datapath::Drop> allowed) {
    const auto& p = rig.port();
    std::uint64_t held;
    {
        std::lock_guard lock(rig.device().port.mutex());
        held = rig.device().port.held_frames();
    }
    CHECK(held == 0);
    CHECK(p.frames.get() == frames);
    CHECK(p.frames.get() == p.delivered.get() + p.drops_total() + held);
    std::uint64_t by_reason = 0;
    for (std::size_t d = 0; d < datapath::kDropKinds; ++d) {
        const auto reason = static_cast<datapath::Drop>(d);
        const std::uint64_t n = p.drops[d].get();
        by_reason += n;
        if (std::find(allowed.begin(), allowed.end(), reason) == allowed.end()) {
            INFO("drop reason " << datapath::drop_name(reason));
            CHECK(n == 0);
        }
    }
    CHECK(by_reason == p.drops_total());
    CHECK(tally.success == p.delivered.get());
    CHECK(tally.success_bytes == p.delivered_bytes.get());
    CHECK(tally.flushed == p.flushed_wqes.get());

    // The WQs' own counters add up to the port's.
    std::uint64_t wq_frames = 0, wq_delivered = 0, wq_flushed = 0;
    std::array<std::uint64_t, datapath::kDropKinds> wq_drops{};
    for (ibv_wq* wq : rig.wqs()) {
        const auto& c = device::from_verbs(wq)->recv.rx.counters();
        wq_frames += c.frames.get();
        wq_delivered += c.delivered.get();
        wq_flushed += c.flushed_wqes.get();
        for (std::size_t d = 0; d < datapath::kDropKinds; ++d)
            wq_drops[d] += c.drops[d].get();
    }
    const auto steering_miss =
        p.drops[static_cast<std::size_t>(datapath::Drop::steering_miss)].get();
    const auto truncated =
        p.drops[static_cast<std::size_t>(datapath::Drop::truncated_capture)].get();
    CHECK(wq_frames == p.frames.get() - steering_miss - truncated);
    CHECK(wq_delivered == p.delivered.get());
    CHECK(wq_flushed == p.flushed_wqes.get());
    for (std::size_t d = 0; d < datapath::kDropKinds; ++d) {
        const auto reason = static_cast<datapath::Drop>(d);
        if (reason == datapath::Drop::steering_miss || reason == datapath::Drop::truncated_capture)
            continue;
        INFO("drop reason " << datapath::drop_name(reason));
        CHECK(wq_drops[d] == p.drops[d].get());
    }
}

void report(const char* name, Rig& rig, std::uint64_t frames, double secs) {
    const auto& p = rig.port();
    const auto oob = p.drops[static_cast<std::size_t>(datapath::Drop::out_of_buffer)].get();
    const auto not_ready = p.drops[static_cast<std::size_t>(datapath::Drop::wq_not_ready)].get();
    std::printf("stress %s: %llu frames in %.3f s = %.0f frames/s (delivered %llu, "
                "rx_out_of_buffer %llu, wq_not_ready %llu, flushed %llu)\n",
                name, static_cast<unsigned long long>(frames), secs,
                static_cast<double>(frames) / secs,
                static_cast<unsigned long long>(p.delivered.get()),
                static_cast<unsigned long long>(oob), static_cast<unsigned long long>(not_ready),
                static_cast<unsigned long long>(p.flushed_wqes.get()));
    std::fflush(stdout);
}

// Poller for CQ `c` of a rig whose WQ w completes on CQ w % cqs: checks each
// completion against `slots` (only this thread touches the slots of its
// WQs), and re-posts each successful slot with the next generation, one
// post call per WQ per batch. With `retire_on_flush`, a flushed slot is
// retired instead (its WQ went to ERR while running). Stops when `drain` is
// set and the CQ is empty.
void poller(Rig& rig, std::uint32_t c, std::vector<std::vector<Slot>>& slots, Tally& tally,
            Failures& failures, const std::atomic<bool>& drain, bool retire_on_flush) {
    const auto ncq = static_cast<std::uint32_t>(rig.cqs().size());
    const auto per_cq = static_cast<std::uint32_t>(rig.wqs().size()) / ncq;
    std::vector<Completion> batch;
    batch.reserve(64);
    // Re-post lists, one per WQ of this CQ.
    std::vector<std::vector<ibv_recv_wr>> wrs(per_cq, std::vector<ibv_recv_wr>(64));
    std::vector<std::vector<ibv_sge>> sges(per_cq, std::vector<ibv_sge>(64));
    std::vector<std::size_t> nwr(per_cq);
    Backoff backoff;
    for (;;) {
        const bool last = drain.load(std::memory_order_acquire); // before the poll: see above
        if (poll_batch(rig.cqs()[c], batch) == 0) {
            if (last) return;
            backoff.idle();
            continue;
        }
        backoff.reset();
        std::fill(nwr.begin(), nwr.end(), 0);
        for (const Completion& comp : batch) {
            if (!complete(slots, rig, comp, failures)) continue;
            if (comp.id.wq % ncq != c) failures.add("completion on the wrong CQ");
            if (comp.status == IBV_WC_SUCCESS) {
                ++tally.success;
                tally.success_bytes += comp.byte_len;
            } else if (comp.status == IBV_WC_WR_FLUSH_ERR && retire_on_flush) {
                ++tally.flushed;
                continue;
            } else {
                failures.add("status " + std::to_string(comp.status) + " while running");
                continue;
            }
            Slot& s = slots[comp.id.wq][comp.id.slot];
            ++s.gen;
            s.posted = true;
            ++tally.posted;
            const std::uint32_t k = comp.id.wq / ncq;
            rig.make_wr({comp.id.wq, comp.id.slot, s.gen}, wrs[k][nwr[k]], sges[k][nwr[k]]);
            if (nwr[k] > 0) wrs[k][nwr[k] - 1].next = &wrs[k][nwr[k]];
            ++nwr[k];
        }
        for (std::uint32_t k = 0; k < per_cq; ++k) {
            if (nwr[k] == 0) continue;
            ibv_recv_wr* bad = nullptr;
            if (int rc = ibv_post_wq_recv(rig.wqs()[k * ncq + c], wrs[k].data(), &bad); rc != 0)
                failures.add("ibv_post_wq_recv while running: " + std::to_string(rc));
        }
    }
}

Tally post_all(Rig& rig, std::vector<std::vector<Slot>>& slots) {
    Tally t;
    for (std::uint32_t w = 0; w < rig.wqs().size(); ++w) {
        for (std::uint32_t s = 0; s < rig.ring(); ++s) {
            REQUIRE(rig.post_one({w, s, 0}) == 0);
            slots[w][s].posted = true;
            ++t.posted;
        }
    }
    return t;
}

} // namespace

TEST_CASE("stress: 8 WQs over 4 CQs, 4 pollers re-posting, thread engine at top speed",
          "[stress]") {
    const std::uint64_t frames = stress_frames();
    constexpr std::uint32_t kWqs = 8, kCqs = 4, kRing = 256;
    Rig rig(frames, 1, kWqs, kCqs, kRing);
    auto slots = make_slots(kWqs, kRing);
    Tally initial = post_all(rig, slots);

    Failures failures;
    std::atomic<bool> drain{false};
    std::vector<Tally> tallies(kCqs);
    Threads pollers({&drain});
    for (std::uint32_t c = 0; c < kCqs; ++c)
        pollers.spawn([&, c] { poller(rig, c, slots, tallies[c], failures, drain, false); });
    const double secs = rig.run_to_idle();
    pollers.join(); // drain: each poller empties its CQ and stops

    Tally tally = initial;
    for (const Tally& t : tallies)
        tally += t;
    flush_and_drain(rig, slots, tally, failures);
    INFO(failures.text());
    CHECK(failures.count() == 0);
    check_slots(slots, tally);
    check_balance(rig, frames, tally, {datapath::Drop::out_of_buffer});
    // Every WQE left posted at the end was flushed: the ring was full.
    CHECK(tally.flushed == std::uint64_t{kWqs} * kRing);
    // RSS spread the frames: every WQ saw a fair share.
    for (ibv_wq* wq : rig.wqs())
        CHECK(device::from_verbs(wq)->recv.rx.counters().frames.get() > frames / kWqs / 4);
    report("8wq-4cq", rig, frames, secs);
}

TEST_CASE("stress: several threads post to the same WQ while another polls", "[stress]") {
    const std::uint64_t frames = stress_frames();
    constexpr std::uint32_t kRing = 1024, kPosters = 4;
    Rig rig(frames, 2, 1, 1, kRing);

    // Slot ownership moves between a poster and the poller through `state`:
    // free (the poster may post it) or posted (the poller completes it). The
    // generation is written by the poster before it publishes the slot.
    struct SharedSlot {
        std::atomic<std::uint8_t> posted{0};
        std::uint32_t gen = 0;
    };
    std::vector<SharedSlot> slots(kRing);
    Failures failures;
    std::atomic<bool> stop{false}, drain{false};
    std::array<std::uint64_t, kPosters> posts{};
    Tally tally;

    Threads poller_thread({&drain}); // joined after the posters (declared before them)
    Threads posters({&stop});
    for (std::uint32_t k = 0; k < kPosters; ++k)
        posters.spawn([&, k] {
            std::vector<ibv_recv_wr> wrs(16);
            std::vector<ibv_sge> sges(16);
            Backoff backoff;
            while (!stop.load(std::memory_order_acquire)) {
                std::size_t n = 0;
                for (std::uint32_t s = k; s < kRing && n < wrs.size(); s += kPosters) {
                    if (slots[s].posted.load(std::memory_order_acquire) != 0) continue;
                    ++slots[s].gen;
                    slots[s].posted.store(1, std::memory_order_release);
                    rig.make_wr({0, s, slots[s].gen}, wrs[n], sges[n]);
                    if (n > 0) wrs[n - 1].next = &wrs[n];
                    ++n;
                }
                if (n == 0) {
                    backoff.idle();
                    continue;
                }
                backoff.reset();
                ibv_recv_wr* bad = nullptr;
                if (int rc = ibv_post_wq_recv(rig.wqs()[0], wrs.data(), &bad); rc != 0)
                    failures.add("concurrent ibv_post_wq_recv: " + std::to_string(rc));
                posts[k] += n;
            }
        });
    poller_thread.spawn([&] {
        std::vector<Completion> batch;
        batch.reserve(64);
        Backoff backoff;
        for (;;) {
            const bool last = drain.load(std::memory_order_acquire);
            if (poll_batch(rig.cqs()[0], batch) == 0) {
                if (last) return;
                backoff.idle();
                continue;
            }
            backoff.reset();
            for (const Completion& c : batch) {
                if (c.id.wq != 0 || c.id.slot >= kRing) {
                    failures.add("completion for an unknown slot");
                    continue;
                }
                SharedSlot& s = slots[c.id.slot];
                if (s.posted.load(std::memory_order_acquire) != 1 || s.gen != c.id.gen) {
                    failures.add("duplicate or stale completion: slot " +
                                 std::to_string(c.id.slot) + " gen " + std::to_string(c.id.gen));
                    continue;
                }
                if (c.status == IBV_WC_SUCCESS) {
                    ++tally.success;
                    tally.success_bytes += c.byte_len;
                } else {
                    failures.add("status " + std::to_string(c.status) + " while running");
                }
                s.posted.store(0, std::memory_order_release); // back to its poster
            }
        }
    });

    // Let the posters fill the ring before the frames come.
    const auto fill_deadline = Clock::now() + std::chrono::seconds(30);
    while (device::from_verbs(rig.wqs()[0])->recv.rx.ring().size() < kRing &&
           Clock::now() < fill_deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const double secs = rig.run_to_idle();
    // No frame comes any more: the posters refill the ring, so that the flush
    // below has every slot to complete.
    const auto refill_deadline = Clock::now() + std::chrono::seconds(30);
    while (device::from_verbs(rig.wqs()[0])->recv.rx.ring().size() < kRing &&
           Clock::now() < refill_deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    posters.join();
    poller_thread.join();

    for (auto n : posts) {
        CHECK(n > 0);
        tally.posted += n;
    }
    // Flush what is still posted: each such slot must come back exactly once.
    REQUIRE(rig.move_to_err(0) == 0);
    std::vector<Completion> batch;
    batch.reserve(256);
    while (poll_batch(rig.cqs()[0], batch) != 0) {
        for (const Completion& c : batch) {
            if (c.id.wq != 0 || c.id.slot >= kRing) {
                failures.add("flush completion for an unknown slot");
                continue;
            }
            SharedSlot& s = slots[c.id.slot];
            if (s.posted.load() != 1 || s.gen != c.id.gen)
                failures.add("duplicate or stale flush completion");
            else if (c.status != IBV_WC_WR_FLUSH_ERR)
                failures.add("after the run, status " + std::to_string(c.status));
            else
                ++tally.flushed;
            s.posted.store(0);
        }
    }
    INFO(failures.text());
    CHECK(failures.count() == 0);
    std::uint64_t outstanding = 0;
    for (const auto& s : slots)
        outstanding += s.posted.load();
    CHECK(outstanding == 0);
    CHECK(tally.posted == tally.success + tally.flushed);
    CHECK(tally.flushed == kRing);
    check_balance(rig, frames, tally, {datapath::Drop::out_of_buffer});
    report("shared-wq", rig, frames, secs);
}

TEST_CASE("stress: ibv_modify_wq to ERR races the engine and the pollers", "[stress]") {
    const std::uint64_t frames = stress_frames();
    // Many small WQs: each move to ERR is one more race with the posting pollers.
    constexpr std::uint32_t kWqs = 32, kCqs = 4, kRing = 64;
    Rig rig(frames, 3, kWqs, kCqs, kRing);
    auto slots = make_slots(kWqs, kRing);
    Tally initial = post_all(rig, slots);

    Failures failures;
    std::atomic<bool> drain{false};
    std::vector<Tally> tallies(kCqs);
    Threads pollers({&drain});
    for (std::uint32_t c = 0; c < kCqs; ++c)
        pollers.spawn([&, c] { poller(rig, c, slots, tallies[c], failures, drain, true); });

    const auto t0 = Clock::now();
    rig.sim().engine(0).begin();
    // WQs go to ERR one by one while frames flow (order 5, 10, 15, ...: 5 is
    // prime to 32), the last once 80% of the frames have come.
    std::uint64_t frames_after_last = 0;
    for (std::uint32_t i = 0; i < kWqs; ++i) {
        const std::uint64_t at = frames / 40 * (i + 1);
        while (rig.port().frames.get() < at && !rig.sim().idle())
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        REQUIRE(rig.move_to_err((5 + 5 * i) % kWqs) == 0);
        frames_after_last = rig.port().frames.get();
    }
    REQUIRE(
        rig.sim().wait_idle(std::chrono::duration_cast<std::chrono::milliseconds>(kIdleTimeout)));
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    pollers.join();

    Tally tally = initial;
    for (const Tally& t : tallies)
        tally += t;
    for (ibv_wq* wq : rig.wqs())
        CHECK(wq->state == IBV_WQS_ERR);
    flush_and_drain(rig, slots, tally, failures); // collects flushes the pollers left
    INFO(failures.text());
    CHECK(failures.count() == 0);
    check_slots(slots, tally);
    check_balance(rig, frames, tally,
                  {datapath::Drop::out_of_buffer, datapath::Drop::wq_not_ready});
    // Frames that came after the last WQ left RDY found no ready WQ.
    const auto not_ready =
        rig.port().drops[static_cast<std::size_t>(datapath::Drop::wq_not_ready)].get();
    CHECK(not_ready >= frames - frames_after_last);
    // Each slot's last completion is its one flush: a flushed slot is never re-posted.
    CHECK(tally.flushed == std::uint64_t{kWqs} * kRing);
    report("modify-err-race", rig, frames, secs);
}
