// The BTH opcodes of RC, UC, UD and XRC (IBA vol. 1, table 38; opcode bits 7..5
// the transport, 4..0 the operation): for each, the extension headers it
// carries, in wire order, and how its payload is bounded.
// (net/README.md, "RoCE v2 frames")
#pragma once

#include <cstddef>
#include <cstdint>

namespace rdmasim::net {

enum class RoceOpcode : std::uint8_t {
    rc_send_first = 0x00,
    rc_send_middle = 0x01,
    rc_send_last = 0x02,
    rc_send_last_imm = 0x03,
    rc_send_only = 0x04,
    rc_send_only_imm = 0x05,
    rc_write_first = 0x06,
    rc_write_middle = 0x07,
    rc_write_last = 0x08,
    rc_write_last_imm = 0x09,
    rc_write_only = 0x0a,
    rc_write_only_imm = 0x0b,
    rc_read_request = 0x0c,
    rc_read_response_first = 0x0d,
    rc_read_response_middle = 0x0e,
    rc_read_response_last = 0x0f,
    rc_read_response_only = 0x10,
    rc_ack = 0x11,
    rc_atomic_ack = 0x12,
    rc_compare_swap = 0x13,
    rc_fetch_add = 0x14,
    rc_send_last_inv = 0x16,
    rc_send_only_inv = 0x17,
    rc_atomic_write = 0x1d, // IBA 1.5 memory placement extensions
    uc_send_first = 0x20,
    uc_send_middle = 0x21,
    uc_send_last = 0x22,
    uc_send_last_imm = 0x23,
    uc_send_only = 0x24,
    uc_send_only_imm = 0x25,
    uc_write_first = 0x26,
    uc_write_middle = 0x27,
    uc_write_last = 0x28,
    uc_write_last_imm = 0x29,
    uc_write_only = 0x2a,
    uc_write_only_imm = 0x2b,
    ud_send_only = 0x64,
    ud_send_only_imm = 0x65,
};

enum class RoceTransport : std::uint8_t { rc = 0, uc = 1, ud = 3, xrc = 5 }; // opcode >> 5

// XRC speaks RC's operations under its own transport prefix (0xa0): the
// opcode of `rc` (an RC opcode) as XRC sends it. Requests carry an XRCETH.
inline constexpr std::uint8_t kXrcOpcodeBase = 0xa0;
[[nodiscard]] constexpr std::uint8_t xrc_opcode(RoceOpcode rc) noexcept {
    return static_cast<std::uint8_t>(kXrcOpcodeBase | static_cast<std::uint8_t>(rc));
}

// What the packet does.
enum class RoceOp : std::uint8_t {
    send,
    rdma_write,
    rdma_read_request,
    rdma_read_response,
    ack,
    atomic_ack,
    compare_swap,
    fetch_add,
    atomic_write, // 8 bytes placed at once; answered by an empty READ RESPONSE ONLY
};

// A packet for the requester's completer (an ACK, an atomic ACK, a READ
// response); every other operation is a request its responder answers.
[[nodiscard]] constexpr bool is_response(RoceOp op) noexcept {
    return op == RoceOp::ack || op == RoceOp::atomic_ack || op == RoceOp::rdma_read_response;
}

// Where the packet sits in its message. Operations that are never
// segmented (READ request, ACK, atomics, UD sends) are `only`.
enum class SegmentPosition : std::uint8_t { first, middle, last, only };

// Extension headers, as bits of OpcodeInfo::ext; they follow the BTH in the
// order XRCETH, DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH
// (XRCETH and DETH never meet: XRC requests, UD).
enum : std::uint8_t {
    kExtDeth = 1u << 0,
    kExtReth = 1u << 1,
    kExtAtomicEth = 1u << 2,
    kExtAeth = 1u << 3,
    kExtAtomicAckEth = 1u << 4,
    kExtImmDt = 1u << 5,
    kExtIeth = 1u << 6,
    kExtXrceth = 1u << 7,
};

struct OpcodeInfo {
    RoceOpcode opcode;
    const char* name; // the IBA's name without the transport, e.g. "SEND_LAST_WITH_IMMEDIATE"
    RoceTransport transport;
    RoceOp op;
    SegmentPosition position;
    std::uint8_t ext;        // kExt* bits
    std::uint8_t header_len; // BTH plus the extension headers
    bool has_payload;        // false: nothing may follow the headers (no pad either)
    bool full_mtu;           // the payload must be exactly the path MTU (first, middle)
    [[nodiscard]] bool has(std::uint8_t ext_bit) const noexcept { return (ext & ext_bit) != 0; }
    [[nodiscard]] bool immediate() const noexcept { return has(kExtImmDt); }
    [[nodiscard]] bool invalidate() const noexcept { return has(kExtIeth); }
};

// The opcode's entry, or nullptr for an opcode this HCA does not speak (RD,
// CNP, reserved values, XRC's atomic write).
[[nodiscard]] const OpcodeInfo* opcode_info(std::uint8_t opcode) noexcept;
[[nodiscard]] inline const OpcodeInfo& opcode_info(RoceOpcode opcode) noexcept {
    return *opcode_info(static_cast<std::uint8_t>(opcode));
}

[[nodiscard]] const char* transport_name(RoceTransport transport) noexcept; // "RC", "UC", "UD", "XRC"

// Every supported opcode's entry, in opcode order.
[[nodiscard]] const OpcodeInfo* opcode_table_begin() noexcept;
[[nodiscard]] std::size_t opcode_table_size() noexcept;

// The payload rule of the responder's length check (IBA 9.7.4): first and
// middle packets carry exactly the path MTU, last packets 1..MTU, only
// packets 0..MTU; opcodes without payload carry none; ATOMIC WRITE exactly 8.
[[nodiscard]] bool payload_length_ok(const OpcodeInfo& info, std::uint32_t payload_len,
                                     std::uint32_t mtu_bytes) noexcept;

} // namespace rdmasim::net
