// Completion queues and completion channels (device/README.md, "Completion queues and events").
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
int req_notify_cq(ibv_cq* cq, int solicited_only) noexcept;

ibv_comp_channel* create_comp_channel(ibv_context* context) noexcept;
int destroy_comp_channel(ibv_comp_channel* channel) noexcept; // EBUSY while CQs use it
int get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) noexcept;
void ack_cq_events(ibv_cq* cq, unsigned int nevents) noexcept;

// Engine side, under the port lock: notifications and overflow events.
void cq_after_burst(Cq& cq) noexcept;

} // namespace rdmasim::device
