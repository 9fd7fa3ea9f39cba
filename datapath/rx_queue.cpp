#include "datapath/rx_queue.hpp"

#include <infiniband/verbs.h>

#include "datapath/rx_queue_receive.hpp"

namespace rdmasim::datapath {

void RxQueue::init(const RxQueueConfig& config, CqRing* cq, const MrTable* mrs, const void* pd) {
    ring_.init(config.ring_entries, config.max_sge);
    if (config.settings.delay_drop) hold_.init(config.hold_frames, config.hold_bytes);
    settings_ = config.settings;
    cq_ = cq;
    mrs_ = mrs;
    pd_ = pd;
    qp_num_ = config.qp_num;
    kind_ = config.kind;
    owner_ = config.owner;
}

void RxQueue::starve(std::uint32_t frames) noexcept {
    starved_ = frames > UINT32_MAX - starved_ ? UINT32_MAX : starved_ + frames;
}

RxOutcome RxQueue::deliver_injected_error(std::uint64_t now_ns) noexcept {
    // As the protection error below: an error CQE moves a ConnectX RQ to ERR
    // (flush_in_error_en), whatever its syndrome; mlx5e recovers its RQs from
    // local length, protection and QP-operation errors alike
    // (cqe_syndrome_needs_recover, kernel drivers/net/ethernet/mellanox/mlx5).
    Cqe cqe;
    cqe.wr_id = ring_.front().wr_id;
    cqe.timestamp_ns = now_ns;
    cqe.qp_num = qp_num_;
    cqe.opcode = IBV_WC_RECV;
    cqe.status = fail_status_;
    fail_status_ = 0;
    ready_ = false;
    failed_ = true;
    ring_.pop();
    (void)cq_->push(cqe); // the caller checked room
    return RxOutcome::dropped(Drop::cqe_error);
}

RxTally RxQueue::release_held(std::uint64_t now_ns) noexcept {
    RxTally t;
    while (ready_ && !hold_.empty() && !ring_.empty() && cq_->room()) {
        t.add(counted(deliver(hold_.front(), hold_.front_parsed(), now_ns)));
        hold_.pop();
    }
    return t;
}

RxTally RxQueue::expire_held(std::uint64_t now_ns, std::uint64_t timeout_ns,
                             bool& timed_out) noexcept {
    timed_out = !hold_.empty() && now_ns - hold_.front_arrival_ns() >= timeout_ns;
    RxTally t;
    if (!timed_out) return t;
    while (!hold_.empty()) {
        hold_.pop();
        t.add(counted(RxOutcome::dropped(Drop::delay_drop_timeout)));
    }
    return t;
}

RxTally RxQueue::discard_held() noexcept {
    RxTally t;
    while (!hold_.empty()) {
        hold_.pop();
        t.add(counted(RxOutcome::dropped(Drop::discarded)));
    }
    return t;
}

RxTally RxQueue::flush() noexcept {
    RxTally t;
    while (!ring_.empty()) {
        Cqe cqe;
        cqe.wr_id = ring_.front().wr_id;
        cqe.qp_num = qp_num_;
        cqe.opcode = IBV_WC_RECV;
        cqe.status = IBV_WC_WR_FLUSH_ERR;
        ring_.pop();
        // A full CQ does not take it: the WQE is gone all the same. Counted,
        // and push() marked the overrun that raises IBV_EVENT_CQ_ERR.
        if (!cq_->push(cqe)) [[unlikely]]
            ++t.flush_cq_overflow;
        ++t.flushed_wqes;
    }
    counters_.flushed_wqes.add(t.flushed_wqes);
    if (t.flush_cq_overflow) [[unlikely]]
        counters_.flush_cq_overflow.add(t.flush_cq_overflow);
    return t;
}

} // namespace rdmasim::datapath
