// Asynchronous events (ibv_get_async_event / ibv_ack_async_event): a queue
// per context, made pollable through the context's async_fd (one byte per
// queued event), and the bookkeeping that keeps an object alive while the
// program holds an event naming it. See device/README.md, "Completion queues
// and events".
#pragma once

#include <pthread.h>

#include "device/objects.hpp"

namespace rdmasim::device {

// Queues an event on a context. Any thread; never blocks (with the fd's pipe
// full the event is lost, as the kernel loses one it cannot allocate).
void raise_async_event(Context& ctx, const ibv_async_event& event) noexcept;

// ibv_get_async_event(3): 0, or -1 with errno (EAGAIN when non-blocking and
// empty). Counts the event in its object's events_reported.
int get_async_event(ibv_context* context, ibv_async_event* event) noexcept;
// ibv_ack_async_event(3): counts the event in its object's events_completed.
void ack_async_event(ibv_async_event* event) noexcept;

// For destroy verbs, once nothing can raise another event for `object` (a
// CQ, WQ or QP): drops the events queued for it that the program has not
// read (ib_uverbs_release_ucq / ib_uverbs_release_uevent). After it, the
// object's events_reported is final.
void forget_async_events(Context& ctx, const void* object) noexcept;

// Blocks until `acked()`, evaluated under `mutex` and re-evaluated at each
// signal of `cond` (the ack verbs signal it): how ibv_cmd_destroy_cq, _wq and
// _qp wait until every event they reported has been acked.
template <class Acked>
void wait_for_acks(pthread_mutex_t& mutex, pthread_cond_t& cond, Acked acked) noexcept {
    pthread_mutex_lock(&mutex);
    while (!acked())
        pthread_cond_wait(&cond, &mutex);
    pthread_mutex_unlock(&mutex);
}

// Blocks until `fd` polls readable, as a read of it would block: 0 then, or
// -1 with errno (EAGAIN when the fd is non-blocking, EINTR, EBADF). For the
// get verbs, which take their event only under their queue's lock.
int wait_readable(int fd) noexcept;

} // namespace rdmasim::device
