// What a librdmacm call answers when nothing implements it: the failure its
// return type reports in rdma-core's librdmacm (-1 or NULL with errno set),
// for librdmacm.so.1 without rdmasim's libibverbs (device/rdmacm/shim.cpp) and
// for the slots of the table not implemented yet (device/rdmacm/ops_table.cpp).
#pragma once

#include <array>
#include <cerrno>
#include <cstdint>
#include <type_traits>

#include "device/abi_guard.hpp"
#include "device/rdmacm/ops.hpp"

namespace rdmasim::rdmacm {

// The failure of an export returning R, errno `err`. Void calls (the
// destroy and free ones) have no way to report one and do nothing.
template <class R> R unavailable(int err) noexcept {
    if constexpr (std::is_void_v<R>) {
        return;
    } else if constexpr (std::is_pointer_v<R>) {
        errno = err;
        return nullptr;
    } else if constexpr (std::is_same_v<R, int>) {
        errno = err;
        return -1;
    } else {
        // rdma_get_src_port, rdma_get_dst_port: port 0, what librdmacm answers
        // for an address it cannot read a port from.
        static_assert(std::is_same_v<R, __be16>, "a librdmacm return type not handled");
        errno = err;
        return 0;
    }
}

template <class Fn> struct enosys_fn;
template <class R, class... A> struct enosys_fn<R (*)(A...)> {
    static R call(A...) noexcept { return unavailable<R>(ENOSYS); }
};

template <class M> struct slot_of;
template <class T> struct slot_of<T rdmasim_rdmacm_ops::*> { using type = T; };

// enosys<&rdmasim_rdmacm_ops::connect>: a function of that slot's type that
// fails with ENOSYS.
template <auto Slot>
inline constexpr typename slot_of<decltype(Slot)>::type enosys =
    enosys_fn<typename slot_of<decltype(Slot)>::type>::call;

// rdma_event_str: the enumerator's name, "UNKNOWN EVENT" for any other value
// (rdma-core's strings). Pure, so it answers even without the table.
inline const char* event_name(rdma_cm_event_type event) noexcept {
    static constexpr std::array<const char*, RDMA_CM_EVENT_TIMEWAIT_EXIT + 1> names = {
        "RDMA_CM_EVENT_ADDR_RESOLVED",   "RDMA_CM_EVENT_ADDR_ERROR",
        "RDMA_CM_EVENT_ROUTE_RESOLVED",  "RDMA_CM_EVENT_ROUTE_ERROR",
        "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
        "RDMA_CM_EVENT_CONNECT_ERROR",   "RDMA_CM_EVENT_UNREACHABLE",
        "RDMA_CM_EVENT_REJECTED",        "RDMA_CM_EVENT_ESTABLISHED",
        "RDMA_CM_EVENT_DISCONNECTED",    "RDMA_CM_EVENT_DEVICE_REMOVAL",
        "RDMA_CM_EVENT_MULTICAST_JOIN",  "RDMA_CM_EVENT_MULTICAST_ERROR",
        "RDMA_CM_EVENT_ADDR_CHANGE",     "RDMA_CM_EVENT_TIMEWAIT_EXIT",
    };
    // Read as an integer: a C caller may pass any int.
    const auto v = device::raw_enum(event);
    return v >= 0 && v < static_cast<std::int64_t>(names.size()) ? names[v] : "UNKNOWN EVENT";
}

} // namespace rdmasim::rdmacm
