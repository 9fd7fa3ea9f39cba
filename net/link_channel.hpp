// One direction of a link between two ports of one process (--link
// rdmasim0:rdmasim1; net/README.md, "Links"): the sending port's sink and the
// receiving port's source. send() copies the frame into a bounded queue
// under the sender's port lock; next() hands it to the receiver's engine
// under the receiver's port lock. While the queue is full, frames wait in
// the sender's backlog (net/README.md, "Lossless links"), flushed by the
// sender's port.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net/frame_sink.hpp"
#include "net/frame_source.hpp"
#include "net/result.hpp"
#include "net/tx_backlog.hpp"

namespace rdmasim::net {

class LinkChannel final : public FrameSource, public FrameSink {
public:
    static constexpr std::size_t kDefaultCapacity = 1024; // frames in flight

    // `name` is what describe() says ("link rdmasim0 -> rdmasim1"). Fails
    // only when no eventfd can be made.
    static Result<std::unique_ptr<LinkChannel>> open(std::string name,
                                                     std::size_t capacity = kDefaultCapacity);
    ~LinkChannel() override;
    LinkChannel(const LinkChannel&) = delete;
    LinkChannel& operator=(const LinkChannel&) = delete;

    // --- the sending port's sink: copies, never blocks beyond the queue's
    // lock; a full queue pauses the sender (the backlog, under its port lock) ---
    void send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept override;
    std::size_t flush() noexcept override;
    [[nodiscard]] bool congested() const noexcept override { return backlog_.congested(); }
    [[nodiscard]] bool unread() const noexcept override { return !backlog_.empty(); }
    [[nodiscard]] const TxBacklogCounters* backlog_counters() const noexcept override {
        return &backlog_.counters();
    }

    // --- the receiving port's source ---
    // The frame's bytes stay valid until the next next(): its slot is not
    // reused before then. ts_ns is the sender's port clock; fcs_len 0.
    bool next(Frame& out) noexcept override;
    // A link lasts as long as the devices: never exhausted.
    [[nodiscard]] bool exhausted() const noexcept override { return false; }
    [[nodiscard]] std::string describe() const override { return name_; }
    [[nodiscard]] const SourceCounters& counters() const noexcept override { return counters_; }
    // An eventfd, readable while frames wait.
    [[nodiscard]] int wait_fd() const noexcept override { return event_fd_; }
    // The queue is process memory, but the eventfd is the parent's too (a
    // wake-up could go to the wrong process), and the other end is another
    // device's: a forked child's devices lose their links (sim/README.md, "Fork").
    [[nodiscard]] bool shared_across_fork() const noexcept override { return true; }

    // Frames lost: the backlog was full, or a copy could not be made.
    [[nodiscard]] std::uint64_t overflow_drops() const noexcept {
        return overflow_.load(std::memory_order_relaxed) +
               backlog_.counters().overflow.load(std::memory_order_relaxed);
    }
    [[nodiscard]] std::size_t capacity() const noexcept { return slots_.size(); }

private:
    explicit LinkChannel(std::string name, std::size_t capacity);
    // Into the queue: false when it is full (nothing taken).
    bool try_enqueue(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept;

    struct Slot {
        std::vector<std::uint8_t> bytes; // keeps its capacity: no allocation once warm
        std::uint64_t ts_ns = 0;
    };
    std::string name_;
    int event_fd_ = -1;
    std::mutex mutex_; // guards everything below; never held while taking a port lock
    std::vector<Slot> slots_;
    std::size_t head_ = 0;      // the oldest slot in use
    std::size_t count_ = 0;     // slots in use, the one the receiver reads included
    bool reading_ = false;      // slots_[head_] is the frame next() handed over
    SourceCounters counters_;
    std::atomic<std::uint64_t> overflow_{0}; // copies that could not be made
    TxBacklog backlog_; // the sender's side: under the sender's port lock, not mutex_
};

} // namespace rdmasim::net
