#include "net/memory_source.hpp"

#include <utility>

namespace rdmasim::net {

void MemorySource::push(std::span<const std::uint8_t> bytes, std::uint64_t ts_ns,
                        std::uint8_t fcs_len) {
    queue_.push_back(Item{{bytes.begin(), bytes.end()}, ts_ns, fcs_len});
}

bool MemorySource::next(Frame& out) noexcept {
    if (queue_.empty()) return false;
    current_ = std::move(queue_.front());
    queue_.pop_front();
    const auto len = static_cast<std::uint32_t>(current_.bytes.size());
    out = Frame{};
    out.data = current_.bytes.data();
    out.len = len;
    out.wire_len = len;
    out.fcs_len = len >= current_.fcs_len ? current_.fcs_len : 0;
    out.ts_ns = current_.ts_ns;
    ++counters_.frames;
    counters_.bytes += len;
    return true;
}

} // namespace rdmasim::net
