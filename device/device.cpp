#include "device/device.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include "datapath/rss.hpp"
#include "device/cq.hpp"

namespace rdmasim::device {

std::unique_ptr<Device> make_device(const DeviceIdentity& identity, const Capabilities& caps) {
    auto dev = std::make_unique<Device>();
    std::memset(&dev->ibdev, 0, sizeof dev->ibdev);
    dev->ibdev.node_type = IBV_NODE_CA;
    dev->ibdev.transport_type = IBV_TRANSPORT_IB;
    std::snprintf(dev->ibdev.name, sizeof dev->ibdev.name, "%s", identity.name.c_str());
    std::snprintf(dev->ibdev.dev_name, sizeof dev->ibdev.dev_name, "uverbs-%s", identity.name.c_str());
    std::snprintf(dev->ibdev.dev_path, sizeof dev->ibdev.dev_path, "/rdmasim/uverbs/%s",
                  identity.name.c_str());
    std::snprintf(dev->ibdev.ibdev_path, sizeof dev->ibdev.ibdev_path, "/rdmasim/ibdev/%s",
                  identity.name.c_str());
    dev->identity = identity;
    dev->caps = caps;
    dev->mrs.reset(caps.max_mr);
    return dev;
}

void attach_rx_queue(Device& dev, datapath::RxQueue& rx, std::uint32_t entries,
                     std::uint32_t max_sge, std::uint32_t qpn, datapath::WqSettings offloads,
                     datapath::CqRing& cq, const void* pd) {
    datapath::RxQueueConfig rc;
    rc.ring_entries = entries;
    rc.max_sge = max_sge;
    rc.qp_num = qpn;
    rc.settings = offloads;
    rc.settings.ip_csum = dev.caps.ip_csum;
    rc.settings.pad_align = dev.caps.pad_align;
    rc.hold_frames = dev.caps.hold_frames;
    rc.hold_bytes = dev.caps.hold_bytes;
    rx.init(rc, &cq, &dev.mrs, pd, &dev.port.counters);
    std::lock_guard lock(dev.port.lock);
    dev.queues.push_back(&rx);
}

void detach_rx_queue(Device& dev, datapath::RxQueue& rx) noexcept {
    std::lock_guard lock(dev.port.lock);
    rx.discard_held();
    std::erase(dev.queues, &rx);
}

namespace {

void deliver_to_qp(Device& dev, Qp& qp, const net::Frame& frame, const net::ParsedFrame& parsed,
                   std::uint64_t now_ns, bool primary) noexcept {
    const bool armed = dev.port.delay_drop_armed;
    if (!qp.rss) {
        qp.rx.receive(frame, parsed, now_ns, armed, primary);
        return;
    }
    const auto hash = datapath::rss_hash(qp.toeplitz, qp.hash_fields, frame.payload(), parsed);
    Wq* wq = qp.table->entries[datapath::rss_entry(hash, qp.table->log_size)];
    wq->rx.receive(frame, parsed, now_ns, armed, primary);
}

} // namespace

void port_ingress(Device& dev, const net::Frame& frame, std::uint64_t now_ns,
                  const Qp* exclude) noexcept {
    Port& port = dev.port;
    port.now_ns = now_ns;
    port.counters.frames.add();
    port.counters.bytes.add(frame.len);
    if (frame.truncated() || frame.len < frame.fcs_len) [[unlikely]] {
        port.counters.drop(datapath::Drop::truncated_capture);
        return;
    }
    const auto bytes = frame.payload();
    if (bytes.size() < net::kEthHeaderLen) [[unlikely]] {
        port.counters.drop(datapath::Drop::runt);
        return;
    }
    const auto parsed = net::parse_frame(bytes);
    for (Flow* f : port.sniffers) {
        if (f->qp != exclude && datapath::flow_matches(f->rule, bytes, parsed)) {
            deliver_to_qp(dev, *f->qp, frame, parsed, now_ns, false);
            port.counters.sniffer_copies.add();
        }
    }
    for (Flow* f : port.flows) {
        if (f->qp != exclude && datapath::flow_matches(f->rule, bytes, parsed)) {
            const auto waits = port.counters.delay_drop_waits.get();
            deliver_to_qp(dev, *f->qp, frame, parsed, now_ns, true);
            if (port.counters.delay_drop_waits.get() != waits) [[unlikely]] // it now waits
                port.next_deadline_ns =
                    std::min(port.next_deadline_ns, now_ns + dev.caps.delay_drop_timeout_ns);
            return;
        }
    }
    port.counters.drop(datapath::Drop::steering_miss);
}

void port_service(Device& dev, std::uint64_t now_ns) noexcept {
    Port& port = dev.port;
    if (now_ns > port.now_ns) port.now_ns = now_ns;
    std::uint64_t next = std::numeric_limits<std::uint64_t>::max();
    for (datapath::RxQueue* q : dev.queues) {
        if (!q->has_held()) continue;
        q->release_held(port.now_ns);
        // Hardware leaves delay-drop mode on a timeout; the driver re-arms it at once.
        if (q->expire_held(port.now_ns, dev.caps.delay_drop_timeout_ns) && !dev.caps.delay_drop_rearm)
            port.delay_drop_armed = false;
        if (q->has_held())
            next = std::min(next, q->oldest_held_ns() + dev.caps.delay_drop_timeout_ns);
    }
    port.next_deadline_ns = next;
    for (Cq* cq : dev.cqs) cq_after_burst(*cq);
}

std::uint64_t port_next_deadline(const Device& dev) noexcept { return dev.port.next_deadline_ns; }

std::uint64_t port_held_frames(const Device& dev) noexcept {
    std::uint64_t n = 0;
    for (const datapath::RxQueue* q : dev.queues) n += q->held();
    return n;
}

} // namespace rdmasim::device
