#include "device/device.hpp"

#include <cstdio>
#include <cstring>
#include <mutex>

#include "device/abi/sysfs.hpp"
#include "device/cq.hpp"

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
    return dev;
}

void attach_rx_queue(Device& dev, RecvQueue& recv, std::uint32_t entries, std::uint32_t qpn,
                     datapath::WqSettings offloads, datapath::CqRing& cq, const void* pd) {
    datapath::RxQueueConfig rc;
    rc.ring_entries = entries;
    rc.max_sge = recv.max_sge;
    rc.qp_num = qpn;
    rc.settings = offloads;
    rc.settings.ip_csum = dev.caps.ip_csum;
    rc.settings.fcs_checked = !dev.caps.deliver_bad_fcs; // the port drops bad ones
    rc.settings.pad_align = dev.caps.pad_align;
    rc.hold_frames = dev.caps.hold_frames;
    rc.hold_bytes = dev.caps.hold_bytes;
    recv.rx.init(rc, &cq, &dev.mrs, pd);
    std::lock_guard lock(dev.port.mutex());
    dev.port.attach_queue(recv.rx);
}

void detach_rx_queue(Device& dev, RecvQueue& recv) noexcept {
    std::lock_guard lock(dev.port.mutex());
    dev.port.detach_queue(recv.rx);
}

void set_rx_state(Device& dev, RecvQueue& recv, datapath::QueueState state) noexcept {
    dev.port.set_queue_state(recv.rx, state);
    recv.in_error = state == datapath::QueueState::error;
    service(dev, dev.port.now_ns());
}

void service(Device& dev, std::uint64_t now_ns) noexcept {
    dev.port.service(now_ns);
    for (Cq* cq : dev.cqs) cq_after_burst(*cq);
}

} // namespace rdmasim::device
