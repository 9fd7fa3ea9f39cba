// McastGroups (datapath/README.md, "Multicast") and the group addresses it
// relies on (net/README.md, "Addresses and ARP"): membership compared with
// a plain model after each step, the per-group limit, the group MACs of
// RFC 1112 and RFC 2464.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <map>
#include <vector>

#include "datapath/roce/multicast.hpp"
#include "net/addresses.hpp"

using namespace rdmasim;
using datapath::McastGroups;

namespace {

net::Gid v4_group(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
    return net::ipv4_mapped({a, b, c, d});
}

} // namespace

TEST_CASE("multicast GIDs and their MACs", "[datapath][mcast]") {
    CHECK(net::is_multicast_gid(v4_group(224, 0, 0, 1)));
    CHECK(net::is_multicast_gid(v4_group(239, 255, 255, 255)));
    CHECK_FALSE(net::is_multicast_gid(v4_group(240, 0, 0, 1)));
    CHECK_FALSE(net::is_multicast_gid(v4_group(10, 0, 0, 1)));
    net::Gid v6{};
    v6[0] = 0xff;
    v6[1] = 0x02;
    v6[11] = 1;
    v6[12] = 0xff;
    v6[15] = 1;
    CHECK(net::is_multicast_gid(v6));
    net::Gid not_mapped = v4_group(239, 1, 2, 3);
    not_mapped[10] = 0; // ::239.1.2.3 is not IPv4-mapped
    CHECK_FALSE(net::is_multicast_gid(not_mapped));
    CHECK(net::multicast_mac(v4_group(239, 1, 2, 3)) ==
          net::MacAddress{0x01, 0x00, 0x5e, 0x01, 0x02, 0x03});
    // Only the low 23 bits: 239.129.2.3 shares 239.1.2.3's MAC.
    CHECK(net::multicast_mac(v4_group(239, 129, 2, 3)) ==
          net::MacAddress{0x01, 0x00, 0x5e, 0x01, 0x02, 0x03});
    CHECK(net::multicast_mac(v6) == net::MacAddress{0x33, 0x33, 0xff, 0x00, 0x00, 0x01});
}

TEST_CASE("McastGroups: attach, detach and detach_all against a model", "[datapath][mcast]") {
    McastGroups groups;
    std::map<net::Gid, std::vector<std::uint32_t>> model;
    const net::Gid a = v4_group(239, 1, 2, 3), b = v4_group(239, 1, 2, 4);
    const auto same = [&] {
        std::size_t n = 0;
        for (const auto& [g, qps] : model) {
            const auto m = groups.members(g);
            if (!std::equal(m.begin(), m.end(), qps.begin(), qps.end())) return false;
            n += qps.empty() ? 0 : 1;
        }
        return groups.size() == n && groups.empty() == (n == 0);
    };
    CHECK(groups.attach(a, 5) == 0);
    model[a] = {5};
    CHECK(groups.attach(a, 5) == 0); // again: nothing changes
    CHECK(groups.attach(a, 6) == 0);
    model[a].push_back(6);
    CHECK(groups.attach(b, 6) == 0);
    model[b] = {6};
    CHECK(same());
    CHECK(groups.detach(b, 5) == EINVAL);
    CHECK(groups.detach(v4_group(239, 9, 9, 9), 5) == EINVAL);
    CHECK(groups.detach(a, 5) == 0);
    model[a] = {6};
    CHECK(same());
    groups.detach_all(6);
    model[a].clear();
    model[b].clear();
    CHECK(same());
    CHECK(groups.empty());
}

TEST_CASE(
    "McastGroups: max_mcast_qp_attach QPs in a group, then ENOMEM; the MAC must be the group's",
    "[datapath][mcast]") {
    McastGroups groups;
    const net::Gid g = v4_group(239, 1, 2, 3);
    for (std::uint32_t q = 0; q < McastGroups::kMaxQpsPerGroup; ++q)
        REQUIRE(groups.attach(g, 100 + q) == 0);
    CHECK(groups.attach(g, 1) == ENOMEM);
    CHECK(groups.attach(v4_group(239, 1, 2, 4), 1) == 0); // another group has room
    const net::MacAddress mac = net::multicast_mac(g);
    CHECK(groups.accepts(mac.data(), g));
    const net::MacAddress other{0x01, 0x00, 0x5e, 0x01, 0x02, 0x05};
    CHECK_FALSE(groups.accepts(other.data(), g));
    CHECK_FALSE(groups.accepts(mac.data(), v4_group(239, 1, 2, 5))); // no QP in that group
}
