// The rsocket exports of librdmacm.so.1 (<rdma/rsocket.h>): rsockets are not
// emulated. Each call fails with ENOSYS the way its return type reports an
// error (-1; riomap's off_t -1; riowrite's size_t -1), and the first one
// says so on stderr, once per process (README.md, "Limits").
#include <atomic>
#include <cerrno>
#include <cstdio>

#include <rdma/rsocket.h>

namespace {

std::atomic_flag said; // clear until the first rsocket call

template <class R> R not_emulated(const char* name) noexcept {
    if (!said.test_and_set()) {
        std::fprintf(stderr, "rdmasim: rsockets are not emulated (%s): see README.md, \"Limits\"\n",
                     name);
    }
    errno = ENOSYS;
    return static_cast<R>(-1);
}

} // namespace

extern "C" {

int rsocket(int, int, int) {
    return not_emulated<int>("rsocket");
}
int rbind(int, const struct sockaddr*, socklen_t) {
    return not_emulated<int>("rbind");
}
int rlisten(int, int) {
    return not_emulated<int>("rlisten");
}
int raccept(int, struct sockaddr*, socklen_t*) {
    return not_emulated<int>("raccept");
}
int rconnect(int, const struct sockaddr*, socklen_t) {
    return not_emulated<int>("rconnect");
}
int rshutdown(int, int) {
    return not_emulated<int>("rshutdown");
}
int rclose(int) {
    return not_emulated<int>("rclose");
}

ssize_t rrecv(int, void*, size_t, int) {
    return not_emulated<ssize_t>("rrecv");
}
ssize_t rrecvfrom(int, void*, size_t, int, struct sockaddr*, socklen_t*) {
    return not_emulated<ssize_t>("rrecvfrom");
}
ssize_t rrecvmsg(int, struct msghdr*, int) {
    return not_emulated<ssize_t>("rrecvmsg");
}
ssize_t rsend(int, const void*, size_t, int) {
    return not_emulated<ssize_t>("rsend");
}
ssize_t rsendto(int, const void*, size_t, int, const struct sockaddr*, socklen_t) {
    return not_emulated<ssize_t>("rsendto");
}
ssize_t rsendmsg(int, const struct msghdr*, int) {
    return not_emulated<ssize_t>("rsendmsg");
}
ssize_t rread(int, void*, size_t) {
    return not_emulated<ssize_t>("rread");
}
ssize_t rreadv(int, const struct iovec*, int) {
    return not_emulated<ssize_t>("rreadv");
}
ssize_t rwrite(int, const void*, size_t) {
    return not_emulated<ssize_t>("rwrite");
}
ssize_t rwritev(int, const struct iovec*, int) {
    return not_emulated<ssize_t>("rwritev");
}

int rpoll(struct pollfd*, nfds_t, int) {
    return not_emulated<int>("rpoll");
}
int rselect(int, fd_set*, fd_set*, fd_set*, struct timeval*) {
    return not_emulated<int>("rselect");
}

int rgetpeername(int, struct sockaddr*, socklen_t*) {
    return not_emulated<int>("rgetpeername");
}
int rgetsockname(int, struct sockaddr*, socklen_t*) {
    return not_emulated<int>("rgetsockname");
}
int rsetsockopt(int, int, int, const void*, socklen_t) {
    return not_emulated<int>("rsetsockopt");
}
int rgetsockopt(int, int, int, void*, socklen_t*) {
    return not_emulated<int>("rgetsockopt");
}
// The variadic argument is never read.
int rfcntl(int, int, ...) {
    return not_emulated<int>("rfcntl");
}

off_t riomap(int, void*, size_t, int, int, off_t) {
    return not_emulated<off_t>("riomap");
}
int riounmap(int, void*, size_t) {
    return not_emulated<int>("riounmap");
}
size_t riowrite(int, const void*, size_t, off_t, int) {
    return not_emulated<size_t>("riowrite");
}

} // extern "C"
