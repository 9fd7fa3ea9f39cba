// InfiniBand transport headers as RoCE v2 carries them (IBA vol. 1, ch. 9;
// annex A17): BTH and the extension headers, PSN arithmetic, path MTU.
// Each header is a plain struct of host-order fields with `load` (from wire
// bytes, network order) and `store` (to wire bytes); the caller guarantees
// kSize bytes at the pointer. (net/README.md, "RoCE v2 frames")
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace rdmasim::net {

inline constexpr std::uint16_t kRoceV2UdpPort = 4791; // IANA, annex A17
inline constexpr std::uint16_t kDefaultPkey = 0xffff; // the full-member default partition
// IBA 10.9.3: two P_Keys match when their low 15 bits (the partition) are
// equal and not zero (0x0000 and 0x8000 are invalid), and at least one of
// them has bit 15 set (a full member): two limited members never match.
[[nodiscard]] constexpr bool pkey_match(std::uint16_t a, std::uint16_t b) noexcept {
    return (a & 0x7fff) != 0 && (a & 0x7fff) == (b & 0x7fff) && ((a | b) & 0x8000) != 0;
}
inline constexpr std::size_t kIcrcLen = 4;

namespace roce_detail {

inline std::uint32_t load_be24(const std::uint8_t* p) noexcept {
    return (std::uint32_t{p[0]} << 16) | (std::uint32_t{p[1]} << 8) | p[2];
}
inline std::uint32_t load_be32(const std::uint8_t* p) noexcept {
    return (std::uint32_t{p[0]} << 24) | load_be24(p + 1);
}
inline std::uint64_t load_be64(const std::uint8_t* p) noexcept {
    return (std::uint64_t{load_be32(p)} << 32) | load_be32(p + 4);
}
inline void store_be16(std::uint8_t* p, std::uint16_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v >> 8);
    p[1] = static_cast<std::uint8_t>(v);
}
inline void store_be24(std::uint8_t* p, std::uint32_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v >> 16);
    p[1] = static_cast<std::uint8_t>(v >> 8);
    p[2] = static_cast<std::uint8_t>(v);
}
inline void store_be32(std::uint8_t* p, std::uint32_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v >> 24);
    store_be24(p + 1, v);
}
inline void store_be64(std::uint8_t* p, std::uint64_t v) noexcept {
    store_be32(p, static_cast<std::uint32_t>(v >> 32));
    store_be32(p + 4, static_cast<std::uint32_t>(v));
}

} // namespace roce_detail

// ---- PSN: 24 bits, compared as serial numbers (IBA 9.7.1: a PSN is "ahead"
// of another when it lies in the half of the space that follows it).

inline constexpr std::uint32_t kPsnMask = 0xffffff;

[[nodiscard]] constexpr std::uint32_t psn_add(std::uint32_t psn, std::uint32_t n) noexcept {
    return (psn + n) & kPsnMask;
}
// a - b as a signed distance in [-2^23, 2^23): positive when a is after b.
[[nodiscard]] constexpr std::int32_t psn_diff(std::uint32_t a, std::uint32_t b) noexcept {
    const std::uint32_t d = (a - b) & kPsnMask;
    return d & 0x800000 ? static_cast<std::int32_t>(d) - 0x1000000 : static_cast<std::int32_t>(d);
}
[[nodiscard]] constexpr bool psn_before(std::uint32_t a, std::uint32_t b) noexcept {
    return psn_diff(a, b) < 0;
}

// ---- Path MTU: the values of `enum ibv_mtu` (IBV_MTU_256 = 1 .. IBV_MTU_4096 = 5).
enum class PathMtu : std::uint8_t { mtu256 = 1, mtu512 = 2, mtu1024 = 3, mtu2048 = 4, mtu4096 = 5 };

[[nodiscard]] constexpr std::uint32_t mtu_bytes(PathMtu mtu) noexcept {
    return 128u << static_cast<unsigned>(mtu);
}
// An ibv_mtu value (1..5) as a PathMtu; nullopt for anything else.
[[nodiscard]] constexpr std::optional<PathMtu> path_mtu_from_enum(int ibv_mtu) noexcept {
    if (ibv_mtu < 1 || ibv_mtu > 5) return std::nullopt;
    return static_cast<PathMtu>(ibv_mtu);
}
// 256, 512, 1024, 2048 or 4096 bytes as a PathMtu; nullopt for other sizes.
[[nodiscard]] constexpr std::optional<PathMtu> path_mtu_from_bytes(std::uint32_t bytes) noexcept {
    for (int m = 1; m <= 5; ++m)
        if (mtu_bytes(static_cast<PathMtu>(m)) == bytes) return static_cast<PathMtu>(m);
    return std::nullopt;
}

