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
[[nodiscard]] int attach_rx_queue(Device& dev, RawQp& qp, std::uint32_t entries,
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

// Injected faults (sim/README.md, "Fault injection"). Caller holds the port
// lock. Each returns false when the queue it names does not exist (any more).
//
// The receive queue a fault names: the device's WQ number `wq` in creation
// order (Wq::index, from 0), or the plain raw-packet QP whose qp_num is `qp`
// (its own receive queue); neither: what the kind says for "any".
struct RxTarget {
    std::optional<std::uint32_t> wq;
    std::optional<std::uint32_t> qp;
};
// The queue goes to ERR as on a catastrophic error: what was posted is
// flushed. A WQ goes to IBV_WQS_ERR and IBV_EVENT_WQ_FATAL names it; a raw
// QP's receive queue goes to error (its state and send side untouched, as on
// a protection error) and IBV_EVENT_QP_FATAL names the QP. Needs a target.
bool inject_wq_fatal(Device& dev, const RxTarget& target) noexcept;
// The port goes down (IBV_EVENT_PORT_ERR to every open context, DOWN in
// ibv_query_port) or back up (IBV_EVENT_PORT_ACTIVE, ACTIVE).
void set_port_up(Device& dev, bool up) noexcept;
// The CQ of the target (a WQ's CQ, a raw QP's receive CQ), or with none every
// CQ of the device, reports an overrun after this burst: IBV_EVENT_CQ_ERR,
// unless the CQ ignores overruns.
bool inject_cq_overrun(Device& dev, const RxTarget& target) noexcept;
// The next `frames` frames the target receives (with none: the next `frames`
// frames steered to any queue) find its ring empty: dropped as
// rx_out_of_buffer, no WQE taken, never held.
bool inject_out_of_buffer(Device& dev, const RxTarget& target, std::uint32_t frames) noexcept;
// The next frame the target completes (with none: the queue the next frame is
// steered to) completes with `status` (IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_PROT_ERR,
// IBV_WC_GENERAL_ERR), counted as cqe_errors; the queue then stops and its
// owner follows as on a protection error (service).
bool inject_cqe_error(Device& dev, const RxTarget& target, int status) noexcept;
// The delay-drop timer of the device's WQ number `wq_index` (none: of every
// WQ) expires now, through the port's own timeout (Port::expire_delay_drop).
bool inject_delay_drop_timeout(Device& dev, std::optional<std::uint32_t> wq_index) noexcept;
// The device dies: IBV_EVENT_DEVICE_FATAL to every open context; from then
// on every verb that can fail fails with EIO except the destroys (a program
// must still be able to clean up), ibv_query_port is EIO, and no frame
// arrives (the runtime loses them).
void inject_device_fatal(Device& dev) noexcept;

} // namespace rdmasim::device
