#include "datapath/roce_port.hpp"

#include <algorithm>

namespace rdmasim::datapath {

bool RocePort::attach(RoceQp& qp) {
    return qps_.emplace(qp.attrs().qpn, &qp).second;
}

void RocePort::detach(std::uint32_t qpn) noexcept {
    qps_.erase(qpn);
}

RoceQp* RocePort::find(std::uint32_t qpn) const noexcept {
    const auto it = qps_.find(qpn);
    return it == qps_.end() ? nullptr : it->second;
}

std::optional<RoceRx> RocePort::ingress(std::span<const std::uint8_t> frame,
                                        std::uint64_t now_ns) noexcept {
    counters_.frames.add();
    net::RocePacket p;
    const net::RoceDrop d = net::parse_roce_frame(frame, p);
    if (d != net::RoceDrop::none) [[unlikely]] {
        counters_.parse_drops[static_cast<std::size_t>(d)].add();
        return std::nullopt;
    }
    RoceQp* qp = find(p.headers.bth.dest_qp);
    if (qp == nullptr) [[unlikely]] {
        counters_.unknown_qp.add();
        return std::nullopt;
    }
    return qp->receive(p, now_ns);
}

void RocePort::service(std::uint64_t now_ns) noexcept {
    for (auto& [qpn, qp] : qps_)
        if (qp->next_deadline_ns() <= now_ns) qp->service(now_ns);
}

std::uint64_t RocePort::next_deadline_ns() const noexcept {
    std::uint64_t t = kNoDeadline;
    for (const auto& [qpn, qp] : qps_)
        t = std::min(t, qp->next_deadline_ns());
    return t;
}

} // namespace rdmasim::datapath