// ---- Base transport header, 12 bytes:
// opcode | SE M PadCnt(2) TVer(4) | P_Key(16) | F B resv6 | DestQP(24) | A resv7 | PSN(24)
struct Bth {
    static constexpr std::size_t kSize = 12;
    std::uint8_t opcode = 0;
    bool solicited = false;   // SE
    bool mig_req = false;     // M
    std::uint8_t pad = 0;     // PadCnt, 0..3 bytes after the payload
    std::uint8_t version = 0; // TVer, 0 in this version of the spec
    std::uint16_t pkey = kDefaultPkey;
    bool fecn = false;
    bool becn = false;
    std::uint32_t dest_qp = 0; // 24 bits
    bool ack_req = false;      // A
    std::uint32_t psn = 0;     // 24 bits

    static Bth load(const std::uint8_t* p) noexcept {
        Bth b;
        b.opcode = p[0];
        b.solicited = (p[1] & 0x80) != 0;
        b.mig_req = (p[1] & 0x40) != 0;
        b.pad = static_cast<std::uint8_t>((p[1] >> 4) & 3);
        b.version = static_cast<std::uint8_t>(p[1] & 0x0f);
        b.pkey = static_cast<std::uint16_t>((p[2] << 8) | p[3]);
        b.fecn = (p[4] & 0x80) != 0;
        b.becn = (p[4] & 0x40) != 0;
        b.dest_qp = roce_detail::load_be24(p + 5);
        b.ack_req = (p[8] & 0x80) != 0;
        b.psn = roce_detail::load_be24(p + 9);
        return b;
    }
    // Reserved bits are written as 0; fields wider than their bits are cut.
    void store(std::uint8_t* p) const noexcept {
        p[0] = opcode;
        p[1] = static_cast<std::uint8_t>((solicited ? 0x80 : 0) | (mig_req ? 0x40 : 0) |
                                         ((pad & 3) << 4) | (version & 0x0f));
        roce_detail::store_be16(p + 2, pkey);
        p[4] = static_cast<std::uint8_t>((fecn ? 0x80 : 0) | (becn ? 0x40 : 0));
        roce_detail::store_be24(p + 5, dest_qp & 0xffffff);
        p[8] = ack_req ? 0x80 : 0;
        roce_detail::store_be24(p + 9, psn & kPsnMask);
    }
    bool operator==(const Bth&) const = default;
};

// RDMA extended transport header (WRITE first/only, READ request), 16 bytes.
struct Reth {
    static constexpr std::size_t kSize = 16;
    std::uint64_t va = 0;
    std::uint32_t rkey = 0;
    std::uint32_t dma_len = 0;

    static Reth load(const std::uint8_t* p) noexcept {
        return {roce_detail::load_be64(p), roce_detail::load_be32(p + 8),
                roce_detail::load_be32(p + 12)};
    }
    void store(std::uint8_t* p) const noexcept {
        roce_detail::store_be64(p, va);
        roce_detail::store_be32(p + 8, rkey);
        roce_detail::store_be32(p + 12, dma_len);
    }
    bool operator==(const Reth&) const = default;
};

// ACK extended transport header, 4 bytes: syndrome, MSN (24 bits).
// Syndrome: bit 7 reserved (0); bits 6..5 the kind; bits 4..0 the credit
// count (ACK), the RNR timer code (RNR NAK) or the NAK code (IBA 9.7.5.2.1).
enum class AckKind : std::uint8_t { ack = 0, rnr_nak = 1, reserved = 2, nak = 3 };
enum class NakCode : std::uint8_t {
    psn_sequence_error = 0,
    invalid_request = 1,
    remote_access_error = 2,
    remote_operational_error = 3,
    invalid_rd_request = 4,
};
inline constexpr std::uint8_t kCreditsInvalid = 0x1f; // "no credit count" (IBA table 45)

struct Aeth {
    static constexpr std::size_t kSize = 4;
    std::uint8_t syndrome = 0;
    std::uint32_t msn = 0; // 24 bits

