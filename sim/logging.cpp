#include "sim/logging.hpp"

#include <spdlog/sinks/ansicolor_sink.h>
#include <spdlog/sinks/base_sink.h>

#include <mutex>

namespace rdmasim::sim {

namespace {

// stderr in colour behind a mutex of its own, which fork() can hold:
// spdlog's console sinks share a static mutex that nothing outside takes.
class StderrSink final : public spdlog::sinks::base_sink<std::mutex> {
public:
    void hold() { mutex_.lock(); }
    void release() { mutex_.unlock(); }

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override { inner_.log(msg); }
    void flush_() override { inner_.flush(); }
    void set_pattern_(const std::string& pattern) override { inner_.set_pattern(pattern); }
    void set_formatter_(std::unique_ptr<spdlog::formatter> formatter) override {
        inner_.set_formatter(std::move(formatter));
    }

private:
    spdlog::sinks::ansicolor_stderr_sink_st inner_; // unlocked: mutex_ guards it
};

// Never destroyed, as the logger below.
const std::shared_ptr<StderrSink>& stderr_sink() {
    static auto* sink = new std::shared_ptr<StderrSink>(std::make_shared<StderrSink>());
    return *sink;
}

} // namespace

spdlog::logger& log() {
    // Never destroyed: a thread still logging while another runs exit's
    // handlers (the drop-in's finish_run) must not find it gone.
    static auto* logger = new std::shared_ptr<spdlog::logger>([] {
        auto l = std::make_shared<spdlog::logger>("rdmasim", stderr_sink());
        l->set_level(spdlog::level::warn);
        l->set_pattern("%^rdmasim %l%$: %v");
        spdlog::register_logger(l);
        return l;
    }());
    return **logger;
}

void set_log_level(const std::string& level) { log().set_level(spdlog::level::from_str(level)); }

void hold_log_for_fork() {
    stderr_sink()->hold();
}
void release_log_after_fork() {
    stderr_sink()->release();
}

} // namespace rdmasim::sim
