// Posting receive WQEs: the path WQs (ibv_post_wq_recv) and plain raw-packet
// QPs (ibv_post_recv) share (device/README.md, "Work queues").
#pragma once

#include "device/objects.hpp"

namespace rdmasim::device {

// Posts the list `wr` to `recv` in order. A WR with more SGEs than the
// queue's max_sge (or a negative count, or no list) is EINVAL; no room is
// ENOMEM; either way *bad_wr names it and the WRs before it stay posted.
// Zero-length SGEs are skipped. A queue in error flushes what was posted at
// once (IBV_WC_WR_FLUSH_ERR). Then the engine hears of the post. Takes the
// post lock, and the port lock when flushing: call it holding neither.
int post_receive(Device& dev, RecvQueue& recv, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;

} // namespace rdmasim::device
