// Creating devices, registering receive queues with the port, and the
// service that follows frames moving or queues changing state. The runtime
// (sim/) and the verbs call these; programs never do.
#pragma once

#include <cstdint>
#include <optional>
#include <memory>

#include "device/objects.hpp"

namespace rdmasim::device {

[[nodiscard]] std::unique_ptr<Device> make_device(const DeviceIdentity& identity,
                                                  const Capabilities& caps);

// Sets up the receive queue of a WQ or of a plain raw-packet QP (ring of
// `entries` WQEs of up to recv.max_sge SGEs, completions as its wq_num or
// qp_num on its CQ, MR checks against its PD) with the given offload
// switches; the device's profile supplies the rest (the IP checksum verdict,
// for a QP only; the padding line; delay-drop storage). Then registers it
// with the port. Returns 0, or ENOMEM when the device already has
// caps.max_wq receive queues (max_wq_type_rq: WQs and raw QPs' receive queues
// alike, all RQ objects on mlx5). Allocates: control path only.
[[nodiscard]] int attach_rx_queue(Device& dev, Wq& wq, std::uint32_t entries,
                                  datapath::WqSettings offloads);
[[nodiscard]] int attach_rx_queue(Device& dev, Qp& qp, std::uint32_t entries,
                                  datapath::WqSettings offloads);
// The reverse: held frames are dropped as discarded, the port forgets it.
void detach_rx_queue(Device& dev, RecvQueue& recv) noexcept;

// Moves a receive queue to `state` (device/README.md, "Work queues": what
// each state does to posted WQEs and held frames), then services the device
// so flushed completions notify. Caller holds the port lock and recv's post
// lock; `in_error` follows the state. The service may find `recv` failed (a
// protection error while releasing held frames): then it ends in error and a
// WQ owner's state is ERR, so set the owner's state before calling this.
void set_rx_state(Device& dev, RecvQueue& recv, datapath::QueueState state) noexcept;

// After frames moved or queues changed state: the port's delay-drop service
// at `now_ns`; then the owners of receive queues that stopped on a protection
// error follow them (a WQ goes to IBV_WQS_ERR; a raw QP's receive side to
// error, its state and send side untouched: device/README.md, "Work queues"
// and "Raw-packet QPs"; no async event); then completion notifications and CQ
// overflow events. Caller holds the port lock, and no post lock but the one
// of a queue whose state it has just set.
void service(Device& dev, std::uint64_t now_ns) noexcept;

// Injected faults (sim/README.md, "Fault injection"). Caller holds the port lock.
// The device's WQ number `index` in creation order (Wq::index, from 0) goes
// to ERR as on a catastrophic error: what was posted is flushed,
// IBV_EVENT_WQ_FATAL names it. False when that WQ does not exist (any more).
bool inject_wq_fatal(Device& dev, std::uint32_t index) noexcept;
// The port goes down (IBV_EVENT_PORT_ERR to every open context, DOWN in
// ibv_query_port) or back up (IBV_EVENT_PORT_ACTIVE, ACTIVE).
void set_port_up(Device& dev, bool up) noexcept;
// The CQ of the device's WQ number `index` (creation order), or with none
// every CQ of the device, reports an overrun after this burst:
// IBV_EVENT_CQ_ERR, unless the CQ ignores overruns. False when that WQ does
// not exist.
bool inject_cq_overrun(Device& dev, std::optional<std::uint32_t> wq_index) noexcept;
// The device dies: IBV_EVENT_DEVICE_FATAL to every open context; from then
// on every verb that can fail fails with EIO except the destroys (a program
// must still be able to clean up), ibv_query_port is EIO, and no frame
// arrives (the runtime loses them).
void inject_device_fatal(Device& dev) noexcept;

} // namespace rdmasim::device
