#include "datapath/arp_wait.hpp"

#include <algorithm>
#include <cstring>

#include "datapath/neighbours.hpp"

namespace rdmasim::datapath {

ArpWait::ArpWait(std::size_t bytes, std::uint32_t frames) : bytes_(bytes) { entries_.reserve(frames); }

bool ArpWait::push(std::span<const std::uint8_t> frame, const net::Ipv4Address& next_hop) noexcept {
    if (entries_.size() == entries_.capacity() || frame.size() > bytes_.size() - used_) {
        counters_.overflow.add();
        return false;
    }
    std::memcpy(bytes_.data() + used_, frame.data(), frame.size());
    entries_.push_back({next_hop, static_cast<std::uint32_t>(used_), static_cast<std::uint32_t>(frame.size())});
    used_ += frame.size();
    counters_.queued.add();
    return true;
}

void ArpWait::flush(const Neighbours& neighbours, net::FrameSink& out, std::uint64_t now_ns) noexcept {
    std::size_t kept = 0;
    std::size_t write = 0; // where the next kept frame's bytes go (never past its own)
    for (const Entry& e : entries_) {
        std::uint8_t* frame = bytes_.data() + e.off;
        if (const auto mac = neighbours.lookup(e.next_hop)) {
            std::memcpy(frame, mac->data(), mac->size()); // the destination MAC
            counters_.sent.add(); // before it leaves, as Neighbours counts
            out.send({frame, e.len}, now_ns);
            continue;
        }
        if (!neighbours.resolving(e.next_hop)) {
            counters_.unresolved.add();
            continue;
        }
        if (write != e.off) std::memmove(bytes_.data() + write, frame, e.len);
        entries_[kept++] = {e.next_hop, static_cast<std::uint32_t>(write), e.len};
        write += e.len;
    }
    entries_.resize(kept);
    used_ = write;
}

} // namespace rdmasim::datapath
