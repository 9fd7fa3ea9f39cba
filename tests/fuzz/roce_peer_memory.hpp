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

// The byte loops below are the harness's bookkeeping over its own arrays,
// not code under test: built without coverage (a comparison callback per
// byte, and noise for the fuzzer) and without ASan's per-access checks.
#if defined(__clang__)
#define ROCE_PEER_UNINSTRUMENTED __attribute__((no_sanitize("coverage", "address")))
#else
#define ROCE_PEER_UNINSTRUMENTED
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
    ROCE_PEER_UNINSTRUMENTED void mark(Mask& m, const std::uint8_t* p, std::size_t n,
                                       std::uint8_t bit) const noexcept {
        // Raw pointers and no std:: calls in the loops: the fuzz build is -O0
        // with assertions, where every operator[] is a call and a compare.
        for (int a = 0; a < kAreas; ++a) {
            const std::uint8_t* start = area(a);
            const std::uint8_t* lo = p > start ? p : start;
            const std::uint8_t* hi = p + n < start + kAreaLen ? p + n : start + kAreaLen;
            for (std::uint8_t* b = m.b[a].data() + (lo - start); lo < hi; ++lo, ++b)
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
    [[nodiscard]] ROCE_PEER_UNINSTRUMENTED std::string check(const Mask& allowed, int step,
                                                             const char* what) noexcept {
        std::string finding;
        changed = 0;
        revoked_by = 0;
        for (int a = 0; a < kAreas; ++a) {
            const std::uint8_t* now = area(a);
            std::uint8_t* old = shadow_[a].data();
            const std::uint8_t* ok = allowed.b[a].data();
            if (std::memcmp(now, old, kAreaLen) == 0) continue;
            for (std::size_t i = 0; i < kAreaLen; ++i)
                changed += now[i] != old[i];
            for (std::size_t i = 0; i < kAreaLen && finding.empty(); ++i) {
                if (now[i] == old[i] || ok[i]) continue;
                std::size_t n = 0; // the run of forbidden changes from i
                while (i + n < kAreaLen && now[i + n] != old[i + n] && !ok[i + n])
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
                              step, what, n, a, i, old[i], now[i], why);
                finding = buf;
                revoked_by = rev;
            }
            std::memcpy(old, now, kAreaLen);
        }
        return finding;
    }

    // Revocation: a kind of access `before` granted and `after` does not; the program
    // refills with a fresh pattern (a program reusing its buffer); it is
    // remembered as revoked by `step`.
    ROCE_PEER_UNINSTRUMENTED void refill_revoked(const Mask& before, const Mask& after,
                                                 int step) noexcept {
        for (int a = 0; a < kAreas; ++a) {
            const std::uint8_t* was = before.b[a].data();
            const std::uint8_t* is = after.b[a].data();
            if (std::memcmp(was, is, kAreaLen) == 0) continue;
            std::uint8_t* mem = area(a);
            std::uint8_t* old = shadow_[a].data();
            std::uint16_t* rev = revoked_at_[a].data();
            for (std::size_t i = 0; i < kAreaLen; ++i)
                if (was[i] & ~is[i]) {
                    mem[i] = old[i] = static_cast<std::uint8_t>(0xe7 ^ step ^ i);
                    rev[i] = static_cast<std::uint16_t>(step);
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
