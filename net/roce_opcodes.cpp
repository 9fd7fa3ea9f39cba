#include "net/roce_opcodes.hpp"

#include <array>

#include "net/roce_headers.hpp"

namespace rdmasim::net {

namespace {

using Op = RoceOp;
using Pos = SegmentPosition;
using T = RoceTransport;

constexpr std::uint8_t header_len(std::uint8_t ext) noexcept {
    std::size_t n = Bth::kSize;
    if (ext & kExtXrceth) n += Xrceth::kSize;
    if (ext & kExtDeth) n += Deth::kSize;
    if (ext & kExtReth) n += Reth::kSize;
    if (ext & kExtAtomicEth) n += AtomicEth::kSize;
    if (ext & kExtAeth) n += Aeth::kSize;
    if (ext & kExtAtomicAckEth) n += AtomicAckEth::kSize;
    if (ext & kExtImmDt) n += ImmDt::kSize;
    if (ext & kExtIeth) n += Ieth::kSize;
    return static_cast<std::uint8_t>(n);
}

constexpr OpcodeInfo entry(std::uint8_t code, const char* name, Op op, Pos pos, std::uint8_t ext,
                           bool payload) noexcept {
    const auto transport = static_cast<T>(code >> 5);
    const bool full = payload && (pos == Pos::first || pos == Pos::middle);
    return {static_cast<RoceOpcode>(code),
            name,
            transport,
            op,
            pos,
            ext,
            header_len(ext),
            payload,
            full};
}

// The send and write operations, the same for RC (base 0x00), UC (0x20)
// and XRC (0xa0, whose requests carry `req` = kExtXrceth).
constexpr std::array<OpcodeInfo, 12> send_write(std::uint8_t base, std::uint8_t req = 0) noexcept {
    return {{
        entry(base + 0x00, "SEND_FIRST", Op::send, Pos::first, req, true),
        entry(base + 0x01, "SEND_MIDDLE", Op::send, Pos::middle, req, true),
        entry(base + 0x02, "SEND_LAST", Op::send, Pos::last, req, true),
        entry(base + 0x03, "SEND_LAST_WITH_IMMEDIATE", Op::send, Pos::last, req | kExtImmDt, true),
        entry(base + 0x04, "SEND_ONLY", Op::send, Pos::only, req, true),
        entry(base + 0x05, "SEND_ONLY_WITH_IMMEDIATE", Op::send, Pos::only, req | kExtImmDt, true),
        entry(base + 0x06, "RDMA_WRITE_FIRST", Op::rdma_write, Pos::first, req | kExtReth, true),
        entry(base + 0x07, "RDMA_WRITE_MIDDLE", Op::rdma_write, Pos::middle, req, true),
        entry(base + 0x08, "RDMA_WRITE_LAST", Op::rdma_write, Pos::last, req, true),
        entry(base + 0x09, "RDMA_WRITE_LAST_WITH_IMMEDIATE", Op::rdma_write, Pos::last,
              req | kExtImmDt, true),
        entry(base + 0x0a, "RDMA_WRITE_ONLY", Op::rdma_write, Pos::only, req | kExtReth, true),
        entry(base + 0x0b, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", Op::rdma_write, Pos::only,
              req | kExtReth | kExtImmDt, true),
    }};
}

// READ, the responses, atomics and SEND with invalidate: RC (base 0x00) and
// XRC (0xa0, requests with `req` = kExtXrceth).
constexpr std::array<OpcodeInfo, 11> rc_only(std::uint8_t base, std::uint8_t req = 0) noexcept {
    return {{
        entry(base + 0x0c, "RDMA_READ_REQUEST", Op::rdma_read_request, Pos::only, req | kExtReth,
              false),
        entry(base + 0x0d, "RDMA_READ_RESPONSE_FIRST", Op::rdma_read_response, Pos::first,
              kExtAeth, true),
        entry(base + 0x0e, "RDMA_READ_RESPONSE_MIDDLE", Op::rdma_read_response, Pos::middle, 0,
              true),
        entry(base + 0x0f, "RDMA_READ_RESPONSE_LAST", Op::rdma_read_response, Pos::last, kExtAeth,
              true),
        entry(base + 0x10, "RDMA_READ_RESPONSE_ONLY", Op::rdma_read_response, Pos::only, kExtAeth,
              true),
        entry(base + 0x11, "ACKNOWLEDGE", Op::ack, Pos::only, kExtAeth, false),
        entry(base + 0x12, "ATOMIC_ACKNOWLEDGE", Op::atomic_ack, Pos::only,
              kExtAeth | kExtAtomicAckEth, false),
        entry(base + 0x13, "CMP_SWAP", Op::compare_swap, Pos::only, req | kExtAtomicEth, false),
        entry(base + 0x14, "FETCH_ADD", Op::fetch_add, Pos::only, req | kExtAtomicEth, false),
        entry(base + 0x16, "SEND_LAST_WITH_INVALIDATE", Op::send, Pos::last, req | kExtIeth, true),
        entry(base + 0x17, "SEND_ONLY_WITH_INVALIDATE", Op::send, Pos::only, req | kExtIeth, true),
    }};
}

// RC only: an RDMA WRITE of 8 bytes the responder performs at once (IBA 1.5).
constexpr OpcodeInfo kAtomicWrite =
    entry(0x1d, "ATOMIC_WRITE", Op::atomic_write, Pos::only, kExtReth, true);

constexpr std::array<OpcodeInfo, 2> kUd = {{
    entry(0x64, "SEND_ONLY", Op::send, Pos::only, kExtDeth, true),
    entry(0x65, "SEND_ONLY_WITH_IMMEDIATE", Op::send, Pos::only, kExtDeth | kExtImmDt, true),
}};

constexpr auto make_table() noexcept {
    std::array<OpcodeInfo, 12 + 11 + 1 + 12 + 2 + 12 + 11> t{};
    std::size_t n = 0;
    for (const auto& e : send_write(0x00))
        t[n++] = e;
    for (const auto& e : rc_only(0x00))
        t[n++] = e;
    t[n++] = kAtomicWrite;
    for (const auto& e : send_write(0x20))
        t[n++] = e;
    for (const auto& e : kUd)
        t[n++] = e;
    for (const auto& e : send_write(kXrcOpcodeBase, kExtXrceth))
        t[n++] = e;
    for (const auto& e : rc_only(kXrcOpcodeBase, kExtXrceth))
        t[n++] = e;
    return t;
}

constexpr auto kTable = make_table();

constexpr std::array<std::int8_t, 256> make_index() noexcept {
    std::array<std::int8_t, 256> index{};
    for (auto& i : index)
        i = -1;
    for (std::size_t i = 0; i < kTable.size(); ++i)
        index[static_cast<std::uint8_t>(kTable[i].opcode)] = static_cast<std::int8_t>(i);
    return index;
}

constexpr auto kIndex = make_index();

static_assert(kTable[37].opcode == RoceOpcode::ud_send_only_imm);
static_assert(static_cast<std::uint8_t>(kTable.back().opcode) == 0xb7);
static_assert(header_len(kExtXrceth | kExtReth | kExtImmDt) == 36);
static_assert(header_len(kExtReth | kExtImmDt) == 32);
static_assert(header_len(kExtAeth | kExtAtomicAckEth) == 24);

} // namespace

const OpcodeInfo* opcode_info(std::uint8_t opcode) noexcept {
    const int i = kIndex[opcode];
    return i < 0 ? nullptr : &kTable[i];
}

const char* transport_name(RoceTransport transport) noexcept {
    switch (transport) {
    case RoceTransport::rc:
        return "RC";
    case RoceTransport::uc:
        return "UC";
    case RoceTransport::ud:
        return "UD";
    case RoceTransport::xrc:
        return "XRC";
    }
    return "?";
}

const OpcodeInfo* opcode_table_begin() noexcept {
    return kTable.data();
}

std::size_t opcode_table_size() noexcept {
    return kTable.size();
}

bool payload_length_ok(const OpcodeInfo& info, std::uint32_t payload_len,
                       std::uint32_t mtu_bytes) noexcept {
    if (!info.has_payload) return payload_len == 0;
    if (info.op == RoceOp::atomic_write) return payload_len == 8;
    switch (info.position) {
    case SegmentPosition::first:
    case SegmentPosition::middle:
        return payload_len == mtu_bytes;
    case SegmentPosition::last:
        return payload_len >= 1 && payload_len <= mtu_bytes;
    case SegmentPosition::only:
        return payload_len <= mtu_bytes;
    }
    return false;
}

} // namespace rdmasim::net
