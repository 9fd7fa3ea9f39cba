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

} // namespace

int getaddrinfo(const char* node, const char* service, const rdma_addrinfo* hints,
                rdma_addrinfo** res) noexcept {
    if (res == nullptr || (node == nullptr && service == nullptr)) return fail(EINVAL);
    if (hints != nullptr && hints->ai_family != 0 && hints->ai_family != AF_INET)
        return fail(EAFNOSUPPORT);
    const bool passive = hints != nullptr && (hints->ai_flags & RAI_PASSIVE);
    const bool numeric = hints != nullptr && (hints->ai_flags & RAI_NUMERICHOST);
    sockaddr_in sin{};
    if (const int rc = lookup(node, service, passive, numeric, sin); rc != 0) {
        errno = rc == EAI_SYSTEM ? errno : ENODEV;
        return rc; // librdmacm passes getaddrinfo's EAI_* code on
    }
    auto* ai = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
    if (ai == nullptr) return fail(ENOMEM);
    ai->ai_flags = hints ? hints->ai_flags : 0;
    ai->ai_family = AF_INET;
    ai->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
    ai->ai_qp_type = hints && hints->ai_qp_type         ? hints->ai_qp_type
                     : ai->ai_port_space == RDMA_PS_UDP ? IBV_QPT_UD
                                                        : IBV_QPT_RC;
    sockaddr*& slot = passive ? ai->ai_src_addr : ai->ai_dst_addr;
    slot = copy_addr(reinterpret_cast<sockaddr*>(&sin), sizeof sin);
    (passive ? ai->ai_src_len : ai->ai_dst_len) = sizeof sin;
    if (!passive && hints != nullptr && hints->ai_src_addr != nullptr) {
        ai->ai_src_addr = copy_addr(hints->ai_src_addr, hints->ai_src_len);
        ai->ai_src_len = hints->ai_src_len;
    }
    if (slot == nullptr) {
        freeaddrinfo(ai);
        return fail(ENOMEM);
    }
    if (node != nullptr) {
        char*& name = passive ? ai->ai_src_canonname : ai->ai_dst_canonname;
        name = ::strdup(node);
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
