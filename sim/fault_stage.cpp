#include "sim/fault_stage.hpp"

#include <algorithm>
#include <cerrno>
#include <fmt/format.h>

#include "device/device.hpp"

namespace rdmasim::sim {

namespace {

bool injected_here(const FaultSpec& f, std::uint32_t index) {
    if (f.device && *f.device != index) return false;
    if (is_frame_fault(f.kind)) return f.dir != Direction::tx;
    return f.kind != FaultKind::verb_fail; // every device kind
}

} // namespace

bool FaultStage::wanted(const FaultPlan& plan, std::uint32_t index) {
    return std::any_of(plan.faults.begin(), plan.faults.end(),
                       [index](const FaultSpec& f) { return injected_here(f, index); });
}

FaultStage::FaultStage(std::uint32_t index, device::Device* dev, Trace* trace)
    : dev_(dev), faults_(index, Direction::rx, trace, [this](const FaultSpec& spec) { return fire(spec); }) {}

FaultStage::~FaultStage() = default;

Result<std::unique_ptr<FaultStage>> FaultStage::make(const FaultPlan& plan, std::uint32_t index,
                                                     device::Device* dev, Trace* trace) {
    std::unique_ptr<FaultStage> s(new FaultStage(index, dev, trace));
    for (std::size_t i = 0; i < plan.faults.size(); ++i) {
        const FaultSpec& spec = plan.faults[i];
        if (!injected_here(spec, index)) continue;
        if (!is_frame_fault(spec.kind) && dev == nullptr)
            return make_error(EINVAL, fmt::format("fault plan, column {}: {} needs a device",
                                                  spec.column, fault_kind_name(spec.kind)));
        if (auto r = s->faults_.add(plan, i); !r) return r.error();
    }
    return s;
}

std::string FaultStage::describe_suffix() const {
    return fmt::format(" with {} frame fault{}", faults_.size(), faults_.size() == 1 ? "" : "s");
}

FrameFaults::Effect FaultStage::fire(const FaultSpec& spec) {
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

bool FaultStage::gone() {
    if (dead_) return true;
    if (down_left_ == 0) return false;
    if (--down_left_ == 0) device::set_port_up(*dev_, true);
    return true;
}

bool FaultStage::offer(const net::Frame& f) { return faults_.offer(f, gone()); }

bool FaultStage::source_dry(bool source_exhausted) {
    if (!source_exhausted) return false;
    if (faults_.holding()) {
        faults_.flush();
        return true;
    }
    if (down_left_ != 0) { // nothing more to miss
        down_left_ = 0;
        if (!dead_) device::set_port_up(*dev_, true);
    }
    return false;
}

} // namespace rdmasim::sim
