// FamilyBus::owner (sim/README.md, "Fork"): which member of a forked family a
// frame to the device's own address belongs to. A RoCE packet goes to its
// destination QP's member; a CM REQ or SIDR_REQ to the member the family's
// listener table names for its service ID, else to the member asking; any
// other CM MAD to its communication ID's member; a datagram to a group to
// every member (-1). The rdma_cm tests of rdma-core's suite cover this end to
// end, but only as root; this covers it on built frames, everywhere. A child
// reports through its exit status (no Catch2 in it) and leaves with _exit.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "datapath/family.hpp"
#include "net/cm_mad.hpp"
#include "net/roce_frame.hpp"
#include "net/roce_opcodes.hpp"
#include "sim/family_bus.hpp"
#include "tests/net/temp_dir.hpp"

using namespace rdmasim;

namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr std::uint64_t kParentService = 0x0000000001060001; // listened to by member 0
constexpr std::uint64_t kChildService = 0x0000000001060002;  // listened to by member 1
constexpr std::uint64_t kNobodysService = 0x0000000001060003;

net::Gid self_gid() {
    const std::uint8_t ip[4] = {10, 0, 0, 1};
    return net::ipv4_mapped_gid(ip);
}

// A packet from the device's address to itself (dgid: a group's, if given).
Bytes packet(net::RoceOpcode op, std::uint32_t dest_qp, std::span<const std::uint8_t> payload,
             const net::Gid* group = nullptr) {
    net::RocePath path;
    path.dst_mac = {0x02, 0, 0, 0, 0, 0x01};
    path.src_mac = path.dst_mac;
    path.sgid = self_gid();
    path.dgid = group != nullptr ? *group : self_gid();
    net::RoceHeaders h;
    h.bth.opcode = static_cast<std::uint8_t>(op);
    h.bth.dest_qp = dest_qp;
    if (op == net::RoceOpcode::ud_send_only) h.deth = {net::kGsiQkey, net::kGsiQpn};
    Bytes out(600);
    const auto r = net::build_roce_frame(path, h, payload, out);
    out.resize(r.error == net::RoceBuildError::none ? r.len : 0); // none: not RoCE, and checks fail
    return out;
}

// A CM MAD to QP1, as the CM sends it.
template <class M> Bytes mad(const M& msg) {
    std::array<std::uint8_t, net::kMadSize> m{};
    net::encode_cm_mad(net::cm_mad_header(M::kAttr, 1), msg, m);
    return packet(net::RoceOpcode::ud_send_only, net::kGsiQpn, m);
}

Bytes req(std::uint64_t service_id) {
    net::CmReq m;
    m.local_comm_id = 0x00000042;
    m.service_id = service_id;
    return mad(m);
}

Bytes sidr_req(std::uint64_t service_id) {
    net::CmSidrReq m{};
    m.request_id = 0x00000043;
    m.service_id = service_id;
    return mad(m);
}

// Communication ID 9 of member `m`.
std::uint32_t comm_id(std::uint32_t m) {
    return m << datapath::kCommIdMemberShift | 9;
}

// The answers every member gives, whoever asks: packets by QP, MADs by ID.
bool owners_by_number(const sim::FamilyBus& bus) {
    const std::uint8_t payload[8] = {};
    const std::uint8_t group_ip[4] = {239, 1, 2, 3};
    const net::Gid group = net::ipv4_mapped_gid(group_ip);
    net::CmDreq dreq{};
    dreq.local_comm_id = comm_id(4);
    dreq.remote_comm_id = comm_id(3);
    net::CmSidrRep srep{};
    srep.request_id = comm_id(2);
    net::CmRtu rtu{};
    rtu.local_comm_id = comm_id(6);
    rtu.remote_comm_id = comm_id(5);
    return bus.owner(packet(net::RoceOpcode::rc_send_only, datapath::first_qpn(5), payload)) == 5 &&
           bus.owner(packet(net::RoceOpcode::rc_send_only, datapath::first_qpn(0), payload)) == 0 &&
           bus.owner(packet(net::RoceOpcode::ud_send_only, 0x00ffffff, payload, &group)) == -1 &&
           bus.owner(mad(dreq)) == 3 && bus.owner(mad(srep)) == 2 && bus.owner(mad(rtu)) == 5 &&
           bus.owner(req(kParentService)) == 0;
}

// Member 1: what it sees, with its own listener and without. Exit 0 when
// all holds, else the number of the first check that failed.
int child(sim::FamilyBus& bus, int go_fd, int ready_fd) {
    auto wire = bus.join();
    if (!wire || bus.member() != 1) return 2;
    if (!owners_by_number(bus)) return 3;
    if (bus.owner(req(kNobodysService)) != 1 || bus.owner(sidr_req(kNobodysService)) != 1)
        return 4; // nobody listens: the member asking (its CM rejects it)
    const Bytes not_roce(64, 0xab);
    if (bus.owner(not_roce) != 1) return 5;
    bus.listen(kChildService, true);
    if (bus.owner(req(kChildService)) != 1 || bus.owner(sidr_req(kChildService)) != 1) return 6;
    char c = 1;
    if (::write(ready_fd, &c, 1) != 1 || ::read(go_fd, &c, 1) != 1) return 7;
    bus.listen(kChildService, false);
    if (::write(ready_fd, &c, 1) != 1 || ::read(go_fd, &c, 1) != 1) return 8;
    return 0;
}

} // namespace

TEST_CASE("the family bus names the member that owns each frame", "[sim][fork]") {
    net::test::TempDir dir;
    auto made = sim::FamilyBus::create(dir / "");
    REQUIRE(made);
    sim::FamilyBus& bus = *made.value();
    CHECK(bus.member() == 0);
    bus.listen(kParentService, true);
    CHECK(owners_by_number(bus));
    CHECK(bus.owner(req(kNobodysService)) == 0);

    int go[2], ready[2];
    REQUIRE(::pipe(go) == 0);
    REQUIRE(::pipe(ready) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(go[1]); // the parent's ends: an EOF on go means the parent gave up
        ::close(ready[0]);
        ::_exit(child(bus, go[0], ready[1]));
    }
    ::close(go[0]); // a child that stops early closes ready: the parent reads its EOF
    ::close(ready[1]);
    char c = 0;
    const bool listening = ::read(ready[0], &c, 1) == 1; // member 1 listens to kChildService
    CHECK(listening);
    if (listening) {
        CHECK(bus.owner(req(kChildService)) == 1);
        CHECK(bus.owner(sidr_req(kChildService)) == 1);
        CHECK(bus.owner(req(kParentService)) == 0);
        CHECK(::write(go[1], &c, 1) == 1);
        const bool stopped = ::read(ready[0], &c, 1) == 1; // and stopped
        CHECK(stopped);
        if (stopped) {
            CHECK(bus.owner(req(kChildService)) == 0);
            CHECK(::write(go[1], &c, 1) == 1);
        }
    }
    ::close(go[1]); // a child still waiting reads EOF and leaves
    ::close(ready[0]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    INFO("child exit status (0: every check held; else the first that failed)");
    CHECK((WIFEXITED(status) ? WEXITSTATUS(status) : -1) == 0);
}
