#include "device/async_events.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>

namespace rdmasim::device {

namespace {

enum class Names : std::uint8_t { nothing, cq, wq, qp, srq };

// What kind of object an event's element names.
Names names(ibv_event_type type) noexcept {
    switch (type) {
    case IBV_EVENT_CQ_ERR:
        return Names::cq;
    case IBV_EVENT_WQ_FATAL:
        return Names::wq;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        return Names::qp;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        return Names::srq;
    default:
        return Names::nothing; // port and device events
    }
}

const void* object_of(const ibv_async_event& event) noexcept {
    switch (names(event.event_type)) {
    case Names::cq:
        return event.element.cq;
    case Names::wq:
        return event.element.wq;
    case Names::qp:
        return event.element.qp;
    case Names::srq:
        return event.element.srq;
    case Names::nothing:
        break;
    }
    return nullptr;
}

// The event is handed to the program: its object must now wait for the ack.
// Caller holds the context's event lock.
void count_reported(const ibv_async_event& event) noexcept {
    switch (names(event.event_type)) {
    case Names::cq:
        ++from_verbs(event.element.cq)->async_events_reported;
        break;
    case Names::wq:
        ++from_verbs(event.element.wq)->events_reported;
        break;
    case Names::qp:
        ++from_verbs(event.element.qp)->events_reported;
        break;
    case Names::srq:
        ++from_verbs(event.element.srq)->events_reported;
        break;
    case Names::nothing:
        break;
    }
}

// Takes one queued event's byte off the pipe. Bytes are written and read
// only under the event lock, one per queued event, so it is there and the
// read never blocks, whatever the program set on the fd.
void take_byte(const AsyncEvents& events) noexcept {
    char byte;
    (void)::read(events.read_fd, &byte, 1);
}

} // namespace

void raise_async_event(Context& ctx, const ibv_async_event& event) noexcept {
    std::lock_guard lock(ctx.events.lock);
    // A full pipe would block the raiser (the engine, under the port lock):
    // write only when the byte fits. Only raisers write, under this lock.
    pollfd room{ctx.events.write_fd, POLLOUT, 0};
    if (::poll(&room, 1, 0) != 1 || !(room.revents & POLLOUT)) return;
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
    AsyncEvents& events = from_verbs(context)->events;
    for (;;) {
        {
            std::lock_guard lock(events.lock);
            if (!events.queue.empty()) {
                take_byte(events);
                *event = events.queue.front();
                events.queue.pop_front();
                count_reported(*event);
                return 0;
            }
        }
        // Empty: wait as a read of the fd would (or EAGAIN), then look again:
        // another thread may take the event first.
        if (wait_readable(events.read_fd) != 0) return -1;
    }
}

void ack_async_event(ibv_async_event* event) noexcept {
    if (event == nullptr) return;
    // The object is alive: its destroy verb waits for this ack.
    switch (names(event->event_type)) {
    case Names::cq: {
        ibv_cq* cq = event->element.cq;
        pthread_mutex_lock(&cq->mutex);
        ++cq->async_events_completed;
        pthread_cond_signal(&cq->cond);
        pthread_mutex_unlock(&cq->mutex);
        break;
    }
    case Names::wq: {
        ibv_wq* wq = event->element.wq;
        pthread_mutex_lock(&wq->mutex);
        ++wq->events_completed;
        pthread_cond_signal(&wq->cond);
        pthread_mutex_unlock(&wq->mutex);
        break;
    }
    case Names::qp: {
        ibv_qp* qp = event->element.qp;
        pthread_mutex_lock(&qp->mutex);
        ++qp->events_completed;
        pthread_cond_signal(&qp->cond);
        pthread_mutex_unlock(&qp->mutex);
        break;
    }
    case Names::srq: {
        ibv_srq* srq = event->element.srq;
        pthread_mutex_lock(&srq->mutex);
        ++srq->events_completed;
        pthread_cond_signal(&srq->cond);
        pthread_mutex_unlock(&srq->mutex);
        break;
    }
    case Names::nothing:
        break;
    }
}

void forget_async_events(Context& ctx, const void* object) noexcept {
    std::lock_guard lock(ctx.events.lock);
    auto& queue = ctx.events.queue;
    for (auto it = queue.begin(); it != queue.end();) {
        if (object_of(*it) == object) {
            take_byte(ctx.events);
            it = queue.erase(it);
        } else {
            ++it;
        }
    }
}

int wait_readable(int fd) noexcept {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0) return -1; // errno from fcntl (EBADF)
    if (flags & O_NONBLOCK) {
        errno = EAGAIN;
        return -1;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, -1) < 0) return -1; // EINTR: as the blocking read would
    if (p.revents & POLLIN) return 0;
    errno = EBADF; // POLLERR, POLLHUP, POLLNVAL: the fd is gone
    return -1;
}

} // namespace rdmasim::device
