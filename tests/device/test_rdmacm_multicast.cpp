// rdma_join_multicast, rdma_join_multicast_ex and rdma_leave_multicast
// (device/README.md, "Connection manager", multicast), called as
// librdmacm.so.1 forwards them, on synchronous ids: the kernel's checks, the
// MULTICAST_JOIN event's address handle, the id's QP attached when the
// event is read and detached on leave; a send-only join attaches nothing.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "device/rdmacm/api.hpp"
#include "tests/support/sim_fixture.hpp"

using namespace rdmasim;
namespace cm = rdmasim::rdmacm;

namespace {

sockaddr_in ipv4(const net::Ipv4Address& ip) {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    std::memcpy(&sin.sin_addr, ip.data(), 4);
    return sin;
}

sockaddr* sa(sockaddr_in& sin) {
    return reinterpret_cast<sockaddr*>(&sin);
}

net::Gid group_of(const sockaddr_in& sin) {
    return net::ipv4_mapped_gid(reinterpret_cast<const std::uint8_t*>(&sin.sin_addr));
}

// A synchronous id of `ps` bound to the device's address.
rdma_cm_id* bound_id(test::SimFixture& fx, rdma_port_space ps) {
    rdma_cm_id* id = nullptr;
    REQUIRE(cm::create_id(nullptr, &id, nullptr, ps) == 0);
    sockaddr_in own = ipv4(fx.device().identity.ipv4);
    REQUIRE(cm::bind_addr(id, sa(own)) == 0);
    return id;
}

// bound_id with a UD QP (rdma_create_qp).
rdma_cm_id* ud_id(test::SimFixture& fx) {
    rdma_cm_id* id = bound_id(fx, RDMA_PS_UDP);
    ibv_qp_init_attr qa{};
    qa.qp_type = IBV_QPT_UD;
    qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    REQUIRE(cm::create_qp(id, nullptr, &qa) == 0);
    return id;
}

std::size_t members(test::SimFixture& fx, const net::Gid& g) {
    std::lock_guard lock(fx.device().port.mutex());
    return fx.device().port.roce().mcast().members(g).size();
}

} // namespace

TEST_CASE("rdma_join_multicast on RoCE: the join event at once, the QP attached as it is read",
          "[device][mcast][rdmacm]") {
    test::SimFixture fx;
    sockaddr_in group = ipv4({239, 1, 2, 3});
    int ctx_tag = 0;

    SECTION("checks: an unbound id, a TCP id, a zero or IPv6 group, bad join flags") {
        rdma_cm_id* idle = nullptr;
        REQUIRE(cm::create_id(nullptr, &idle, nullptr, RDMA_PS_UDP) == 0);
        CHECK(cm::join_multicast(idle, sa(group), nullptr) == -1);
        CHECK(errno == EINVAL); // neither bound to an address nor resolved
        rdma_cm_id* tcp = bound_id(fx, RDMA_PS_TCP);
        CHECK(cm::join_multicast(tcp, sa(group), nullptr) == -1);
        CHECK(errno == EINVAL); // not UD
        rdma_cm_id* id = bound_id(fx, RDMA_PS_UDP);
        sockaddr_in zero = ipv4({0, 0, 0, 0});
        CHECK(cm::join_multicast(id, sa(zero), nullptr) == -1);
        CHECK(errno == EINVAL);
        sockaddr_in6 v6{};
        v6.sin6_family = AF_INET6;
        v6.sin6_addr.s6_addr[0] = 0xff;
        CHECK(cm::join_multicast(id, reinterpret_cast<sockaddr*>(&v6), nullptr) == -1);
        CHECK(errno == 524); // the kernel's ENOTSUPP on a RoCE v2 port
        rdma_cm_join_mc_attr_ex ex{};
        ex.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS;
        ex.addr = sa(group);
        CHECK(cm::join_multicast_ex(id, &ex, nullptr) == -1);
        CHECK(errno == EINVAL); // no join flags
        ex.comp_mask |= RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
        ex.join_flags = RDMA_MC_JOIN_FLAG_RESERVED;
        CHECK(cm::join_multicast_ex(id, &ex, nullptr) == -1);
        CHECK(errno == EINVAL);
        CHECK(cm::leave_multicast(id, sa(group)) == -1);
        CHECK(errno == EADDRNOTAVAIL); // never joined
        for (rdma_cm_id* i : {idle, tcp, id})
            CHECK(cm::destroy_id(i) == 0);
    }

    SECTION("a full member: MULTICAST_JOIN with the group's AH; attached, then detached on leave") {
        rdma_cm_id* id = ud_id(fx);
        REQUIRE(cm::join_multicast(id, sa(group), &ctx_tag) == 0);
        const rdma_cm_event& ev = *id->event;
        CHECK(ev.event == RDMA_CM_EVENT_MULTICAST_JOIN);
        CHECK(ev.status == 0);
        const rdma_ud_param& ud = ev.param.ud;
        CHECK(ud.private_data == &ctx_tag);
        CHECK(ud.qp_num == 0xffffff);
        CHECK(ud.qkey == 0x01234567);
        CHECK(ud.ah_attr.is_global == 1);
        CHECK(ud.ah_attr.grh.sgid_index == 0);
        CHECK(ud.ah_attr.grh.hop_limit == 64);
        const net::Gid g = group_of(group);
        CHECK(std::memcmp(ud.ah_attr.grh.dgid.raw, g.data(), 16) == 0);
        CHECK(members(fx, g) == 1);
        ibv_ah* ah = ibv_create_ah(id->pd, const_cast<ibv_ah_attr*>(&ud.ah_attr)); // as mckey does
        CHECK(ah != nullptr);
        if (ah) CHECK(ibv_destroy_ah(ah) == 0);
        CHECK(cm::leave_multicast(id, sa(group)) == 0);
        CHECK(members(fx, g) == 0);
        CHECK(cm::leave_multicast(id, sa(group)) == -1);
        CHECK(errno == EADDRNOTAVAIL);
        cm::destroy_qp(id);
        CHECK(cm::destroy_id(id) == 0);
    }

    SECTION("a send-only full member: joined, never attached") {
        rdma_cm_id* id = ud_id(fx);
        rdma_cm_join_mc_attr_ex ex{};
        ex.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
        ex.addr = sa(group);
        ex.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
        REQUIRE(cm::join_multicast_ex(id, &ex, nullptr) == 0);
        CHECK(id->event->event == RDMA_CM_EVENT_MULTICAST_JOIN);
        CHECK(members(fx, group_of(group)) == 0);
        CHECK(cm::leave_multicast(id, sa(group)) == 0);
        cm::destroy_qp(id);
        CHECK(cm::destroy_id(id) == 0);
    }
}
