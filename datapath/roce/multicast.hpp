// A port's multicast groups (datapath/README.md, "Multicast"): the UD QPs
// attached to each group, which a datagram to the group reaches, one copy
// each. Set-up calls allocate; the lookups the ingress makes do not. Same
// threading as RocePort: every call under the port lock.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "net/addresses.hpp"
#include "net/roce_frame.hpp"

namespace rdmasim::datapath {

class McastGroups {
public:
    // A ConnectX-5's limits (mlx5_ib_query_device): max_mcast_grp =
    // 1 << log_max_mcg, max_mcast_qp_attach = max_qp_mcg.
    static constexpr std::uint32_t kMaxGroups = 1u << 21;
    static constexpr std::uint32_t kMaxQpsPerGroup = 240;

    // `qpn` joins the group `gid` (a multicast GID, checked by the caller):
    // 0; already attached: 0, nothing changes (as uverbs' attach); a limit
    // reached: ENOMEM.
    [[nodiscard]] int attach(const net::Gid& gid, std::uint32_t qpn);
    // 0, or EINVAL when `qpn` is not attached to `gid`.
    int detach(const net::Gid& gid, std::uint32_t qpn) noexcept;
    // `qpn` leaves every group (its QP is destroyed).
    void detach_all(std::uint32_t qpn) noexcept;
    // The QPs attached to `gid`, in attach order (empty: none).
    [[nodiscard]] std::span<const std::uint32_t> members(const net::Gid& gid) const noexcept;
    // Whether a frame to `dst_mac` and the group `gid` is for this port: a
    // QP is attached to `gid` and `dst_mac` is the group's MAC.
    [[nodiscard]] bool accepts(const std::uint8_t* dst_mac, const net::Gid& gid) const noexcept;
    [[nodiscard]] bool empty() const noexcept { return groups_.empty(); }
    [[nodiscard]] std::size_t size() const noexcept { return groups_.size(); }

private:
    struct GidHash {
        std::size_t operator()(const net::Gid& g) const noexcept;
    };
    std::unordered_map<net::Gid, std::vector<std::uint32_t>, GidHash> groups_;
};

} // namespace rdmasim::datapath
