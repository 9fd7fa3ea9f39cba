#include "sim/trace.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <fmt/format.h>
#include <stdio_ext.h>

namespace rdmasim::sim {

class Trace::DeviceHook final : public device::TraceHook {
public:
    DeviceHook(Trace& trace, std::uint32_t index) : trace_(trace), index_(index) {}
    void completion(std::uint32_t cq, const datapath::Cqe& e) noexcept override {
        trace_.completion(index_, cq, e);
    }

private:
    Trace& trace_;
    std::uint32_t index_;
};

Result<std::unique_ptr<Trace>> Trace::open(const std::string& path) {
    std::unique_ptr<Trace> t(new Trace);
    t->file_ = std::fopen(path.c_str(), "w");
    if (t->file_ == nullptr) {
        const int err = errno;
        return make_error(err, fmt::format("trace {}: {}", path, std::strerror(err)));
    }
    return t;
}

Trace::~Trace() {
    if (file_) std::fclose(file_);
}

void Trace::child_after_fork() noexcept {
    __fpurge(file_); // fclose would write the parent's buffered lines a second time
    std::fclose(file_);
    file_ = nullptr;
    mu_.unlock();
}

device::TraceHook* Trace::hook(std::uint32_t index) {
    hooks_.push_back(std::make_unique<DeviceHook>(*this, index));
    return hooks_.back().get();
}

void Trace::line(const char* text, int len) noexcept {
    if (len <= 0) return;
    std::lock_guard lock(mu_);
    if (file_ == nullptr) return; // a forked child's
    std::fwrite(text, 1, static_cast<std::size_t>(len), file_);
}

void Trace::fault(std::uint32_t device, std::string_view kind, std::uint64_t at,
                  std::string_view extra) noexcept {
    char buf[512];
    const int n = std::snprintf(buf, sizeof buf,
                                "{\"event\":\"fault\",\"device\":%u,\"kind\":\"%.*s\",\"at\":%" PRIu64 "%s%.*s}\n",
                                device, static_cast<int>(kind.size()), kind.data(), at,
                                extra.empty() ? "" : ",", static_cast<int>(extra.size()), extra.data());
    line(buf, std::min(n, static_cast<int>(sizeof buf) - 1));
}

void Trace::completion(std::uint32_t device, std::uint32_t cq, const datapath::Cqe& e) noexcept {
    char buf[320];
    const int n = std::snprintf(
        buf, sizeof buf,
        "{\"event\":\"completion\",\"device\":%u,\"cq\":%u,\"wr_id\":%" PRIu64
        ",\"status\":%u,\"opcode\":%u,\"qp_num\":%u,\"byte_len\":%u,\"wc_flags\":%u,\"cvlan\":%u,"
        "\"ts_ns\":%" PRIu64 "}\n",
        device, cq, e.wr_id, e.status, e.opcode, e.qp_num, e.byte_len, e.wc_flags, e.cvlan,
        e.timestamp_ns);
    line(buf, std::min(n, static_cast<int>(sizeof buf) - 1));
}

} // namespace rdmasim::sim
