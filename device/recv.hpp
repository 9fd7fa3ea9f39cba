// Posting receive WQEs: the path WQs (ibv_post_wq_recv) and plain raw-packet
// QPs (ibv_post_recv) share (device/README.md, "Work queues").
#pragma once

#include "device/objects.hpp"

namespace rdmasim::device {

// The WR list into `ring`, in order, for every receive queue (WQ, raw QP, RC/UC/UD
// QP, SRQ): more SGEs than `max_sge` (or a negative count, or no list) is
// EINVAL; `max_post` WQEs already there (or a full ring) is ENOMEM; either
// way *bad_wr names it and the WRs before it stay posted. Zero-length SGEs are
// skipped. The caller holds the queue's post lock.
int post_recv_list(datapath::RecvRing& ring, std::uint32_t max_sge, std::uint32_t max_post,
                   ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;

// Posts the list `wr` to `recv` in order (post_recv_list's checks). A WR with more SGEs than the
// queue's max_sge (or a negative count, or no list) is EINVAL; no room is
// ENOMEM; either way *bad_wr names it and the WRs before it stay posted.
// Zero-length SGEs are skipped. A queue in error flushes what was posted at
// once (IBV_WC_WR_FLUSH_ERR). Then the engine hears of the post. Takes the
// post lock, and the port lock when flushing: call it holding neither.
int post_receive(Device& dev, RecvQueue& recv, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;

} // namespace rdmasim::device
