// Event channels (device/README.md, "Connection manager"): an eventfd in
// semaphore mode is the channel's fd, counting the queued events, so that
// poll, epoll and O_NONBLOCK work on it as on the kernel's rdma_cm file,
// and a thread blocked reading it stays blocked when another closes it.
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <new>

#include "device/rdmacm/api.hpp"
#include "device/rdmacm/cm_id.hpp"

namespace rdmasim::rdmacm {

void post_event(Channel& channel, EventRec* rec) noexcept {
    {
        std::lock_guard lock(channel.lock);
        channel.queue.push_back(rec); // a deque of pointers: bad_alloc only when memory is gone
    }
    const std::uint64_t one = 1;
    while (::write(channel.ch.fd, &one, sizeof one) < 0 && errno == EINTR) {
    }
}

EventRec* new_event(CmId& id, rdma_cm_event_type type, int status) noexcept {
    auto* rec = new (std::nothrow) EventRec;
    if (rec == nullptr) return nullptr;
    rec->owner = &id;
    rec->ev.id = &id.id();
    rec->ev.event = type;
    rec->ev.status = status;
    return rec;
}

rdma_event_channel* create_event_channel() noexcept {
    auto* c = new (std::nothrow) Channel;
    if (c == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    c->ch.fd = ::eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE); // each read takes one event
    if (c->ch.fd < 0) {
        const int err = errno;
        delete c;
        errno = err;
        return nullptr;
    }
    return &c->ch;
}

void destroy_event_channel(rdma_event_channel* channel) noexcept {
    if (channel == nullptr) return;
    Channel* c = from_cm(channel);
    {
        std::lock_guard lock(c->lock);
        for (EventRec* rec : c->queue)
            delete rec;
        c->queue.clear();
    }
    ::close(c->ch.fd);
    delete c;
}

namespace {

// Takes the next event off `c`: blocks on the fd unless the program made
// it O_NONBLOCK. A count whose event went with its id (rdma_destroy_id
// drops what is queued for it) is passed over.
EventRec* take(Channel& c) noexcept {
    for (;;) {
        std::uint64_t one;
        const ssize_t n = ::read(c.ch.fd, &one, sizeof one);
        if (n < 0 && errno == EINTR) continue;
        if (n != sizeof one) {
            if (n == 0) errno = ENODATA;
            return nullptr; // errno: EAGAIN for a non-blocking channel
        }
        std::lock_guard lock(c.lock);
        if (c.queue.empty()) continue;
        EventRec* rec = c.queue.front();
        c.queue.pop_front();
        return rec;
    }
}

} // namespace

int get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) noexcept {
    if (channel == nullptr || event == nullptr) return fail(EINVAL);
    for (;;) {
        EventRec* rec = take(*from_cm(channel));
        if (rec == nullptr) return -1;
        if (rec->conn_response && !process_conn_response(*rec)) continue; // consumed
        if (rec->join) process_join(*rec);
        {
            std::lock_guard lock(rec->owner->gate);
            ++rec->owner->events_out;
        }
        *event = &rec->ev;
        return 0;
    }
}

int ack_cm_event(rdma_cm_event* event) noexcept {
    if (event == nullptr) return fail(EINVAL);
    auto* rec = reinterpret_cast<EventRec*>(event); // ev is EventRec's first member
    CmId* owner = rec->owner;
    delete rec;
    {
        std::lock_guard lock(owner->gate);
        --owner->events_out;
    }
    owner->acked.notify_all();
    return 0;
}

int complete(CmId& id) noexcept {
    if (id.id().event != nullptr) {
        (void)ack_cm_event(id.id().event);
        id.id().event = nullptr;
    }
    if (get_cm_event(id.id().channel, &id.id().event) != 0) return -1;
    const rdma_cm_event& ev = *id.id().event;
    if (ev.status == 0) return 0;
    if (ev.event == RDMA_CM_EVENT_REJECTED) return fail(ECONNREFUSED);
    return fail(ev.status < 0 ? -ev.status : ev.status);
}

} // namespace rdmasim::rdmacm
