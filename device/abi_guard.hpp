// A C entry point (exported function or ops-table slot) whose body may throw
// (it allocates, or calls what may) runs it through one of these: no
// exception crosses into the program's C code; std::bad_alloc becomes
// ENOMEM, anything else EIO. Not every entry point is guarded: the polling
// and event paths that allocate nothing (device/cq.cpp: poll_cq,
// start_poll, next_poll, end_poll, get_cq_event, ack_cq_events) are plain
// noexcept functions, so an exception there would end the program in
// std::terminate rather than become an errno.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>

namespace rdmasim::device {

// For calls that return 0 or a positive errno.
template <class F> int guard_errno(F&& body) noexcept {
    try {
        return body();
    } catch (const std::bad_alloc&) {
        return ENOMEM;
    } catch (...) {
        return EIO;
    }
}

// For calls that return a pointer, or NULL with errno set.
template <class T, class F> T* guard_ptr(F&& body) noexcept {
    try {
        return body();
    } catch (const std::bad_alloc&) {
        errno = ENOMEM;
    } catch (...) {
        errno = EIO;
    }
    return nullptr;
}

// The integer a C caller stored in an enum field. C allows any int there,
// while loading a value outside the enum's range as the C++ type is undefined.
template <class E> std::int64_t raw_enum(const E& field) noexcept {
    std::underlying_type_t<E> v;
    std::memcpy(&v, &field, sizeof v);
    return static_cast<std::int64_t>(v);
}

// Sets errno and returns NULL: the libibverbs way for pointer-returning calls.
template <class T = void> inline T* fail(int err) noexcept {
    errno = err;
    return nullptr;
}

} // namespace rdmasim::device
