#include "device/async_events.hpp"

#include <unistd.h>

#include <mutex>

namespace rdmasim::device {

void raise_async_event(Context& ctx, const ibv_async_event& event) noexcept {
    std::lock_guard lock(ctx.events.lock);
    try {
        ctx.events.queue.push_back(event);
    } catch (...) {
        return; // out of memory: the event is lost, the program is not harmed
    }
    const char byte = 1;
    if (::write(ctx.events.write_fd, &byte, 1) != 1) ctx.events.queue.pop_back();
}

int get_async_event(ibv_context* context, ibv_async_event* event) noexcept {
    if (context == nullptr || event == nullptr) {
        errno = EINVAL;
        return -1;
    }
    Context& ctx = *from_verbs(context);
    char byte;
    if (::read(ctx.events.read_fd, &byte, 1) != 1) return -1; // EAGAIN when non-blocking
    std::lock_guard lock(ctx.events.lock);
    if (ctx.events.queue.empty()) {
        errno = EAGAIN;
        return -1;
    }
    *event = ctx.events.queue.front();
    ctx.events.queue.pop_front();
    return 0;
}

void ack_async_event(ibv_async_event* event) noexcept {
    if (event == nullptr) return;
    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR: {
        ibv_cq* cq = event->element.cq;
        pthread_mutex_lock(&cq->mutex);
        ++cq->async_events_completed;
        pthread_cond_signal(&cq->cond);
        pthread_mutex_unlock(&cq->mutex);
        break;
    }
    case IBV_EVENT_WQ_FATAL: {
        ibv_wq* wq = event->element.wq;
        pthread_mutex_lock(&wq->mutex);
        ++wq->events_completed;
        pthread_cond_signal(&wq->cond);
        pthread_mutex_unlock(&wq->mutex);
        break;
    }
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED: {
        ibv_qp* qp = event->element.qp;
        pthread_mutex_lock(&qp->mutex);
        ++qp->events_completed;
        pthread_cond_signal(&qp->cond);
        pthread_mutex_unlock(&qp->mutex);
        break;
    }
    default:
        break;
    }
}

} // namespace rdmasim::device
