// Where frames come from. A source is pulled by the engine, a frame or a
// burst at a time; the bytes of what one call handed over stay valid until
// the next call to next() or next_burst() on that source.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "net/frame.hpp"

namespace rdmasim::net {

// What a source did with the records it read. Records it skipped never reach
// a port: they are counted here, beside the port counters.
struct SourceCounters {
    std::uint64_t frames = 0;              // frames handed over by next()
    std::uint64_t bytes = 0;
    std::uint64_t truncated_records = 0;   // caplen < len: handed over, marked truncated()
    std::uint64_t synthesized_headers = 0; // handed over with an Ethernet header the source made
    std::uint64_t skipped_records = 0;     // not Ethernet-borne traffic: never handed over
    // Live sources: frames the kernel dropped before the source read them
    // (ring or buffer full), as of the source's last statistics read.
    std::uint64_t kernel_drops = 0;
};

class FrameSource {
public:
    virtual ~FrameSource() = default;
    // Fills `out` and returns true, or returns false when no frame is available now.
    virtual bool next(Frame& out) noexcept = 0;
    // Fills the first n entries of `out` (n <= out.size()) and returns n; 0
    // when no frame is available now. Each frame counts as handed over, as
    // from next(). The default hands over at most one, through next(): a
    // source that reuses one buffer per frame keeps it. A source that can
    // keep a whole burst's bytes valid overrides it (one call per burst).
    virtual std::uint32_t next_burst(std::span<Frame> out) noexcept {
        return !out.empty() && next(out[0]) ? 1 : 0;
    }
    // True once the source will never produce another frame (end of file).
    [[nodiscard]] virtual bool exhausted() const noexcept = 0;
    // A short human description ("pcap file traffic.pcap (EN10MB, fcs 0)").
    [[nodiscard]] virtual std::string describe() const = 0;
    [[nodiscard]] virtual const SourceCounters& counters() const noexcept = 0;
    // Why the source ended early (a read error in the middle of a file), or "".
    [[nodiscard]] virtual std::string_view failure() const noexcept { return {}; }
    // How far through a finite source (0..1), or a negative value when unknown.
    [[nodiscard]] virtual double progress() const noexcept { return -1; }
    // A live source's descriptor: readable when next() may have a frame, so
    // an engine can sleep on it. -1: none (the engine polls or never waits).
    [[nodiscard]] virtual int wait_fd() const noexcept { return -1; }
    // Called just before the engine sleeps on wait_fd(): a source whose
    // writers signal only a sleeping reader (shm://) arms its doorbell here.
    // False when a frame may have come meanwhile: pull again, do not sleep.
    [[nodiscard]] virtual bool prepare_wait() noexcept { return true; }
    // True when a forked child would take its frames from the parent's own
    // medium (a socket, a ring, a mapped segment, an eventfd): the source
    // stays the parent's, and the child's device gets none (sim/README.md,
    // "Fork"). False: the child's copy reads on its own (memory, a capture
    // file read with pread at its own offset).
    [[nodiscard]] virtual bool shared_across_fork() const noexcept { return false; }
};

} // namespace rdmasim::net
