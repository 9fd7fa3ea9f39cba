#include "datapath/rx_queue.hpp"

#include <infiniband/verbs.h>

#include "datapath/scatter.hpp"

namespace rdmasim::datapath {

void RxQueue::init(const RxQueueConfig& config, CqRing* cq, const MrTable* mrs, const void* pd,
                   RxCounters* port) {
    ring_.init(config.ring_entries, config.max_sge);
    if (config.settings.delay_drop) hold_.init(config.hold_frames, config.hold_bytes);
    settings_ = config.settings;
    cq_ = cq;
    mrs_ = mrs;
    pd_ = pd;
    port_ = port;
    qp_num_ = config.qp_num;
}

void RxQueue::receive(const net::Frame& frame, const net::ParsedFrame& parsed,
                      std::uint64_t now_ns, bool delay_drop_armed, bool primary) noexcept {
    RxCounters& port = primary ? *port_ : uncounted_;
    counters_.frames.add();
    counters_.bytes.add(frame.len);
    if (!ready_) [[unlikely]] {
        drop(Drop::wq_not_ready, port);
        return;
    }
    // Frames already waiting go first: they take WQEs posted since they came
    // (SPEC 4.3), so that a new frame never overtakes them, whether it then
    // waits behind them or, with delay drop disarmed, is judged on its own.
    if (!hold_.empty() && !ring_.empty()) release_held(now_ns);
    if (!hold_.empty() || ring_.empty()) {
        if (settings_.delay_drop && delay_drop_armed && primary) {
            if (hold_.push(frame, parsed, now_ns)) {
                counters_.delay_drop_waits.add();
                port.delay_drop_waits.add();
            } else {
                drop(Drop::delay_drop_overflow, port);
            }
            return;
        }
        if (ring_.empty()) {
            drop(Drop::out_of_buffer, port);
            return;
        }
    }
    deliver(frame, parsed, now_ns, port);
}

void RxQueue::deliver(const net::Frame& frame, const net::ParsedFrame& parsed,
                      std::uint64_t now_ns, RxCounters& port) noexcept {
    if (!cq_->room()) [[unlikely]] {
        cq_->mark_overflow(); // the WQE stays posted; nothing in the CQ is lost
        drop(Drop::cq_overflow, port);
        return;
    }
    build_rx_image(frame, parsed, settings_, image_);
    if (image_.fcs_bad) [[unlikely]] {
        counters_.fcs_bad.add();
        port.fcs_bad.add();
    }
    const Wqe& wqe = ring_.front();
    const auto status = scatter(wqe, ring_.front_sges(), image_, *mrs_, pd_,
                                settings_.end_padding ? settings_.pad_align : 0);
    Cqe cqe;
    cqe.wr_id = wqe.wr_id;
    cqe.timestamp_ns = now_ns;
    cqe.qp_num = qp_num_;
    cqe.opcode = IBV_WC_RECV;
    switch (status) {
    case ScatterStatus::ok:
        cqe.status = IBV_WC_SUCCESS;
        cqe.byte_len = image_.byte_len;
        cqe.cvlan = image_.cvlan;
        if (settings_.ip_csum && net::ip_checksums_ok(frame.payload(), parsed))
            cqe.wc_flags |= IBV_WC_IP_CSUM_OK;
        counters_.delivered.add();
        counters_.delivered_bytes.add(image_.byte_len);
        port.delivered.add();
        port.delivered_bytes.add(image_.byte_len);
        break;
    case ScatterStatus::length_error:
        cqe.status = IBV_WC_LOC_LEN_ERR;
        drop(Drop::length_error, port);
        break;
    case ScatterStatus::protection_error:
        cqe.status = IBV_WC_LOC_PROT_ERR;
        drop(Drop::protection_error, port);
        break;
    }
    ring_.pop();
    (void)cq_->push(cqe); // room was checked above
}

std::uint32_t RxQueue::release_held(std::uint64_t now_ns) noexcept {
    std::uint32_t n = 0;
    while (ready_ && !hold_.empty() && !ring_.empty() && cq_->room()) {
        deliver(hold_.front(), hold_.front_parsed(), now_ns, *port_);
        hold_.pop();
        ++n;
    }
    return n;
}

bool RxQueue::expire_held(std::uint64_t now_ns, std::uint64_t timeout_ns) noexcept {
    if (hold_.empty() || now_ns - hold_.front_arrival_ns() < timeout_ns) return false;
    while (!hold_.empty()) {
        hold_.pop();
        drop(Drop::delay_drop_timeout, *port_);
    }
    return true;
}

void RxQueue::discard_held() noexcept {
    while (!hold_.empty()) {
        hold_.pop();
        drop(Drop::discarded, *port_);
    }
}

void RxQueue::flush() noexcept {
    while (!ring_.empty()) {
        Cqe cqe;
        cqe.wr_id = ring_.front().wr_id;
        cqe.qp_num = qp_num_;
        cqe.opcode = IBV_WC_RECV;
        cqe.status = IBV_WC_WR_FLUSH_ERR;
        ring_.pop();
        (void)cq_->push(cqe); // a full CQ marks its overflow
        counters_.flushed_wqes.add();
        port_->flushed_wqes.add();
    }
}

} // namespace rdmasim::datapath
