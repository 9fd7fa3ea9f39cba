// Completion channels: ibv_create_comp_channel, ibv_destroy_comp_channel,
// ibv_get_cq_event, ibv_ack_cq_events (device/README.md, "Completion queues
// and events"). cq_notify.cpp fires them.
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <mutex>

#include "device/abi_guard.hpp"
#include "device/async_events.hpp"
#include "device/context.hpp"
#include "device/cq.hpp"

namespace rdmasim::device {

// Takes one fired CQ's token off the channel's eventfd (EFD_SEMAPHORE: one
// per read). Tokens are written and read only under the channel lock, one
// per entry of `fired`, so it is there and the read never blocks, whatever
// the program set on the fd.
void take_channel_token(CompChannel& ch) noexcept {
    std::uint64_t one;
    (void)::read(ch.ibch.fd, &one, sizeof one);
}

ibv_comp_channel* create_comp_channel(ibv_context* context) noexcept {
    return guard_ptr<ibv_comp_channel>([&]() -> ibv_comp_channel* {
        if (context == nullptr) return fail<ibv_comp_channel>(EINVAL);
        const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
        if (fd < 0) return nullptr; // errno from eventfd
        auto ch = std::make_unique<CompChannel>();
        ch->ibch.context = context;
        ch->ibch.fd = fd;
        ch->ibch.refcnt = 0;
        from_verbs(context)->live_objects.fetch_add(1);
        return &ch.release()->ibch;
    });
}

int destroy_comp_channel(ibv_comp_channel* channel) noexcept {
    if (channel == nullptr) return EINVAL;
    CompChannel* ch = from_verbs(channel);
    if (ch->cqs.load() != 0) return EBUSY;
    ::close(ch->ibch.fd);
    object_destroyed(*from_verbs(ch->ibch.context));
    delete ch;
    return 0;
}

int get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) noexcept {
    if (channel == nullptr || cq == nullptr || cq_context == nullptr) {
        errno = EINVAL;
        return -1;
    }
    CompChannel& ch = *from_verbs(channel);
    for (;;) {
        {
            std::lock_guard lock(ch.lock);
            if (!ch.fired.empty()) {
                take_channel_token(ch);
                Cq* c = ch.fired.front();
                ch.fired.pop_front();
                ++c->comp_events_reported; // ibv_destroy_cq now waits for its ack
                *cq = to_verbs_cq(c);
                *cq_context = c->cqx.cq_context;
                return 0;
            }
        }
        // Empty: wait as a read of the fd would (or EAGAIN), then look again:
        // another thread may take the event first.
        if (wait_readable(ch.ibch.fd) != 0) return -1;
    }
}

void ack_cq_events(ibv_cq* c, unsigned int nevents) noexcept {
    if (c == nullptr) return;
    pthread_mutex_lock(&c->mutex);
    c->comp_events_completed += nevents;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->mutex);
}

} // namespace rdmasim::device
