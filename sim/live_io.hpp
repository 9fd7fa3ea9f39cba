// Live interfaces for a device's port (sim/README.md, "Sources and sinks"):
// the `iface` key (AF_PACKET ring) and the `pcap_live` key (libpcap). One
// socket is both the port's source and one of its sinks; the engine owns the
// source side, the Simulator the sink side, and the socket closes when both
// are gone.
#pragma once

#include <cstdint>
#include <string>

#include "net/result.hpp"
#include "net/send_counters.hpp"
#include "sim/config.hpp"
#include "sim/device_io.hpp"

namespace rdmasim::sim {

// Sets io.source and adds the sink. Errors name the key and the interface
// (a missing CAP_NET_RAW, an unknown interface, a bad filter); on error
// nothing is open and io is unchanged.
Result<void> open_iface(const Config& config, std::uint32_t index, const std::string& name,
                        DeviceIo& io);
Result<void> open_pcap_live(const Config& config, std::uint32_t index, const std::string& name,
                            DeviceIo& io);

// The send counters of a live interface's sink, or nullptr for any other sink.
[[nodiscard]] const net::SendCounters* live_send_counters(const net::FrameSink& sink) noexcept;

} // namespace rdmasim::sim
