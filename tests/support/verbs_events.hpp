// Reading a context's async events and a channel's fd as a test must: without
// blocking, so that a missing event fails the test instead of hanging it.
// readable() asks poll(2) with no wait; next_async_event() makes the async
// fd non-blocking and takes (and acks) the next event, if any;
// no_async_event() says the queue is empty as a program would find it, a
// non-blocking read failing with EAGAIN.
#pragma once

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>

#include <catch2/catch.hpp>

#include <cerrno>
#include <optional>

namespace rdmasim::test {

// `fd` polls readable now.
inline bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

inline void set_nonblocking(int fd) {
    const int flags = ::fcntl(fd, F_GETFL);
    REQUIRE(flags >= 0);
    REQUIRE(::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0);
}

// The next queued async event, without blocking (acked: the copy stays
// readable); nullopt when none.
inline std::optional<ibv_async_event> next_async_event(ibv_context* ctx) {
    const int fl = ::fcntl(ctx->async_fd, F_GETFL);
    REQUIRE(::fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) == 0);
    ibv_async_event ev{};
    if (ibv_get_async_event(ctx, &ev) != 0) return std::nullopt;
    ibv_ack_async_event(&ev);
    return ev;
}

// No async event is queued on the context: a non-blocking read says EAGAIN.
// An event that comes anyway is acked, as a program would.
inline bool no_async_event(ibv_context* ctx) {
    const int fl = ::fcntl(ctx->async_fd, F_GETFL);
    REQUIRE(::fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) == 0);
    ibv_async_event ev{};
    errno = 0;
    const int rc = ibv_get_async_event(ctx, &ev);
    if (rc == 0) ibv_ack_async_event(&ev);
    return rc == -1 && errno == EAGAIN;
}

} // namespace rdmasim::test
