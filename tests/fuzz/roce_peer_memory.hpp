// The target's memory for the hostile-peer fuzzer (tests/fuzz/roce_peer.hpp):
// kAreas areas of one page, each between PROT_NONE guard pages, a shadow copy
// of each, and byte masks over them. The fuzzer registers MRs inside areas
// only. Contract of check(): every byte that differs from the shadow must be
// set in the mask the caller passes (what the step allowed the peer to
// write); the shadow then takes the memory as it is.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

// The byte loops below are the harness's bookkeeping, not code under test:
// without coverage instrumentation (which would cost a comparison callback
// per byte and feed the fuzzer noise).
#if defined(__clang__)
#define ROCE_PEER_NO_COVERAGE __attribute__((no_sanitize("coverage")))
#else
#define ROCE_PEER_NO_COVERAGE
#endif

namespace rdmasim::test::roce_peer {

inline constexpr int kAreas = 5; // 0-3: our MR slots, 4: the foreign PD's MR
inline constexpr std::size_t kAreaLen = 4096;

// A byte of bits per byte of every area: which kinds of access (1 SEND
// placement, 2 WRITE, 4 atomic) the peer has there.
struct Mask {
    std::array<std::array<std::uint8_t, kAreaLen>, kAreas> b{};
    void clear() noexcept { std::memset(b.data(), 0, sizeof b); }
};

class GuardedAreas {
public:
    GuardedAreas() {
        const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
        if (page != kAreaLen) throw std::runtime_error("roce_peer: needs 4 KiB pages");
        map_len_ = (2 * kAreas + 1) * page; // guard, area, guard, area, ..., guard
        void* p = ::mmap(nullptr, map_len_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw std::runtime_error("roce_peer: mmap failed");
        map_ = static_cast<std::uint8_t*>(p);
        for (int a = 0; a < kAreas; ++a) {
            if (::mprotect(area(a), kAreaLen, PROT_READ | PROT_WRITE) != 0)
                throw std::runtime_error("roce_peer: mprotect failed");
            for (std::size_t i = 0; i < kAreaLen; ++i)
                canary_[a][i] = static_cast<std::uint8_t>(i * 131 + a * 17 + 0x5c);
        }
    }
    ~GuardedAreas() { ::munmap(map_, map_len_); }
    GuardedAreas(const GuardedAreas&) = delete;
    GuardedAreas& operator=(const GuardedAreas&) = delete;

    [[nodiscard]] std::uint8_t* area(int a) const noexcept { return map_ + (2 * a + 1) * kAreaLen; }
    // The area holding [p, p + n), or -1.
    [[nodiscard]] int find(const std::uint8_t* p, std::size_t n) const noexcept {
        for (int a = 0; a < kAreas; ++a)
            if (p >= area(a) && n <= kAreaLen &&
                p - area(a) <= static_cast<std::ptrdiff_t>(kAreaLen - n))
                return a;
        return -1;
    }
    // Sets `bit` in the mask bytes of [p, p + n) clipped to the areas.
    ROCE_PEER_NO_COVERAGE void mark(Mask& m, const std::uint8_t* p, std::size_t n,
                                    std::uint8_t bit) const noexcept {
        for (int a = 0; a < kAreas; ++a) {
            const std::uint8_t* lo = std::max(p, static_cast<const std::uint8_t*>(area(a)));
            const std::uint8_t* hi =
                std::min(p + n, static_cast<const std::uint8_t*>(area(a) + kAreaLen));
            for (std::uint8_t* b = m.b[a].data() + (lo - area(a)); lo < hi; ++lo, ++b)
                *b |= bit;
        }
    }

    // Every area holds its canary pattern again; nothing is revoked.
    void reset() noexcept {
        for (int a = 0; a < kAreas; ++a) {
            std::memcpy(area(a), canary_[a].data(), kAreaLen);
            std::memcpy(shadow_[a].data(), canary_[a].data(), kAreaLen);
        }
        std::memset(revoked_at_.data(), 0, sizeof revoked_at_);
    }

    // The check described at the top. `step` and `what` name the step in the finding.
    [[nodiscard]] ROCE_PEER_NO_COVERAGE std::string check(const Mask& allowed, int step,
                                                          const char* what) noexcept {
        std::string finding;
        changed = 0;
        revoked_by = 0;
        for (int a = 0; a < kAreas; ++a) {
            if (std::memcmp(area(a), shadow_[a].data(), kAreaLen) == 0) continue;
            for (std::size_t i = 0; i < kAreaLen; ++i)
                changed += area(a)[i] != shadow_[a][i];
            for (std::size_t i = 0; i < kAreaLen && finding.empty(); ++i) {
                if (area(a)[i] == shadow_[a][i] || allowed.b[a][i]) continue;
                std::size_t n = 0; // the run of forbidden changes from i
                while (i + n < kAreaLen && area(a)[i + n] != shadow_[a][i + n] &&
                       !allowed.b[a][i + n])
                    ++n;
                char buf[320];
                const int rev = revoked_at_[a][i];
                char why[96] =
                    "not granted to this frame's QP, key and kind (a canary if never granted)";
                if (rev)
                    std::snprintf(why, sizeof why,
                                  "that memory was revoked and refilled by step %d", rev);
                std::snprintf(buf, sizeof buf,
                              "step %d (%s): %zu byte(s) of area %d changed at offset %zu "
                              "(was 0x%02x, now 0x%02x) outside the step's grants; %s",
                              step, what, n, a, i, shadow_[a][i], area(a)[i], why);
                finding = buf;
                revoked_by = rev;
            }
            std::memcpy(shadow_[a].data(), area(a), kAreaLen);
        }
        return finding;
    }

    // Revocation: a kind of access `before` granted and `after` does not; the program
    // refills with a fresh pattern (a program reusing its buffer); it is
    // remembered as revoked by `step`.
    ROCE_PEER_NO_COVERAGE void refill_revoked(const Mask& before, const Mask& after,
                                              int step) noexcept {
        for (int a = 0; a < kAreas; ++a) {
            if (std::memcmp(before.b[a].data(), after.b[a].data(), kAreaLen) == 0) continue;
            for (std::size_t i = 0; i < kAreaLen; ++i)
                if (before.b[a][i] & ~after.b[a][i]) {
                    area(a)[i] = shadow_[a][i] = static_cast<std::uint8_t>(0xe7 ^ step ^ i);
                    revoked_at_[a][i] = static_cast<std::uint16_t>(step);
                }
        }
    }

    std::size_t changed = 0; // bytes the last check() saw changed (for traces)
    int revoked_by = 0;      // its finding: the step that revoked the byte, 0 for a canary

private:
    std::uint8_t* map_ = nullptr;
    std::size_t map_len_ = 0;
    std::array<std::array<std::uint8_t, kAreaLen>, kAreas> shadow_{};
    std::array<std::array<std::uint8_t, kAreaLen>, kAreas> canary_{};
    std::array<std::array<std::uint16_t, kAreaLen>, kAreas> revoked_at_{};
};

} // namespace rdmasim::test::roce_peer
