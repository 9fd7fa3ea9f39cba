// --trace FILE (sim/README.md, "Fault injection"): the completions every
// program took and every fault injected, one JSON object per line, so that
// two runs compare with diff. Deterministic with the inline engine: no wall
// clock, no pointers; completion times are the engine's virtual time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "device/trace.hpp"
#include "net/result.hpp"

namespace rdmasim::sim {

class Trace {
public:
    static Result<std::unique_ptr<Trace>> open(const std::string& path);
    ~Trace();
    Trace(const Trace&) = delete;
    Trace& operator=(const Trace&) = delete;

    // The device hook that records device `index`'s completions here.
    [[nodiscard]] device::TraceHook* hook(std::uint32_t index);

    // {"event":"fault","device":D,"kind":K,"at":N,...}: `at` counts what the
    // fault counts (frames from the source, calls of the verb); `extra` is
    // more "key":value pairs, already JSON ("\"verb\":\"create_wq\"").
    void fault(std::uint32_t device, std::string_view kind, std::uint64_t at,
               std::string_view extra = {}) noexcept;
    void completion(std::uint32_t device, std::uint32_t cq, const datapath::Cqe& e) noexcept;

    // fork() (sim/README.md, "Fork"): prepare holds the file's mutex; the
    // parent releases it; the child drops its copy of the file without
    // writing the lines buffered in it (they are the parent's), writes no
    // more, and releases it.
    void prepare_fork() noexcept { mu_.lock(); }
    void parent_after_fork() noexcept { mu_.unlock(); }
    void child_after_fork() noexcept;

private:
    class DeviceHook;
    Trace() = default;
    void line(const char* text, int len) noexcept;

    std::mutex mu_;
    std::FILE* file_ = nullptr;
    std::vector<std::unique_ptr<DeviceHook>> hooks_;
};

} // namespace rdmasim::sim
