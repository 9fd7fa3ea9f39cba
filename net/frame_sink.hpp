// Where frames that leave a port go: a capture file, a wire to another
// program, a live interface. The port hands each frame a program sends to
// every sink attached to it, after the loopback to its own flows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "net/tx_backlog.hpp"

namespace rdmasim::net {

class FrameSink {
public:
    virtual ~FrameSink() = default;
    // One frame (destination MAC on, no FCS) sent at `ts_ns` on the port's
    // clock. Called under the port lock, so it must not block: a sink whose
    // I/O can stall queues the frame and writes it elsewhere. The bytes are
    // valid only during the call. A sink may also keep the frame, in order,
    // for a batch that its flush() sends: the port flushes after every
    // burst, service and verb that sent (Port::finish_call, Port::service).
    virtual void send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept = 0;

    // --- optional: one copy into the wire (net/README.md, "Frame sinks").
    // claim() offers room for a `size`-byte frame (destination MAC on, no
    // FCS) to `dst_mac` in the wire's own storage (a ring slot); the caller
    // writes the frame there and hands it over with commit(len, ts_ns), len
    // 1..size, before any other call on the sink, without blocking: the
    // wire's reader may wait for it. The frame then counts and orders as
    // send() would have sent it. Empty (the default: no such storage; no
    // room; frames waiting in the backlog, which it never passes): send()
    // it instead. The bytes may be rewritten by whoever else maps the
    // storage: the caller reads back nothing it trusts. ---
    [[nodiscard]] virtual std::span<std::uint8_t> claim(std::size_t size, const std::uint8_t* dst_mac) noexcept {
        (void)size;
        (void)dst_mac;
        return {};
    }
    virtual void commit(std::size_t len, std::uint64_t ts_ns) noexcept {
        (void)len;
        (void)ts_ns;
    }

    // --- lossless wires (net/README.md, "Lossless links"). A wire that is
    // momentarily full keeps what it cannot take in a TxBacklog, in order,
    // and the port calls flush() until it is empty (the engine retries on a
    // short timer while frames wait). A sink that never waits keeps these
    // defaults. All under the port lock. ---

    // Moves waiting frames onto the wire while it takes them; the frames
    // still waiting.
    virtual std::size_t flush() noexcept { return 0; }
    // True while the backlog is above its high watermark: the port's
    // requesters stop taking WQEs until it is not.
    [[nodiscard]] virtual bool congested() const noexcept { return false; }
    // True while frames this sink took have not all been read by the far
    // end: some wait in the backlog, in the socket's queue (SIOCOUTQ), in a
    // peer's ring. The port's ACK timers wait on it (a live peer that was
    // not scheduled has not seen the requests yet). May cost a syscall:
    // asked only when a timer falls due.
    [[nodiscard]] virtual bool unread() const noexcept { return false; }
    // The backlog's counters, or nullptr for a sink without one.
    [[nodiscard]] virtual const TxBacklogCounters* backlog_counters() const noexcept { return nullptr; }

    // In a forked child, once detached from the port (sim/README.md,
    // "Fork"): lets go of what it writes to without writing what it buffered
    // for the parent (a capture file's stdio buffer). The sink is then leaked,
    // never used nor destroyed: a wire's destructor would undo the parent's.
    virtual void abandon_after_fork() noexcept {}
};

} // namespace rdmasim::net
