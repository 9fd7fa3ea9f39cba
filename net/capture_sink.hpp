// A FrameSink that records what a port sends into a pcap file (--tx-capture).
#pragma once

#include <memory>

#include "net/frame_sink.hpp"
#include "net/pcap_writer.hpp"

namespace rdmasim::net {

class CaptureSink final : public FrameSink {
public:
    explicit CaptureSink(std::unique_ptr<PcapWriter> writer) : writer_(std::move(writer)) {}
    // Buffered stdio writes: the port lock is held for a memcpy, rarely a write(2).
    void send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept override {
        writer_->write(frame, ts_ns);
    }
    [[nodiscard]] PcapWriter& writer() noexcept { return *writer_; }
    void abandon_after_fork() noexcept override { writer_->abandon_after_fork(); }

private:
    std::unique_ptr<PcapWriter> writer_;
};

} // namespace rdmasim::net
