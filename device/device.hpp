// Creating devices, registering receive queues with the port, and the
// service that follows frames moving or queues changing state. The runtime
// (sim/) and the verbs call these; programs never do.
#pragma once

#include <cstdint>
#include <memory>

#include "device/objects.hpp"

namespace rdmasim::device {

[[nodiscard]] std::unique_ptr<Device> make_device(const DeviceIdentity& identity,
                                                  const Capabilities& caps);

// Sets up a receive queue (a WQ's or a plain raw-packet QP's: ring of
// `entries` WQEs of up to `max_sge` SGEs, completions as `qpn` on `cq`, MR
// checks against `pd`) with the given offload switches; the device's profile
// supplies the rest (IP checksum verdict, padding line, delay-drop storage).
// Then registers it with the port. Allocates: control path only.
void attach_rx_queue(Device& dev, RecvQueue& recv, std::uint32_t entries, std::uint32_t qpn,
                     datapath::WqSettings offloads, datapath::CqRing& cq, const void* pd);
// The reverse: held frames are dropped as discarded, the port forgets it.
void detach_rx_queue(Device& dev, RecvQueue& recv) noexcept;

// Moves a receive queue to `state` (device/README.md, "Work queues": what
// each state does to posted WQEs and held frames), then services the device
// so flushed completions notify. Caller holds the port lock and recv's post
// lock; `in_error` follows the state.
void set_rx_state(Device& dev, RecvQueue& recv, datapath::QueueState state) noexcept;

// After frames moved or queues changed state: the port's delay-drop service
// at `now_ns`, then completion notifications and CQ overflow events.
// Caller holds the port lock.
void service(Device& dev, std::uint64_t now_ns) noexcept;

} // namespace rdmasim::device
