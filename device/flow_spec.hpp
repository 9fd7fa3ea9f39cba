// The parser behind ibv_create_flow: an ibv_flow_attr and the specs packed
// after it, compiled into a datapath::FlowRule.
#pragma once

#include <infiniband/verbs.h>

#include "datapath/flow_rule.hpp"

namespace rdmasim::device {

// Parses `attr` and the attr.num_of_specs specs that follow it in memory,
// laid out as verbs defines (each spec starts with its type and its size).
// attr.size is ignored, as rdma-core ignores it (pyverbs sets it to
// sizeof(ibv_flow_attr) alone); the walk reads nothing past `available`
// bytes from &attr, nor past kMaxFlowBytes. ibv_create_flow passes
// kMaxFlowBytes: like libibverbs, it trusts the specs to be where the
// program says; a fuzzer passes the size of its buffer.
// Returns 0 and replaces `rule`, or an errno and leaves `rule` untouched:
//   EINVAL     comp_mask != 0, port != 1, unknown attribute type, a flag bit
//              other than DONT_TRAP and EGRESS, either of those on an
//              ALL_DEFAULT or MC_DEFAULT rule, a spec running past the bound
//              or smaller than its type's struct, a second spec of a kind, two
//              L3 or two L4 specs;
//   EOPNOTSUPP a spec type other than ETH, IPV4, IPV4_EXT, IPV6, TCP, UDP
//              (inner, tunnel, MPLS, ESP, actions); then the EGRESS flag.
// DONT_TRAP is the caller's to honour (datapath::SteeringEntry::dont_trap).
// Verbs values are network order; the rule gets host-order integers and
// addresses as bytes. Every value is reduced to its mask (value &= mask).
// The attribute type, priority and flags are the caller's to read.
inline constexpr std::size_t kMaxFlowBytes = 4096;
[[nodiscard]] int parse_flow_attr(const ibv_flow_attr& attr, std::size_t available,
                                  datapath::FlowRule& rule) noexcept;

} // namespace rdmasim::device
