#include "sim/faulty_sink.hpp"

#include <algorithm>
#include <new>

namespace rdmasim::sim {

namespace {

bool sent_here(const FaultSpec& f, std::uint32_t index) {
    if (f.device && *f.device != index) return false;
    return is_frame_fault(f.kind) && f.dir != Direction::rx;
}

void add(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) noexcept {
    c.fetch_add(n, std::memory_order_relaxed);
}

} // namespace

bool FaultySink::wanted(const FaultPlan& plan, std::uint32_t index) {
    return std::any_of(plan.faults.begin(), plan.faults.end(),
                       [index](const FaultSpec& f) { return sent_here(f, index); });
}

Result<std::unique_ptr<FaultySink>> FaultySink::wrap(std::vector<std::shared_ptr<net::FrameSink>> inner,
                                                     const FaultPlan& plan, std::uint32_t index,
                                                     Trace* trace) {
    std::unique_ptr<FaultySink> s(new FaultySink);
    s->inner_ = std::move(inner);
    s->faults_ = std::make_unique<FrameFaults>(index, Direction::tx, trace);
    for (std::size_t i = 0; i < plan.faults.size(); ++i)
        if (sent_here(plan.faults[i], index))
            if (auto r = s->faults_->add(plan, i); !r) return r.error();
    return s;
}

void FaultySink::drain() noexcept {
    net::Frame f;
    while (faults_->pop(f)) {
        if (f.lost) {
            add(counters_.fault_drops);
        } else if (f.fcs_len != 0) {
            add(counters_.fcs_drops);
        } else {
            add(counters_.passed);
            for (const auto& s : inner_) s->send(f.payload(), f.ts_ns);
        }
    }
    const auto dup = faults_->injected()[static_cast<std::size_t>(FaultKind::duplicate)];
    counters_.duplicated.store(dup, std::memory_order_relaxed);
    counters_.held.store(faults_->held(), std::memory_order_relaxed);
}

void FaultySink::send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept {
    add(counters_.sent);
    net::Frame f;
    f.data = frame.data();
    f.len = f.wire_len = static_cast<std::uint32_t>(frame.size());
    f.ts_ns = ts_ns;
    try {
        if (!faults_->offer(f)) { // untouched, nothing waiting: no copy
            add(counters_.passed);
            for (const auto& s : inner_) s->send(frame, ts_ns);
            return;
        }
    } catch (const std::bad_alloc&) {
        add(counters_.failed);
    }
    drain();
}

void FaultySink::release_held() noexcept {
    try {
        faults_->flush();
    } catch (const std::bad_alloc&) {
        // what could not be moved stays held, and counted so
    }
    drain();
}

std::size_t FaultySink::flush() noexcept {
    std::size_t waiting = 0;
    for (const auto& s : inner_) waiting += s->flush();
    return waiting;
}

bool FaultySink::unread() const noexcept {
    return std::any_of(inner_.begin(), inner_.end(), [](const auto& s) { return s->unread(); });
}

bool FaultySink::congested() const noexcept {
    return std::any_of(inner_.begin(), inner_.end(), [](const auto& s) { return s->congested(); });
}

const net::TxBacklogCounters* FaultySink::backlog_counters() const noexcept {
    for (const auto& s : inner_)
        if (const auto* c = s->backlog_counters()) return c;
    return nullptr;
}

} // namespace rdmasim::sim
