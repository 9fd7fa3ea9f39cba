// What one device's port is plugged into, opened from the configuration
// (sim/README.md, "Sources and sinks"): at most one source (a capture file, a
// live interface, a virtual wire) and any number of sinks (the same
// interface or wire, a capture of what is sent). Links between devices of
// one process are made by the Simulator, which sees every device.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "net/frame_sink.hpp"
#include "net/frame_source.hpp"
#include "net/result.hpp"
#include "sim/config.hpp"

namespace rdmasim::sim {

struct DeviceIo {
    std::unique_ptr<net::FrameSource> source;          // null: nothing to receive
    std::vector<std::shared_ptr<net::FrameSink>> sinks; // attached to the port in order
};

// A sink that is also a source (a wire, one direction of a link) is owned by
// the engine that pulls it; the sink list borrows it. The Simulator detaches
// every sink before its engines, and their sources, go.
[[nodiscard]] std::shared_ptr<net::FrameSink> borrowed_sink(net::FrameSink& sink);

// Opens device `index`'s source and sinks. An error names the key, the value
// and the reason (a missing privilege names the capability); nothing stays
// open after an error.
Result<DeviceIo> open_device_io(const Config& config, std::uint32_t index);

} // namespace rdmasim::sim
