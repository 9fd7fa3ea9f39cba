#include "sim/device_io.hpp"

#include <cerrno>

#include <fmt/format.h>

#include "net/capture_sink.hpp"
#include "net/pcap_file_source.hpp"
#include "net/pcap_writer.hpp"
#include "net/shm_wire.hpp"
#include "net/vde_wire.hpp"
#include "sim/addresses.hpp"
#include "sim/live_io.hpp"
#include "sim/logging.hpp"
#include "sim/simulator.hpp"

namespace rdmasim::sim {

namespace {

// Device `index`'s value of a per-device key, or "".
const std::string& slot(const std::vector<std::string>& values, std::uint32_t index) {
    static const std::string none;
    return index < values.size() ? values[index] : none;
}

Result<std::unique_ptr<net::FrameSource>> open_pcap(const Config& config, std::uint32_t index,
                                                    const std::string& path) {
    net::PcapOpenOptions options;
    options.force_fcs_len = config.source_fcs;
    // A header synthesized for a capture without one is addressed to the
    // device that receives it, unless configured otherwise.
    options.synth_dst_mac = config.synth_dst_mac.value_or(device_identity(config, index).mac);
    options.synth_src_mac = config.synth_src_mac.value_or(net::kSynthSrcMacDefault);
    auto src = net::PcapFileSource::open(path, options);
    if (!src) return src.error();
    return std::unique_ptr<net::FrameSource>(std::move(src.value()));
}

} // namespace

std::shared_ptr<net::FrameSink> borrowed_sink(net::FrameSink& sink) {
    return {std::shared_ptr<net::FrameSink>(), &sink}; // aliasing: shares no ownership
}

Result<DeviceIo> open_device_io(const Config& config, std::uint32_t index) {
    DeviceIo io;
    if (const std::string& path = slot(config.pcap, index); !path.empty()) {
        auto src = open_pcap(config, index, path);
        if (!src) return src.error();
        io.source = std::move(src.value());
    }
    if (const std::string& name = slot(config.iface, index); !name.empty())
        if (auto r = open_iface(config, index, name, io); !r) return r.error();
    if (const std::string& name = slot(config.pcap_live, index); !name.empty())
        if (auto r = open_pcap_live(config, index, name, io); !r) return r.error();
    if (const std::string& url = slot(config.wire, index); url.starts_with("shm://")) {
        // One object receives and sends (net/README.md, "Shared-memory wire").
        auto wire = net::ShmWire::open(
            url, net::ShmWireOptions{.mode = config.wire_mode, .route = {}, .prefault = true});
        if (!wire) return wire.error();
        io.sinks.push_back(borrowed_sink(*wire.value()));
        io.source = std::move(wire.value());
    } else if (!url.empty()) {
        // One object receives and sends (net/README.md, "Virtual wires").
        net::VdeWireOptions options;
        options.mode = config.wire_mode;
        auto wire = net::VdeWire::open(url, options);
        if (!wire) return wire.error();
        io.sinks.push_back(borrowed_sink(*wire.value()));
        io.source = std::move(wire.value());
    }
    if (const std::string& path = slot(config.tx_capture, index); !path.empty()) {
        auto writer = net::PcapWriter::open(path);
        if (!writer) return writer.error();
        io.sinks.push_back(std::make_shared<net::CaptureSink>(std::move(writer.value())));
    }
    if (io.source) log().info("rdmasim{}: {}", index, io.source->describe());
    return io;
}

} // namespace rdmasim::sim
