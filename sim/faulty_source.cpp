#include "sim/faulty_source.hpp"

#include <algorithm>
#include <cerrno>
#include <fmt/format.h>

#include "device/device.hpp"

namespace rdmasim::sim {

FaultySource::~FaultySource() = default;

namespace {

bool injected_here(const FaultSpec& f, std::uint32_t index) {
    if (f.device && *f.device != index) return false;
    if (is_frame_fault(f.kind)) return f.dir != Direction::tx;
    return f.kind != FaultKind::verb_fail; // every device kind
}

} // namespace

bool FaultySource::wanted(const FaultPlan& plan, std::uint32_t index) {
    return std::any_of(plan.faults.begin(), plan.faults.end(),
                       [index](const FaultSpec& f) { return injected_here(f, index); });
}

Result<std::unique_ptr<FaultySource>> FaultySource::wrap(std::unique_ptr<net::FrameSource> inner,
                                                         const FaultPlan& plan, std::uint32_t index,
                                                         device::Device* dev, Trace* trace) {
    std::unique_ptr<FaultySource> s(new FaultySource(std::move(inner)));
    s->dev_ = dev;
    FaultySource* self = s.get();
    s->faults_ = std::make_unique<FrameFaults>(index, Direction::rx, trace,
                                               [self](const FaultSpec& spec) { return self->fire(spec); });
    for (std::size_t i = 0; i < plan.faults.size(); ++i) {
        const FaultSpec& spec = plan.faults[i];
        if (!injected_here(spec, index)) continue;
        if (!is_frame_fault(spec.kind) && dev == nullptr)
            return make_error(EINVAL, fmt::format("fault plan, column {}: {} needs a device",
                                                  spec.column, fault_kind_name(spec.kind)));
        if (auto r = s->faults_->add(plan, i); !r) return r.error();
    }
    return s;
}

bool FaultySource::exhausted() const noexcept { return faults_->empty() && inner_->exhausted(); }

std::string FaultySource::describe() const {
    return inner_->describe() + fmt::format(" with {} frame fault{}", faults_->size(),
                                            faults_->size() == 1 ? "" : "s");
}

const net::SourceCounters& FaultySource::counters() const noexcept { return inner_->counters(); }

FrameFaults::Effect FaultySource::fire(const FaultSpec& spec) {
    // Each acts before this frame enters the port; a target that is gone is passed over.
    const device::RxTarget target{spec.wq, spec.qp};
    switch (spec.kind) {
    case FaultKind::wq_fatal:
        (void)device::inject_wq_fatal(*dev_, target);
        return FrameFaults::Effect::none;
    case FaultKind::cq_overrun: // raised at the end of this burst
        (void)device::inject_cq_overrun(*dev_, target);
        return FrameFaults::Effect::none;
    case FaultKind::out_of_buffer: // this frame is the burst's first, if it reaches the queue
        (void)device::inject_out_of_buffer(*dev_, target, spec.frames);
        return FrameFaults::Effect::none;
    case FaultKind::cqe_error: // the next completion the queue writes, this frame's if it takes a WQE
        (void)device::inject_cqe_error(*dev_, target, spec.status);
        return FrameFaults::Effect::none;
    case FaultKind::delay_drop_timeout:
        (void)device::inject_delay_drop_timeout(*dev_, spec.wq);
        return FrameFaults::Effect::none;
    case FaultKind::device_fatal: // this frame and every later one are lost
        device::inject_device_fatal(*dev_);
        dead_ = true;
        return FrameFaults::Effect::lose_alone;
    case FaultKind::port_down: // this frame is the first one missed
        device::set_port_up(*dev_, false);
        down_left_ = spec.frames - 1;
        if (down_left_ == 0) device::set_port_up(*dev_, true);
        return FrameFaults::Effect::lose;
    default:
        return FrameFaults::Effect::none;
    }
}

bool FaultySource::gone() {
    if (dead_) return true;
    if (down_left_ == 0) return false;
    if (--down_left_ == 0) device::set_port_up(*dev_, true);
    return true;
}

bool FaultySource::next(net::Frame& out) noexcept {
    try {
        for (;;) {
            if (faults_->pop(out)) return true;
            net::Frame f;
            if (!inner_->next(f)) {
                if (!faults_->holding() || !inner_->exhausted()) {
                    if (down_left_ != 0 && inner_->exhausted()) { // nothing more to miss
                        down_left_ = 0;
                        if (!dead_) device::set_port_up(*dev_, true);
                    }
                    return false;
                }
                faults_->flush();
                continue;
            }
            if (!faults_->offer(f, gone())) {
                out = f; // untouched, nothing waiting: handed over as borrowed
                return true;
            }
        }
    } catch (const std::bad_alloc&) {
        return false; // copies could not be made: the frame is not handed over
    }
}

} // namespace rdmasim::sim
