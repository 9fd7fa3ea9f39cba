// Completion queues (cq.cpp, cq_notify.cpp) and completion channels
// (comp_channel.cpp); device/README.md, "Completion queues and events".
#pragma once

#include "device/objects.hpp"

namespace rdmasim::device {

// Plain CQ (the exported ibv_create_cq). NULL + errno on failure.
ibv_cq* create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                  int comp_vector) noexcept;
// The verbs_context.create_cq_ex op.
ibv_cq_ex* create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr) noexcept;
// Both kinds. EBUSY while a WQ or QP uses it.
int destroy_cq(ibv_cq* cq) noexcept;
int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc) noexcept;
// ibv_resize_cq(3): 0, or EINVAL (a size out of range, or below the completions waiting).
int resize_cq(ibv_cq* cq, int cqe) noexcept;
int req_notify_cq(ibv_cq* cq, int solicited_only) noexcept;

ibv_comp_channel* create_comp_channel(ibv_context* context) noexcept;
int destroy_comp_channel(ibv_comp_channel* channel) noexcept; // EBUSY while CQs use it
int get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) noexcept;
void ack_cq_events(ibv_cq* cq, unsigned int nevents) noexcept;
// Takes one fired CQ's token off the channel's eventfd; channel lock held
// (device/comp_channel.cpp).
void take_channel_token(CompChannel& ch) noexcept;

// Engine side, under the port lock: notifications and overflow events.
void cq_after_burst(Cq& cq) noexcept;

// The consumer side of a CQ, held to purge it (device/README.md, "Locking"):
// its poll lock, unless the calling thread holds that already, between its
// own ibv_start_poll and ibv_end_poll; then the entry exposed to it stays,
// since it is handed out already. Lock order: take it before the port lock,
// and hold one at a time (a program thread may hold several poll locks).
class CqConsumer {
public:
    explicit CqConsumer(Cq& cq) noexcept;
    ~CqConsumer();
    CqConsumer(const CqConsumer&) = delete;
    CqConsumer& operator=(const CqConsumer&) = delete;

    // Removes the CQ's completions of `qp_num` (a WQ's or a QP's number) that
    // no poll has handed out, keeping the others in order (mlx5's
    // __mlx5_cq_clean). Caller also holds the port lock (the producer side).
    std::uint32_t purge(std::uint32_t qp_num) noexcept;

private:
    Cq& cq_;
    bool locked_;
};

// The whole purge on its own: the consumer side, then the port lock. For
// a queue that can complete nothing more into `cq` (in RESET, or detached).
void purge_completions(Device& dev, Cq& cq, std::uint32_t qp_num) noexcept;

} // namespace rdmasim::device
