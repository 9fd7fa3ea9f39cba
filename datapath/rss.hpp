// RSS: which input fields a QP hashes, and the hash of one frame.
#pragma once

#include <cstdint>

#include "datapath/toeplitz.hpp"
#include "net/headers.hpp"

namespace rdmasim::datapath {

// `fields` is a mask of verbs' IBV_RX_HASH_* bits (SRC/DST_IPV4, SRC/DST_IPV6,
// SRC/DST_PORT_TCP, SRC/DST_PORT_UDP). The hash input is, in this order and in
// network byte order: source IP, destination IP, source port, destination
// port, each only when selected. A frame lacking any selected field (not IPv4
// when IPv4 bits are set, not TCP when TCP port bits are set, an IP fragment
// when port bits are set, ...) hashes to 0. fields == 0 hashes to 0.
[[nodiscard]] std::uint32_t rss_hash(const Toeplitz& toeplitz, std::uint64_t fields,
                                     net::Bytes frame, const net::ParsedFrame& parsed) noexcept;

// Index into an indirection table of 2^log_size entries: hash & (size - 1).
[[nodiscard]] inline std::uint32_t rss_entry(std::uint32_t hash, std::uint32_t log_size) noexcept {
    return hash & ((1u << log_size) - 1u);
}

} // namespace rdmasim::datapath
