#include "sim/live_io.hpp"

#include <atomic>
#include <memory>
#include <utility>

#include "net/af_packet.hpp"
#include "net/pcap_live.hpp"
#include "sim/logging.hpp"

namespace rdmasim::sim {

namespace {

// The port's source side of a shared live socket.
template <class Port> class SharedSource final : public net::FrameSource {
public:
    explicit SharedSource(std::shared_ptr<Port> port) : port_(std::move(port)) {}
    bool next(net::Frame& out) noexcept override { return port_->next(out); }
    std::uint32_t next_burst(std::span<net::Frame> out) noexcept override {
        return port_->next_burst(out);
    }
    [[nodiscard]] bool exhausted() const noexcept override { return port_->exhausted(); }
    [[nodiscard]] std::string describe() const override { return port_->describe(); }
    [[nodiscard]] const net::SourceCounters& counters() const noexcept override {
        return port_->counters();
    }
    [[nodiscard]] std::string_view failure() const noexcept override { return port_->failure(); }
    [[nodiscard]] int wait_fd() const noexcept override { return port_->wait_fd(); }
    [[nodiscard]] bool shared_across_fork() const noexcept override {
        return port_->shared_across_fork();
    }

private:
    std::shared_ptr<Port> port_;
};

// The port's sink side. The first frame the kernel refuses is logged as a
// warning (once: later ones are only counted in the port's SendCounters);
// nothing is logged at teardown, which may run from the drop-in library's
// fini after the logger is gone.
template <class Port> class SharedSink final : public net::FrameSink {
public:
    SharedSink(std::shared_ptr<Port> port, std::uint32_t index)
        : port_(std::move(port)), index_(index) {}
    void send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept override {
        port_->send(frame, ts_ns);
        if (!warned_.load(std::memory_order_relaxed) && port_->send_counters().failures() != 0 &&
            !warned_.exchange(true)) {
            try {
                log().warn("rdmasim{}: {}: the kernel refused a frame ({}); further refusals "
                           "are counted, not logged",
                           index_, port_->describe(), port_->send_counters().text());
            } catch (...) { // a log line is not worth a failed send
            }
        }
    }
    [[nodiscard]] const net::SendCounters& send_counters() const noexcept { return port_->send_counters(); }
    std::size_t flush() noexcept override { return port_->flush(); }
    [[nodiscard]] bool congested() const noexcept override { return port_->congested(); }
    [[nodiscard]] bool unread() const noexcept override { return port_->unread(); }
    [[nodiscard]] const net::TxBacklogCounters* backlog_counters() const noexcept override {
        return port_->backlog_counters();
    }

private:
    std::shared_ptr<Port> port_;
    std::uint32_t index_;
    std::atomic<bool> warned_{false};
};

template <class Port> void attach(std::unique_ptr<Port> opened, std::uint32_t index, DeviceIo& io) {
    std::shared_ptr<Port> port = std::move(opened);
    io.source = std::make_unique<SharedSource<Port>>(port);
    io.sinks.push_back(std::make_shared<SharedSink<Port>>(port, index));
}

} // namespace

Result<void> open_iface(const Config& config, std::uint32_t index, const std::string& name,
                        DeviceIo& io) {
    net::AfPacketOptions options;
    options.iface = name;
    options.promisc = config.promisc;
    auto port = net::AfPacketPort::open(options);
    if (!port) return port.error();
    attach(std::move(port.value()), index, io);
    return {};
}

Result<void> open_pcap_live(const Config& config, std::uint32_t index, const std::string& name,
                            DeviceIo& io) {
    net::PcapLiveOptions options;
    options.iface = name;
    options.filter = config.filter;
    options.promisc = config.promisc;
    auto port = net::PcapLivePort::open(options);
    if (!port) return port.error();
    if (!port.value()->warning().empty()) log().warn("rdmasim{}: {}", index, port.value()->warning());
    attach(std::move(port.value()), index, io);
    return {};
}

const net::SendCounters* live_send_counters(const net::FrameSink& sink) noexcept {
    if (const auto* s = dynamic_cast<const SharedSink<net::AfPacketPort>*>(&sink)) return &s->send_counters();
    if (const auto* s = dynamic_cast<const SharedSink<net::PcapLivePort>*>(&sink)) return &s->send_counters();
    return nullptr;
}

} // namespace rdmasim::sim
