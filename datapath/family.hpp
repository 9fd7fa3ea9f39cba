// A device's family (sim/README.md, "Fork"): the processes forked from one
// program share its device, as processes share one HCA. Each is a member
// with a number; QP numbers and CM communication IDs carry the member that
// made them, so a frame one member sends to its own address reaches the
// member that owns its destination over the family's bus.
//
// Threading: every call under the port lock.
#pragma once

#include <cstdint>
#include <span>

namespace rdmasim::datapath {

// Where the member lies in a QP number (24 bits) and a CM communication ID
// (32 bits): 32 member numbers (0, the process that forked first; then one
// per bus slot), 512 Ki QP numbers each.
inline constexpr std::uint32_t kFamilyMembers = 32;
inline constexpr std::uint32_t kQpnMemberShift = 19;
inline constexpr std::uint32_t kCommIdMemberShift = 27;

[[nodiscard]] constexpr std::uint32_t qpn_member(std::uint32_t qpn) noexcept {
    return (qpn >> kQpnMemberShift) & (kFamilyMembers - 1);
}
[[nodiscard]] constexpr std::uint32_t comm_id_member(std::uint32_t id) noexcept {
    return id >> kCommIdMemberShift;
}
// The first QP number member `m` hands out (member 0 keeps a lone device's).
[[nodiscard]] constexpr std::uint32_t first_qpn(std::uint32_t m) noexcept {
    return m << kQpnMemberShift | 0x100;
}

class Family {
public:
    virtual ~Family() = default;
    // This process's member number.
    [[nodiscard]] virtual std::uint32_t member() const noexcept = 0;
    // The member a frame to this device's own address belongs to: its
    // destination QP's, a CM MAD's (a REQ: the listening member's, by the
    // family's listener table; else its communication ID's), or this
    // member when none is known. -1: a datagram to a group (every member).
    [[nodiscard]] virtual int owner(std::span<const std::uint8_t> frame) const noexcept = 0;
    // Sends `frame` on the bus to its owner (or to every other member);
    // false when the bus lost it (counted by the bus).
    virtual bool forward(std::span<const std::uint8_t> frame, std::uint64_t now_ns) noexcept = 0;
    // This member listens to `service_id`, or stops: the family's table.
    virtual void listen(std::uint64_t service_id, bool on) noexcept = 0;
};

} // namespace rdmasim::datapath
