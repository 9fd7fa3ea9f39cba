#include "sim/engine.hpp"

#include "sim/fault_stage.hpp"
#include "sim/inline_engine.hpp"
#include "sim/thread_engine.hpp"

namespace rdmasim::sim {

Engine::Engine(device::Device& dev, std::unique_ptr<net::FrameSource> source, const Config& config)
    : dev_(dev), source_(std::move(source)), config_(config) {}

std::string Engine::describe_source() const {
    return faults_ ? source_->describe() + faults_->describe_suffix() : source_->describe();
}

void Engine::inherit(Engine& from) noexcept {
    source_ = std::move(from.source_);
    faults_ = from.faults_;
    device_index_ = from.device_index_;
    timeline_ = from.timeline_;
    started_.store(from.started_.load());
}

std::unique_ptr<Engine> make_engine(device::Device& dev, std::unique_ptr<net::FrameSource> source,
                                    const Config& config) {
    if (config.engine == EngineKind::inline_)
        return std::make_unique<InlineEngine>(dev, std::move(source), config);
    return std::make_unique<ThreadEngine>(dev, std::move(source), config);
}

} // namespace rdmasim::sim
