// RSS: which input fields a QP hashes, and the hash of one frame.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <infiniband/verbs.h>

#include "datapath/toeplitz.hpp"
#include "net/headers.hpp"

namespace rdmasim::datapath {

class RxQueue;

// The hash-field groups of verbs' IBV_RX_HASH_* bits this HCA hashes on.
inline constexpr std::uint64_t kRssIpv4Fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4;
inline constexpr std::uint64_t kRssIpv6Fields = IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6;
inline constexpr std::uint64_t kRssTcpFields = IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP;
inline constexpr std::uint64_t kRssUdpFields = IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
inline constexpr std::uint64_t kRssKnownFields =
    kRssIpv4Fields | kRssIpv6Fields | kRssTcpFields | kRssUdpFields;

// `fields` is a mask of verbs' IBV_RX_HASH_* bits (SRC/DST_IPV4, SRC/DST_IPV6,
// SRC/DST_PORT_TCP, SRC/DST_PORT_UDP). The hash input is, in this order and in
// network byte order: source IP, destination IP, source port, destination
// port, each only when selected. A frame lacking any selected field (not IPv4
// when IPv4 bits are set, not TCP when TCP port bits are set, an IP fragment
// when port bits are set, ...) hashes to 0. fields == 0 hashes to 0.
//
// What a mask asks of a frame, worked out once (when a QP is created): the
// input is at most two runs of header bytes, the selected addresses (the
// source lies just before the destination) and the selected ports (likewise).
// Fields no frame can supply (none, bits this HCA cannot hash on, a
// combination the device refuses) select no input at all: every hash is 0.
struct RssInput {
    net::L3Kind l3 = net::L3Kind::none; // a frame must be this to hash (none: no address)
    net::L4Kind l4 = net::L4Kind::none; // ... and carry this (none: no port; never a fragment)
    std::uint8_t addr_offset = 0;    // of the first selected address, in the IP header
    std::uint8_t addr_len = 0;       // 0, 4, 8, 16 or 32 bytes
    std::uint8_t port_len = 0;       // 0, 2 (one port) or 4 (both)
    bool dst_port_only = false;      // port_len 2: the destination port, else the source

    [[nodiscard]] static RssInput of(std::uint64_t fields) noexcept;
};

[[nodiscard]] std::uint32_t rss_hash(const Toeplitz& toeplitz, const RssInput& input,
                                     net::Bytes frame, const net::ParsedFrame& parsed) noexcept;
[[nodiscard]] inline std::uint32_t rss_hash(const Toeplitz& toeplitz, std::uint64_t fields,
                                            net::Bytes frame, const net::ParsedFrame& parsed) noexcept {
    return rss_hash(toeplitz, RssInput::of(fields), frame, parsed);
}

// Index into an indirection table of 2^log_size entries: hash & (size - 1).
[[nodiscard]] inline std::uint32_t rss_entry(std::uint32_t hash, std::uint32_t log_size) noexcept {
    return hash & ((1u << log_size) - 1u);
}

struct RssGroup;
// RssGroup::index without any CPU extension (configure() takes a POPCNT build
// of the same code where the CPU has one; tests compare the two).
[[nodiscard]] std::uint32_t rss_index_portable(const RssGroup& group, net::Bytes frame,
                                               const net::ParsedFrame& parsed) noexcept;

// A steering target that spreads frames over queues (an RSS QP): the hash of
// the selected fields picks an entry of the indirection table.
//
// The table needs only the hash's low log_size bits, and Toeplitz is linear:
// index bit b is hash bit 31 - b, the parity of the input ANDed with the 32
// key bits that hash bit meets at each input bit. configure() lays those key
// bits out as masks over the input words and picks the code for the input's
// shape (address bytes x ports), so a frame costs a few loads, log_size
// ANDs and parities, and no whole hash (the same entry as
// rss_entry(rss_hash(...)): tests/datapath/test_rss.cpp compares the two).
struct RssGroup {
    std::vector<RxQueue*> table; // the indirection table's queues: 2^log_size of them

    // Written by configure only (public: a Qp embedding a group stays standard-layout).
    std::uint32_t log_size = 0;  // table has 2^log_size entries
    RssInput input;              // what the hash fields ask of a frame
    // Entry bit b, input word w (8 bytes; `words` of them, as many as the
    // input fills): masks[b * words + w].
    std::vector<std::uint64_t> masks;
    using IndexFn = std::uint32_t (*)(const RssGroup&, net::Bytes, const net::ParsedFrame&) noexcept;
    // index()'s body for this shape (POPCNT where the CPU has it); before
    // configure(), the portable one: no fields, every frame on entry 0.
    IndexFn index_fn = rss_index_portable;

    // Set-up (allocates): the QP's 40-byte key, hash fields and table size.
    void configure(std::span<const std::uint8_t, Toeplitz::kKeyLen> key, std::uint64_t fields,
                   std::uint32_t log_table_size);
    [[nodiscard]] RxQueue& pick(net::Bytes frame, const net::ParsedFrame& parsed) const noexcept {
        return *table[log_size == 0 ? 0 : index(frame, parsed)];
    }
    // The table entry for a frame: rss_entry(rss_hash(...), log_size).
    [[nodiscard]] std::uint32_t index(net::Bytes frame, const net::ParsedFrame& parsed) const noexcept {
        return index_fn(*this, frame, parsed);
    }
};

} // namespace rdmasim::datapath