    [[nodiscard]] AckKind kind() const noexcept {
        return static_cast<AckKind>((syndrome >> 5) & 3);
    }
    [[nodiscard]] std::uint8_t value() const noexcept {
        return syndrome & 0x1f;
    } // credits / timer / NAK code
    [[nodiscard]] static constexpr std::uint8_t make_syndrome(AckKind kind,
                                                              std::uint8_t value) noexcept {
        return static_cast<std::uint8_t>((static_cast<unsigned>(kind) << 5) | (value & 0x1f));
    }
    static Aeth load(const std::uint8_t* p) noexcept {
        return {p[0], roce_detail::load_be24(p + 1)};
    }
    void store(std::uint8_t* p) const noexcept {
        p[0] = syndrome;
        roce_detail::store_be24(p + 1, msn & 0xffffff);
    }
    bool operator==(const Aeth&) const = default;
};

// Datagram extended transport header (UD), 8 bytes: Q_Key, reserved byte, source QP.
struct Deth {
    static constexpr std::size_t kSize = 8;
    std::uint32_t qkey = 0;
    std::uint32_t src_qp = 0; // 24 bits

    static Deth load(const std::uint8_t* p) noexcept {
        return {roce_detail::load_be32(p), roce_detail::load_be24(p + 5)};
    }
    void store(std::uint8_t* p) const noexcept {
        roce_detail::store_be32(p, qkey);
        p[4] = 0;
        roce_detail::store_be24(p + 5, src_qp & 0xffffff);
    }
    bool operator==(const Deth&) const = default;
};

// Atomic extended transport header (COMPARE_SWAP, FETCH_ADD), 28 bytes.
struct AtomicEth {
    static constexpr std::size_t kSize = 28;
    std::uint64_t va = 0;
    std::uint32_t rkey = 0;
    std::uint64_t swap_add = 0; // the swap value, or the value to add
    std::uint64_t compare = 0;

    static AtomicEth load(const std::uint8_t* p) noexcept {
        return {roce_detail::load_be64(p), roce_detail::load_be32(p + 8),
                roce_detail::load_be64(p + 12), roce_detail::load_be64(p + 20)};
    }
    void store(std::uint8_t* p) const noexcept {
        roce_detail::store_be64(p, va);
        roce_detail::store_be32(p + 8, rkey);
        roce_detail::store_be64(p + 12, swap_add);
        roce_detail::store_be64(p + 20, compare);
    }
    bool operator==(const AtomicEth&) const = default;
};

// Atomic acknowledge extended transport header, 8 bytes: the original remote data.
struct AtomicAckEth {
    static constexpr std::size_t kSize = 8;
    std::uint64_t orig = 0;

    static AtomicAckEth load(const std::uint8_t* p) noexcept { return {roce_detail::load_be64(p)}; }
    void store(std::uint8_t* p) const noexcept { roce_detail::store_be64(p, orig); }
    bool operator==(const AtomicAckEth&) const = default;
};

// XRC extended transport header, 4 bytes: reserved byte, the XRC SRQ
// number (24 bits) the request's receive lands in.
struct Xrceth {
    static constexpr std::size_t kSize = 4;
    std::uint32_t srqn = 0; // 24 bits

    static Xrceth load(const std::uint8_t* p) noexcept { return {roce_detail::load_be24(p + 1)}; }
    void store(std::uint8_t* p) const noexcept {
        p[0] = 0;
        roce_detail::store_be24(p + 1, srqn & 0xffffff);
    }
    bool operator==(const Xrceth&) const = default;
};

// Immediate data (ImmDt) and the invalidate header (IETH, an R_Key) are 4
// bytes each; they travel as a host-order value of the big-endian field.
// (The verbs API's imm_data is already big-endian: be32toh it first.)
struct ImmDt {
    static constexpr std::size_t kSize = 4;
    std::uint32_t value = 0;
    static ImmDt load(const std::uint8_t* p) noexcept { return {roce_detail::load_be32(p)}; }
    void store(std::uint8_t* p) const noexcept { roce_detail::store_be32(p, value); }
    bool operator==(const ImmDt&) const = default;
};

struct Ieth {
    static constexpr std::size_t kSize = 4;
    std::uint32_t rkey = 0;
    static Ieth load(const std::uint8_t* p) noexcept { return {roce_detail::load_be32(p)}; }
    void store(std::uint8_t* p) const noexcept { roce_detail::store_be32(p, rkey); }
    bool operator==(const Ieth&) const = default;
};

} // namespace rdmasim::net
