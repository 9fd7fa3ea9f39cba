// libFuzzer target: a hostile RoCE v2 peer against RC, UC, UD and XRC target
// QPs of one emulated device, with revoking verbs between its frames
// (roce_peer.hpp: the input, the steps and the invariants). One device for
// the whole run, fresh verbs objects and memory contents per input, so no
// state that changes an outcome carries over. A broken invariant prints the
// finding, naming the step, and aborts.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>

#include "tests/fuzz/roce_peer.hpp"

using rdmasim::test::RocePeerHarness;

// Every input creates and frees a few hundred KB of verbs objects; with
// ASan's default 256 MB quarantine each input touches fresh pages (a third
// of the run in page faults). 4 MB still holds the frees of the last inputs.
extern "C" const char* __asan_default_options() {
    return "quarantine_size_mb=4";
}

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

// Mutations of whole steps (swap, duplicate, delete, another kind, a random
// verb) besides
// libFuzzer's byte mutations: an exchange is reordered, or a verb lands
// between two frames of a message, in one move.
extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
    constexpr std::size_t kLen = RocePeerHarness::kStepLen;
    std::minstd_rand rng(seed);
    const std::size_t n = size > 0 ? (size - 1) / kLen : 0;
    std::uint8_t* steps = data + 1;
    const auto at = [&](std::size_t i) { return steps + i * kLen; };
    switch (rng() % 7) {
    case 1: // swap two steps
        if (n < 2) break;
        {
            const std::size_t a = rng() % n, b = rng() % n;
            std::array<std::uint8_t, kLen> t;
            std::memcpy(t.data(), at(a), kLen);
            std::memmove(at(a), at(b), kLen);
            std::memcpy(at(b), t.data(), kLen);
        }
        return size;
    case 2: { // a copy of a step inserted anywhere, every other time with one byte changed
        if (n < 1 || size + kLen > max_size) break;
        const std::size_t src = rng() % n, dst = rng() % (n + 1);
        std::array<std::uint8_t, kLen> t;
        std::memcpy(t.data(), at(src), kLen);
        if (rng() & 1) t[1 + rng() % (kLen - 1)] = static_cast<std::uint8_t>(rng());
        std::memmove(at(dst) + kLen, at(dst), size - 1 - dst * kLen);
        std::memcpy(at(dst), t.data(), kLen);
        return size + kLen;
    }
    case 3: { // delete a step
        if (n < 1) break;
        const std::size_t i = rng() % n;
        std::memmove(at(i), at(i + 1), size - 1 - (i + 1) * kLen);
        return size - kLen;
    }
    case 5: { // a random verb inserted anywhere (the revocation the fuzzer most needs)
        if (size == 0 || size + kLen > max_size) break;
        const std::size_t dst = rng() % (n + 1);
        std::memmove(at(dst) + kLen, at(dst), size - 1 - dst * kLen);
        for (std::size_t j = 0; j < kLen; ++j)
            at(dst)[j] = static_cast<std::uint8_t>(rng());
        at(dst)[0] = static_cast<std::uint8_t>(7 + rng() % 9);
        return size + kLen;
    }
    case 4: // another kind of step, the same bytes
        if (n < 1) break;
        at(rng() % n)[0] = static_cast<std::uint8_t>(rng());
        return size;
    default:
        break;
    }
    return LLVMFuzzerMutate(data, size, max_size);
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static RocePeerHarness harness;
    const std::string finding = harness.run(std::span<const std::uint8_t>(data, size));
    if (!finding.empty()) {
        std::fprintf(stderr, "fuzz_roce_peer: invariant broken: %s\n", finding.c_str());
        std::abort();
    }
    return 0;
}
