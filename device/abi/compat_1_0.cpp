// The pre-1.1 ABI (IBVERBS_1.0, and IBVERBS_1.1's ibv_register_driver): hidden
// versions bound by .symver, listed in parentheses by `objdump -T` as for the
// system library. Binaries that old used other layouts: every call fails.
#include "device/abi/declarations.hpp"
#include "device/abi_guard.hpp"

using namespace rdmasim::device;

// Binds `impl` to the hidden (non-default) version `name@node`, as
// `objdump -T` shows `(node) name` for the system library.
// `node` is a string literal: "IBVERBS_1.0" as a bare token does not survive formatting.
#define RDMASIM_COMPAT_SYMVER(impl, name, node) __asm__(".symver " #impl "," #name "@" node)

namespace {

void* compat_null() noexcept {
    return fail(not_emulated);
}
int compat_errno() noexcept {
    errno = not_emulated;
    return not_emulated;
}
int compat_minus_one() noexcept {
    errno = not_emulated;
    return -1;
}

} // namespace

#define RDMASIM_COMPAT_1_0_PTR(name, ret, ...)                                                     \
    extern "C" ret rdmasim_compat_1_0_##name(__VA_ARGS__) noexcept;                                \
    extern "C" ret rdmasim_compat_1_0_##name(__VA_ARGS__) noexcept {                               \
        return static_cast<ret>(compat_null());                                                    \
    }                                                                                              \
    RDMASIM_COMPAT_SYMVER(rdmasim_compat_1_0_##name, name, "IBVERBS_1.0");

#define RDMASIM_COMPAT_1_0_INT(name, ...)                                                          \
    extern "C" int rdmasim_compat_1_0_##name(__VA_ARGS__) noexcept;                                \
    extern "C" int rdmasim_compat_1_0_##name(__VA_ARGS__) noexcept {                               \
        return compat_errno();                                                                     \
    }                                                                                              \
    RDMASIM_COMPAT_SYMVER(rdmasim_compat_1_0_##name, name, "IBVERBS_1.0");

// Calls whose failure is -1 with errno (event reads).
#define RDMASIM_COMPAT_1_0_NEG(name, ...)                                                          \
    extern "C" int rdmasim_compat_1_0_##name(__VA_ARGS__) noexcept;                                \
    extern "C" int rdmasim_compat_1_0_##name(__VA_ARGS__) noexcept {                               \
        return compat_minus_one();                                                                 \
    }                                                                                              \
    RDMASIM_COMPAT_SYMVER(rdmasim_compat_1_0_##name, name, "IBVERBS_1.0");

#define RDMASIM_COMPAT_1_0_VOID(name, ...)                                                         \
    extern "C" void rdmasim_compat_1_0_##name(__VA_ARGS__) noexcept;                               \
    extern "C" void rdmasim_compat_1_0_##name(__VA_ARGS__) noexcept {}                             \
    RDMASIM_COMPAT_SYMVER(rdmasim_compat_1_0_##name, name, "IBVERBS_1.0");

RDMASIM_COMPAT_1_0_PTR(ibv_get_device_list, ibv_device**, int*)
RDMASIM_COMPAT_1_0_VOID(ibv_free_device_list, ibv_device**)
RDMASIM_COMPAT_1_0_PTR(ibv_get_device_name, const char*, ibv_device*)
RDMASIM_COMPAT_1_0_PTR(ibv_open_device, ibv_context*, ibv_device*)
RDMASIM_COMPAT_1_0_INT(ibv_close_device, ibv_context*)
RDMASIM_COMPAT_1_0_NEG(ibv_get_async_event, ibv_context*, ibv_async_event*)
RDMASIM_COMPAT_1_0_VOID(ibv_ack_async_event, ibv_async_event*)
RDMASIM_COMPAT_1_0_INT(ibv_query_device, ibv_context*, ibv_device_attr*)
RDMASIM_COMPAT_1_0_INT(ibv_query_port, ibv_context*, uint8_t, ibv_port_attr*)
RDMASIM_COMPAT_1_0_INT(ibv_query_gid, ibv_context*, uint8_t, int, ibv_gid*)
RDMASIM_COMPAT_1_0_INT(ibv_query_pkey, ibv_context*, uint8_t, int, __be16*)
RDMASIM_COMPAT_1_0_PTR(ibv_alloc_pd, ibv_pd*, ibv_context*)
RDMASIM_COMPAT_1_0_INT(ibv_dealloc_pd, ibv_pd*)
RDMASIM_COMPAT_1_0_PTR(ibv_reg_mr, ibv_mr*, ibv_pd*, void*, size_t, int)
RDMASIM_COMPAT_1_0_INT(ibv_dereg_mr, ibv_mr*)
RDMASIM_COMPAT_1_0_PTR(ibv_create_cq, ibv_cq*, ibv_context*, int, void*, ibv_comp_channel*, int)
RDMASIM_COMPAT_1_0_INT(ibv_resize_cq, ibv_cq*, int)
RDMASIM_COMPAT_1_0_INT(ibv_destroy_cq, ibv_cq*)
RDMASIM_COMPAT_1_0_NEG(ibv_get_cq_event, ibv_comp_channel*, ibv_cq**, void**)
RDMASIM_COMPAT_1_0_VOID(ibv_ack_cq_events, ibv_cq*, unsigned int)
RDMASIM_COMPAT_1_0_PTR(ibv_create_srq, ibv_srq*, ibv_pd*, ibv_srq_init_attr*)
RDMASIM_COMPAT_1_0_INT(ibv_modify_srq, ibv_srq*, ibv_srq_attr*, int)
RDMASIM_COMPAT_1_0_INT(ibv_query_srq, ibv_srq*, ibv_srq_attr*)
RDMASIM_COMPAT_1_0_INT(ibv_destroy_srq, ibv_srq*)
RDMASIM_COMPAT_1_0_PTR(ibv_create_qp, ibv_qp*, ibv_pd*, ibv_qp_init_attr*)
RDMASIM_COMPAT_1_0_INT(ibv_query_qp, ibv_qp*, ibv_qp_attr*, int, ibv_qp_init_attr*)
RDMASIM_COMPAT_1_0_INT(ibv_modify_qp, ibv_qp*, ibv_qp_attr*, int)
RDMASIM_COMPAT_1_0_INT(ibv_destroy_qp, ibv_qp*)
RDMASIM_COMPAT_1_0_PTR(ibv_create_ah, ibv_ah*, ibv_pd*, ibv_ah_attr*)
RDMASIM_COMPAT_1_0_INT(ibv_destroy_ah, ibv_ah*)
RDMASIM_COMPAT_1_0_INT(ibv_attach_mcast, ibv_qp*, ibv_gid*, uint16_t)
RDMASIM_COMPAT_1_0_INT(ibv_detach_mcast, ibv_qp*, ibv_gid*, uint16_t)

// ibv_get_device_guid@IBVERBS_1.0 returns a GUID: 0 is "none".
extern "C" __be64 rdmasim_compat_1_0_ibv_get_device_guid(ibv_device*) noexcept;
extern "C" __be64 rdmasim_compat_1_0_ibv_get_device_guid(ibv_device*) noexcept {
    errno = not_emulated;
    return 0;
}
RDMASIM_COMPAT_SYMVER(rdmasim_compat_1_0_ibv_get_device_guid, ibv_get_device_guid, "IBVERBS_1.0");

// The 1.1 ABI's provider registration: providers of that era are not loaded.
extern "C" void rdmasim_compat_1_1_ibv_register_driver(const char*, ibv_driver_init_func) noexcept;
extern "C" void rdmasim_compat_1_1_ibv_register_driver(const char*, ibv_driver_init_func) noexcept {
}
RDMASIM_COMPAT_SYMVER(rdmasim_compat_1_1_ibv_register_driver, ibv_register_driver, "IBVERBS_1.1");
