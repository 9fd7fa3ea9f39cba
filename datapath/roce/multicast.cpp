#include "datapath/roce/multicast.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rdmasim::datapath {

std::size_t McastGroups::GidHash::operator()(const net::Gid& g) const noexcept {
    std::uint64_t hi;
    std::uint64_t lo;
    std::memcpy(&hi, g.data(), 8);
    std::memcpy(&lo, g.data() + 8, 8);
    return std::hash<std::uint64_t>{}(hi * 0x9e3779b97f4a7c15ull ^ lo);
}

int McastGroups::attach(const net::Gid& gid, std::uint32_t qpn) {
    auto it = groups_.find(gid);
    if (it == groups_.end()) {
        if (groups_.size() >= kMaxGroups) return ENOMEM;
        it = groups_.emplace(gid, std::vector<std::uint32_t>{}).first;
    }
    std::vector<std::uint32_t>& qps = it->second;
    if (std::find(qps.begin(), qps.end(), qpn) != qps.end()) return 0;
    if (qps.size() >= kMaxQpsPerGroup) return ENOMEM;
    qps.push_back(qpn);
    return 0;
}

int McastGroups::detach(const net::Gid& gid, std::uint32_t qpn) noexcept {
    const auto it = groups_.find(gid);
    if (it == groups_.end()) return EINVAL;
    std::vector<std::uint32_t>& qps = it->second;
    const auto q = std::find(qps.begin(), qps.end(), qpn);
    if (q == qps.end()) return EINVAL;
    qps.erase(q);
    if (qps.empty()) groups_.erase(it);
    return 0;
}

void McastGroups::detach_all(std::uint32_t qpn) noexcept {
    for (auto it = groups_.begin(); it != groups_.end();) {
        std::erase(it->second, qpn);
        it = it->second.empty() ? groups_.erase(it) : std::next(it);
    }
}

std::span<const std::uint32_t> McastGroups::members(const net::Gid& gid) const noexcept {
    const auto it = groups_.find(gid);
    if (it == groups_.end()) return {};
    return it->second;
}

bool McastGroups::accepts(const std::uint8_t* dst_mac, const net::Gid& gid) const noexcept {
    if (!groups_.contains(gid)) return false;
    const net::MacAddress mac = net::multicast_mac(gid);
    return std::memcmp(dst_mac, mac.data(), mac.size()) == 0;
}

} // namespace rdmasim::datapath
