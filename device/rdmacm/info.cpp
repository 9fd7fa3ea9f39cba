// rdma_event_str and rdma_getaddrinfo (device/README.md, "Connection
// manager"): names resolved by the C library's getaddrinfo, IPv4 only.
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "device/rdmacm/api.hpp"
#include "device/rdmacm/cm_id.hpp"

namespace rdmasim::rdmacm {

namespace {

sockaddr* copy_addr(const sockaddr* a, socklen_t len) noexcept {
    auto* out = static_cast<sockaddr*>(std::calloc(1, sizeof(sockaddr_storage)));
    if (out != nullptr) std::memcpy(out, a, std::min<std::size_t>(len, sizeof(sockaddr_storage)));
    return out;
}

// The first IPv4 address of `node`:`service` (NULL node: the wildcard when passive).
int lookup(const char* node, const char* service, bool passive, bool numeric,
           sockaddr_in& out) noexcept {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = (passive ? AI_PASSIVE : 0) | (numeric ? AI_NUMERICHOST : 0);
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(node, service, &hints, &res);
    if (rc != 0) return rc;
    std::memcpy(&out, res->ai_addr, sizeof out);
    ::freeaddrinfo(res);
    return 0;
}

// Copies `len` bytes of `addr` into `slot` (a fresh allocation); false: no memory.
bool copy_into(sockaddr*& slot, socklen_t& slot_len, const sockaddr* addr, socklen_t len) noexcept {
    slot = copy_addr(addr, len);
    slot_len = len;
    return slot != nullptr;
}

// The node/service form: the name's first IPv4 address, the source when passive.
int from_names(const char* node, const char* service, bool passive, bool numeric,
               rdma_addrinfo& ai) noexcept {
    sockaddr_in sin{};
    if (const int rc = lookup(node, service, passive, numeric, sin); rc != 0) {
        errno = rc == EAI_SYSTEM ? errno : ENODEV;
        return rc; // librdmacm passes getaddrinfo's EAI_* code on
    }
    const auto* a = reinterpret_cast<const sockaddr*>(&sin);
    const bool ok = passive ? copy_into(ai.ai_src_addr, ai.ai_src_len, a, sizeof sin)
                            : copy_into(ai.ai_dst_addr, ai.ai_dst_len, a, sizeof sin);
    if (!ok) return fail(ENOMEM);
    if (node != nullptr) (passive ? ai.ai_src_canonname : ai.ai_dst_canonname) = ::strdup(node);
    return 0;
}

} // namespace

// As librdmacm: from `node`/`service`, or with both NULL from the addresses
// in `hints`; a source address in `hints` is kept when the names gave none.
int getaddrinfo(const char* node, const char* service, const rdma_addrinfo* hints,
                rdma_addrinfo** res) noexcept {
    if (res == nullptr || (node == nullptr && service == nullptr && hints == nullptr))
        return fail(EINVAL);
    const rdma_addrinfo none{};
    const rdma_addrinfo& h = hints ? *hints : none;
    if (h.ai_family != 0 && h.ai_family != AF_INET) return fail(EAFNOSUPPORT);
    const bool passive = h.ai_flags & RAI_PASSIVE;
    auto* ai = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
    if (ai == nullptr) return fail(ENOMEM);
    ai->ai_flags = h.ai_flags;
    ai->ai_family = AF_INET;
    ai->ai_port_space = h.ai_port_space ? h.ai_port_space : RDMA_PS_TCP;
    ai->ai_qp_type = h.ai_qp_type                       ? h.ai_qp_type
                     : ai->ai_port_space == RDMA_PS_UDP ? IBV_QPT_UD
                                                        : IBV_QPT_RC;
    int rc = 0;
    if (node != nullptr || service != nullptr)
        rc = from_names(node, service, passive, h.ai_flags & RAI_NUMERICHOST, *ai);
    else if (h.ai_dst_len != 0 && h.ai_dst_addr != nullptr &&
             !copy_into(ai->ai_dst_addr, ai->ai_dst_len, h.ai_dst_addr, h.ai_dst_len))
        rc = fail(ENOMEM);
    if (rc == 0 && ai->ai_src_len == 0 && h.ai_src_len != 0 && h.ai_src_addr != nullptr &&
        !copy_into(ai->ai_src_addr, ai->ai_src_len, h.ai_src_addr, h.ai_src_len))
        rc = fail(ENOMEM);
    if (rc != 0) {
        const int saved = errno;
        freeaddrinfo(ai);
        errno = saved;
        return rc;
    }
    *res = ai;
    return 0;
}

void freeaddrinfo(rdma_addrinfo* res) noexcept {
    while (res != nullptr) {
        rdma_addrinfo* next = res->ai_next;
        std::free(res->ai_src_addr);
        std::free(res->ai_dst_addr);
        std::free(res->ai_src_canonname);
        std::free(res->ai_dst_canonname);
        std::free(res->ai_route);
        std::free(res->ai_connect);
        std::free(res);
        res = next;
    }
}

} // namespace rdmasim::rdmacm
