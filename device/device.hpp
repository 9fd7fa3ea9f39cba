// Creating devices, and the port's engine-facing entry points: frames in,
// time passing, frames out. The runtime calls these; programs never do.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "device/objects.hpp"

namespace rdmasim::device {

[[nodiscard]] std::unique_ptr<Device> make_device(const DeviceIdentity& identity,
                                                  const Capabilities& caps);

// Sets up the receive side of a WQ or a plain raw-packet QP (ring of
// `entries` WQEs of up to `max_sge` SGEs, completions as `qpn` on `cq`, MR
// checks against `pd`) with the given offload switches; the device's profile
// supplies the rest (IP checksum verdict, padding line, delay-drop storage).
// Then makes it visible to the engine. Allocates: control path only.
void attach_rx_queue(Device& dev, datapath::RxQueue& rx, std::uint32_t entries,
                     std::uint32_t max_sge, std::uint32_t qpn, datapath::WqSettings offloads,
                     datapath::CqRing& cq, const void* pd);
// The reverse: held frames are dropped as discarded, the engine stops seeing it.
void detach_rx_queue(Device& dev, datapath::RxQueue& rx) noexcept;

// One frame arriving on the port: steering, RSS, the queue's pipeline.
// Caller holds dev.port.lock. `exclude` is a sending QP that must not see its
// own frame looped back.
void port_ingress(Device& dev, const net::Frame& frame, std::uint64_t now_ns,
                  const Qp* exclude = nullptr) noexcept;

// After a burst, or when time passes: releases held frames to new WQEs,
// expires delay-drop waits, fires CQ notifications and overflow events.
// Caller holds dev.port.lock.
void port_service(Device& dev, std::uint64_t now_ns) noexcept;

// The earliest time at which port_service may have a delay-drop timeout to
// fire, or UINT64_MAX; O(1), never later than the truth. Caller holds dev.port.lock.
[[nodiscard]] std::uint64_t port_next_deadline(const Device& dev) noexcept;

// Frames held for delay drop across the port's queues. Caller holds the lock.
[[nodiscard]] std::uint64_t port_held_frames(const Device& dev) noexcept;

} // namespace rdmasim::device
