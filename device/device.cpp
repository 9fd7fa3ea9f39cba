#include "device/device.hpp"

#include <endian.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "device/abi/sysfs.hpp"
#include "device/async_events.hpp"
#include "device/stats_hook.hpp"
#include "device/verb_faults.hpp"
#include "device/cq.hpp"
#include "device/qp_roles.hpp"

namespace rdmasim::device {

std::unique_ptr<Device> make_device(const DeviceIdentity& identity, const Capabilities& caps) {
    auto dev = std::make_unique<Device>();
    std::memset(&dev->ibdev, 0, sizeof dev->ibdev);
    dev->ibdev.node_type = IBV_NODE_CA;
    dev->ibdev.transport_type = IBV_TRANSPORT_IB;
    std::snprintf(dev->ibdev.name, sizeof dev->ibdev.name, "%s", identity.name.c_str());
    std::snprintf(dev->ibdev.dev_name, sizeof dev->ibdev.dev_name, "uverbs-%s", identity.name.c_str());
    std::snprintf(dev->ibdev.dev_path, sizeof dev->ibdev.dev_path, "%s/uverbs/%s", sysfs_root,
                  identity.name.c_str());
    std::snprintf(dev->ibdev.ibdev_path, sizeof dev->ibdev.ibdev_path, "%s/ibdev/%s", sysfs_root,
                  identity.name.c_str());
    dev->identity = identity;
    dev->caps = caps;
    dev->mrs.reset(caps.max_mr);
    datapath::PortConfig pc;
    pc.delay_drop_timeout_ns = caps.delay_drop_timeout_ns;
    pc.delay_drop_rearm = caps.delay_drop_rearm;
    pc.deliver_bad_fcs = caps.deliver_bad_fcs;
    dev->port.configure(pc);
    dev->port.configure_addresses({identity.mac, identity.ipv4, identity.ipv6});
    dev->port.cm().set_ca_guid(be64toh(identity.node_guid)); // REQ and REP carry it
    dev->port.cm().set_timeouts(caps.cm_response_timeout, caps.cm_max_retries);
    return dev;
}

namespace {

int attach(Device& dev, RecvQueue& recv, datapath::RxQueueConfig rc, datapath::CqRing& cq,
           const void* pd) {
    rc.max_sge = recv.max_sge;
    rc.settings.fcs_checked = !dev.caps.deliver_bad_fcs; // the port drops bad ones
    rc.settings.pad_align = dev.caps.pad_align;
    rc.hold_frames = dev.caps.hold_frames;
    rc.hold_bytes = dev.caps.hold_bytes;
    recv.rx.init(rc, &cq, &dev.mrs, pd);
    std::lock_guard lock(dev.port.mutex());
    if (dev.port.queue_count() >= dev.caps.max_wq) return ENOMEM;
    dev.port.attach_queue(recv.rx);
    return 0;
}

// Caller holds the port lock and recv's post lock.
void apply_rx_state(Device& dev, RecvQueue& recv, datapath::QueueState state) noexcept {
    dev.port.set_queue_state(recv.rx, state);
    recv.in_error = state == datapath::QueueState::error;
}

// A receive queue completed a WQE with IBV_WC_LOC_PROT_ERR and stopped (the
// port flushed what was posted). Its owner follows; WQEs posted since are
// flushed now, later ones at once (in_error). mlx5 raises no async event for
// an error it reports in a completion: its WQ event handler knows only
// WQ_CATAS_ERROR (mlx5_ib_wq_event, kernel drivers/infiniband/hw/mlx5/qp.c),
// an error that keeps completions from being written.
//
// Caller holds the port lock, and `held`'s post lock when `held` is not null
// (a state change in progress on that queue): its lock is not taken again.
void receive_failed(Device& dev, datapath::RxQueue& rx, const RecvQueue* held) noexcept {
    RecvQueue& recv = rx.kind() == datapath::QueueKind::wq
                          ? static_cast<Wq*>(rx.owner())->recv
                          : static_cast<RawQp*>(rx.owner())->recv;
    std::unique_lock<SpinLock> post_lock(recv.post_lock, std::defer_lock);
    if (&recv != held) post_lock.lock(); // lock order: port, then post
    apply_rx_state(dev, recv, datapath::QueueState::error);
    // A WQ's state is what modify_wq checks transitions against. A raw QP's
    // receive queue is an RQ object of its own on mlx5
    // (create_raw_packet_qp_rq): it goes to error, the send queue and
    // ibv_qp.state do not.
    if (rx.kind() == datapath::QueueKind::wq) static_cast<Wq*>(rx.owner())->ibwq.state = IBV_WQS_ERR;
}

// service(), with `held` as in receive_failed.
void service_holding(Device& dev, std::uint64_t now_ns, const RecvQueue* held) noexcept {
    dev.port.service(now_ns);
    while (datapath::RxQueue* failed = dev.port.take_failed_queue())
        receive_failed(dev, *failed, held);
    for (Cq* cq : dev.cqs) cq_after_burst(*cq);
}

} // namespace

int attach_rx_queue(Device& dev, Wq& wq, std::uint32_t entries, datapath::WqSettings offloads) {
    datapath::RxQueueConfig rc;
    rc.ring_entries = entries;
    rc.qp_num = wq.ibwq.wq_num;
    rc.settings = offloads;
    // mlx5 reports IBV_WC_IP_CSUM_OK only for a QP's own receive queue
    // (handle_responder, providers/mlx5/cq.c), never for a WQ's.
    rc.settings.ip_csum = false;
    rc.kind = datapath::QueueKind::wq;
    rc.owner = &wq;
    return attach(dev, wq.recv, rc, wq.cq->ring, protection_domain(wq.pd));
}

int attach_rx_queue(Device& dev, RawQp& qp, std::uint32_t entries, datapath::WqSettings offloads) {
    datapath::RxQueueConfig rc;
    rc.ring_entries = entries;
    rc.qp_num = qp.ibqp.qp_num;
    rc.settings = offloads;
    rc.settings.ip_csum = dev.caps.ip_csum;
    rc.kind = datapath::QueueKind::qp;
    rc.owner = &qp;
    return attach(dev, qp.recv, rc, qp.recv_cq->ring, protection_domain(qp.pd));
}

void detach_rx_queue(Device& dev, RecvQueue& recv) noexcept {
    std::lock_guard lock(dev.port.mutex());
    dev.port.detach_queue(recv.rx);
    if (dev.stats) dev.stats->queue_detached(recv.rx);
}

void set_rx_state(Device& dev, RecvQueue& recv, datapath::QueueState state) noexcept {
    apply_rx_state(dev, recv, state);
    service_holding(dev, dev.port.now_ns(), &recv);
}

void service(Device& dev, std::uint64_t now_ns) noexcept { service_holding(dev, now_ns, nullptr); }

namespace {

// The receive queue `target` names, or nullptr. Port lock held.
datapath::RxQueue* find_rx(Device& dev, const RxTarget& target) noexcept {
    return dev.port.find_queue_if([&target](const datapath::RxQueue& q) {
        if (target.wq)
            return q.kind() == datapath::QueueKind::wq &&
                   static_cast<Wq*>(q.owner())->index == *target.wq;
        return q.kind() == datapath::QueueKind::qp && q.qp_num() == target.qp;
    });
}

// A dead device's verbs (inject_device_fatal).
class DeadDevice final : public VerbFaultHook {
public:
    int fail(Verb verb) noexcept override { return verb == Verb::destroy_wq ? 0 : EIO; }
};
DeadDevice dead_device;

} // namespace

bool inject_wq_fatal(Device& dev, const RxTarget& target) noexcept {
    datapath::RxQueue* rx = find_rx(dev, target);
    if (rx == nullptr) return false;
    ibv_async_event ev{};
    Context* ctx = nullptr;
    if (rx->kind() == datapath::QueueKind::wq) {
        Wq& wq = *static_cast<Wq*>(rx->owner());
        std::lock_guard post_lock(wq.recv.post_lock); // lock order: port, then post
        if (wq.ibwq.state == IBV_WQS_RDY) {
            wq.ibwq.state = IBV_WQS_ERR;
            set_rx_state(dev, wq.recv, datapath::QueueState::error);
        }
        ev.element.wq = &wq.ibwq;
        ev.event_type = IBV_EVENT_WQ_FATAL;
        ctx = wq.ctx;
    } else {
        // A raw QP's receive queue is an RQ object of its own on mlx5
        // (create_raw_packet_qp_rq): its catastrophic error reaches the QP's
        // handler (container_mibqp), which reports WQ_CATAS_ERROR as
        // IB_EVENT_QP_FATAL (mlx5_ib_qp_event, kernel
        // drivers/infiniband/hw/mlx5/qp.c). The SQ is another object.
        RawQp& qp = *static_cast<RawQp*>(rx->owner());
        std::lock_guard post_lock(qp.recv.post_lock);
        if (qp.ibqp.state != IBV_QPS_RESET && !qp.recv.in_error)
            set_rx_state(dev, qp.recv, datapath::QueueState::error);
        ev.element.qp = &qp.ibqp;
        ev.event_type = IBV_EVENT_QP_FATAL;
        ctx = qp.ctx;
    }
    // Raised under the port lock: destroy_wq and destroy_qp detach under it
    // first, so the object is alive here and its destroy sees the event (and
    // forgets it if unread).
    raise_async_event(*ctx, ev);
    return true;
}

void set_port_up(Device& dev, bool up) noexcept {
    const int state = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
    if (dev.port_state.exchange(state) == state) return;
    ibv_async_event ev{};
    ev.element.port_num = 1;
    ev.event_type = up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR;
    for (Context* ctx : dev.contexts) raise_async_event(*ctx, ev);
    // rdma_cm's ids on the device: the address they use may have moved.
    if (!up) dev.port.cm().device_event(datapath::cm::EventKind::addr_change);
}

bool inject_cq_overrun(Device& dev, const RxTarget& target) noexcept {
    if (!target.wq && !target.qp) {
        for (Cq* cq : dev.cqs) cq->ring.mark_overflow();
        return true;
    }
    datapath::RxQueue* rx = find_rx(dev, target);
    if (rx == nullptr) return false;
    Cq* cq = rx->kind() == datapath::QueueKind::wq ? static_cast<Wq*>(rx->owner())->cq
                                                   : static_cast<RawQp*>(rx->owner())->recv_cq;
    cq->ring.mark_overflow();
    return true;
}

bool inject_out_of_buffer(Device& dev, const RxTarget& target, std::uint32_t frames) noexcept {
    if (!target.wq && !target.qp) {
        dev.port.starve_next(frames);
        return true;
    }
    datapath::RxQueue* rx = find_rx(dev, target);
    if (rx == nullptr) return false;
    rx->starve(frames);
    return true;
}

bool inject_cqe_error(Device& dev, const RxTarget& target, int status) noexcept {
    const auto st = static_cast<std::uint8_t>(status);
    if (!target.wq && !target.qp) {
        dev.port.fail_next(st);
        return true;
    }
    datapath::RxQueue* rx = find_rx(dev, target);
    if (rx == nullptr) return false;
    rx->fail_next(st);
    return true;
}

bool inject_delay_drop_timeout(Device& dev, std::optional<std::uint32_t> wq_index) noexcept {
    const datapath::RxQueue* rx = nullptr;
    if (wq_index) {
        rx = find_rx(dev, RxTarget{wq_index, std::nullopt});
        if (rx == nullptr) return false;
    }
    dev.port.expire_delay_drop(rx); // the burst's service hands failed queues and CQ events on
    return true;
}

void inject_device_fatal(Device& dev) noexcept {
    if (dev.fatal.exchange(true)) return;
    dev.verb_faults.store(&dead_device, std::memory_order_release);
    dev.port_state.store(IBV_PORT_DOWN);
    ibv_async_event ev{};
    ev.event_type = IBV_EVENT_DEVICE_FATAL;
    for (Context* ctx : dev.contexts) raise_async_event(*ctx, ev);
    // rdma_cm's ids on it: the device is gone, as a kernel removes a dead one.
    dev.port.cm().device_event(datapath::cm::EventKind::device_removal);
}

} // namespace rdmasim::device
