// RxQueue's per-frame path (receive, and deliver, which it and
// release_held use), inline so that the port's delivery compiles it into
// its own: as a call from Port::deliver it cost 34 instructions a frame
// (cachegrind, 64-byte replay). Included where receive() is called (port.cpp,
// rx_queue.cpp, the queue's own test); the contracts are in rx_queue.hpp.
#pragma once

#include <infiniband/verbs.h>

#include "datapath/rx_queue.hpp"
#include "datapath/scatter.hpp"

namespace rdmasim::datapath {

inline RxOutcome RxQueue::receive(const net::Frame& frame, const net::ParsedFrame& parsed,
                                  std::uint64_t now_ns, MayWait wait, RxTally* released) noexcept {
    counters_.frames.add();
    counters_.bytes.add(frame.len);
    if (!ready_) [[unlikely]]
        return counted(RxOutcome::dropped(Drop::wq_not_ready));
    // Frames already waiting go first: they take WQEs posted since they came
    // (datapath/README.md, "Per-frame order"), so that a new frame never
    // overtakes them, whether it then waits behind them or, with delay drop
    // disarmed, is judged on its own.
    if (!hold_.empty() && !ring_.empty()) [[unlikely]] {
        *released = release_held(now_ns);
        if (!ready_) [[unlikely]] // a released frame stopped the queue
            return counted(RxOutcome::dropped(Drop::wq_not_ready));
    }
    if (starved_ != 0) [[unlikely]] { // an injected out-of-buffer burst
        --starved_;
        return counted(RxOutcome::dropped(Drop::out_of_buffer));
    }
    if (!hold_.empty() || ring_.empty()) {
        if (settings_.delay_drop && wait == MayWait::yes) {
            if (hold_.push(frame, parsed, now_ns)) return counted(RxOutcome::held());
            return counted(RxOutcome::dropped(Drop::delay_drop_overflow));
        }
        if (ring_.empty()) return counted(RxOutcome::dropped(Drop::out_of_buffer));
    }
    return counted(deliver(frame, parsed, now_ns));
}

// Inlined into receive(): the call cost 27 instructions a frame (cachegrind).
inline RxOutcome RxQueue::deliver(const net::Frame& frame, const net::ParsedFrame& parsed,
                                  std::uint64_t now_ns) noexcept {
    if (!cq_->room()) [[unlikely]] {
        cq_->mark_overflow(); // the WQE stays posted; nothing in the CQ is lost
        return RxOutcome::dropped(Drop::cq_overflow);
    }
    if (fail_status_ != 0) [[unlikely]]
        return deliver_injected_error(now_ns);
    build_rx_image(frame, parsed, settings_, image_);
    RxOutcome out;
    out.fcs_bad = image_.fcs_bad;
    const Wqe& wqe = ring_.front();
    const auto status = scatter(wqe, ring_.front_sges(), image_, *mrs_, pd_,
                                settings_.end_padding ? settings_.pad_align : 0);
    Cqe& cqe = cq_->next_entry(); // room was checked above
    cqe.wr_id = wqe.wr_id;
    cqe.timestamp_ns = now_ns;
    cqe.qp_num = qp_num_;
    cqe.opcode = IBV_WC_RECV;
    cqe.vendor_err = 0;
    cqe.byte_len = 0;
    cqe.cvlan = 0;
    cqe.wc_flags = 0;
    switch (status) {
    case ScatterStatus::ok:
        cqe.status = IBV_WC_SUCCESS;
        cqe.byte_len = image_.byte_len;
        cqe.cvlan = image_.cvlan;
        if (settings_.ip_csum && net::ip_checksums_ok(frame.payload(), parsed))
            cqe.wc_flags = IBV_WC_IP_CSUM_OK;
        out.fate = Fate::delivered;
        out.byte_len = image_.byte_len;
        break;
    case ScatterStatus::length_error:
        cqe.status = IBV_WC_LOC_LEN_ERR;
        out.drop = Drop::length_error;
        break;
    case ScatterStatus::protection_error:
        // The queue goes to error: flush_in_error_en, set on every RQ mlx5
        // creates (create_rq, create_raw_packet_qp_rq in the kernel's
        // drivers/infiniband/hw/mlx5/qp.c). A length error does not stop it.
        cqe.status = IBV_WC_LOC_PROT_ERR;
        out.drop = Drop::protection_error;
        ready_ = false;
        failed_ = true;
        break;
    }
    ring_.pop();
    cq_->publish();
    return out;
}

} // namespace rdmasim::datapath
