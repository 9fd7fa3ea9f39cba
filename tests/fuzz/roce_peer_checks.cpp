// What the device sent during a step of the hostile peer (roce_peer.hpp):
// READ responses carry exactly the readable bytes the request named; an
// atomic is answered only where the model granted it, with the memory's
// value before it ran. Sequence NAKs also move the peer's next PSN.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "tests/fuzz/roce_peer_impl.hpp"

namespace rdmasim::test {

using namespace roce_peer;

namespace {

// Why a READ response (RC numbering `op`, 0x0d-0x10) to QP q breaks the
// invariant, or nullptr.
const char* read_response_fault(const GuardedAreas& mem, const Request& req, int q,
                                const net::RocePacket& p) {
    const std::size_t n = p.payload.size();
    const std::int64_t off = std::int64_t{net::psn_diff(p.headers.bth.psn, req.psn)} * kMtu;
    if (req.op != 0x0c || q != req.qp) return "no READ request of this step asked for it";
    if (!req.readable) return "the rkey grants no READ of [va, va + len) on that QP: a leak";
    if (off < 0 || static_cast<std::uint64_t>(off) + n > req.dma_len)
        return "its bytes lie outside the request";
    const auto* at = reinterpret_cast<const std::uint8_t*>(req.va + off);
    if (mem.find(at, n) < 0 || std::memcmp(at, p.payload.data(), n) != 0)
        return "its bytes are not the memory at va + offset";
    return nullptr;
}

} // namespace

std::string RocePeerHarness::Impl::check_sent(int index, const Request& req) {
    char buf[320];
    for (const auto& f : sink.frames) {
        net::RocePacket p;
        if (net::parse_roce_frame(f, p) != net::RoceDrop::none) continue;
        const std::uint8_t op = p.headers.bth.opcode & 0x1f;
        const std::uint32_t psn = p.headers.bth.psn;
        const int q = static_cast<int>(p.headers.bth.dest_qp - kPeerQpn);
        if (q < 0 || q >= kQps) continue;
        // A sequence NAK says where the responder is: the peer goes on from there.
        if (op == 0x11 && p.headers.aeth.syndrome == net::Aeth::make_syndrome(net::AckKind::nak, 0))
            qps[q].psn = psn;
        const char* why = nullptr;
        if (op >= 0x0d && op <= 0x10 && !p.payload.empty()) {
            why = read_response_fault(mem, req, q, p);
        } else if (op == 0x12) { // ATOMIC ACKNOWLEDGE: the original value is a read
            const auto& sent = qps[q].atomic_psns;
            const std::uint64_t orig = p.headers.atomic_ack_eth.orig;
            if (std::find(sent.begin(), sent.end(), psn) == sent.end())
                why = "an atomic ACK where no atomic with a granting key was sent: a leak";
            else if (q == req.qp && psn == req.psn && req.fresh && req.orig_known &&
                     orig != req.orig)
                why = "an atomic ACK whose original value is not the memory before it";
        }
        if (why == nullptr) continue;
        why_sent = why;
        std::snprintf(buf, sizeof buf,
                      "step %d: opcode 0x%02x (PSN 0x%06x, %zu bytes) for request rkey 0x%08x "
                      "va +0x%llx len %u on %s: %s",
                      index, p.headers.bth.opcode, psn, p.payload.size(), req.rkey,
                      static_cast<unsigned long long>(req.va & 0xfff), req.dma_len,
                      req.qp >= 0 ? kQpNames[req.qp] : "-", why);
        return buf;
    }
    return {};
}

} // namespace rdmasim::test
