#include "net/link_channel.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace rdmasim::net {

LinkChannel::LinkChannel(std::string name, std::size_t capacity)
    : name_(std::move(name)), slots_(capacity == 0 ? 1 : capacity) {}

Result<std::unique_ptr<LinkChannel>> LinkChannel::open(std::string name, std::size_t capacity) {
    std::unique_ptr<LinkChannel> ch(new LinkChannel(std::move(name), capacity));
    ch->event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ch->event_fd_ < 0)
        return make_error(errno, fmt::format("{}: cannot make an eventfd: {}", ch->name_, std::strerror(errno)));
    return ch;
}

LinkChannel::~LinkChannel() {
    if (event_fd_ >= 0) ::close(event_fd_);
}

void LinkChannel::send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept {
    // Behind frames already waiting, never past them: a link keeps its order.
    if (backlog_.empty() && try_enqueue(frame, ts_ns)) [[likely]]
        return;
    (void)backlog_.push(frame, ts_ns); // a full backlog counts the loss
}

std::size_t LinkChannel::flush() noexcept {
    if (backlog_.empty()) return 0;
    return backlog_.flush([this](std::span<const std::uint8_t> f, std::uint64_t ts) { return try_enqueue(f, ts); });
}

bool LinkChannel::try_enqueue(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept {
    std::lock_guard lock(mutex_);
    if (count_ == slots_.size()) return false; // full: the sender pauses
    Slot& s = slots_[(head_ + count_) % slots_.size()];
    try {
        s.bytes.assign(frame.begin(), frame.end()); // allocates only past the slot's largest frame
    } catch (...) {
        overflow_.fetch_add(1, std::memory_order_relaxed);
        return true; // lost, counted
    }
    s.ts_ns = ts_ns;
    // The eventfd turns readable when the first frame waits (the receiver
    // clears it, under this lock, when it finds the queue empty).
    if (count_++ == (reading_ ? 1u : 0u)) {
        const std::uint64_t one = 1;
        [[maybe_unused]] const ssize_t w = ::write(event_fd_, &one, sizeof one);
    }
    return true;
}

bool LinkChannel::next(Frame& out) noexcept {
    std::lock_guard lock(mutex_);
    if (reading_) { // the previous frame's bytes are no longer needed
        reading_ = false;
        head_ = (head_ + 1) % slots_.size();
        --count_;
    }
    if (count_ == 0) {
        std::uint64_t drained = 0;
        [[maybe_unused]] const ssize_t r = ::read(event_fd_, &drained, sizeof drained);
        return false;
    }
    const Slot& s = slots_[head_];
    reading_ = true;
    out = Frame{};
    out.data = s.bytes.data();
    out.len = static_cast<std::uint32_t>(s.bytes.size());
    out.wire_len = out.len;
    out.fcs_len = 0;
    out.ts_ns = s.ts_ns;
    ++counters_.frames;
    counters_.bytes += out.len;
    return true;
}

} // namespace rdmasim::net
