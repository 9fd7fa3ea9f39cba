// The random numbers behind every seeded fault decision (sim/README.md,
// "Fault injection"): splitmix64, small, fast and the same numbers on every
// platform (the standard library's distributions are not).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rdmasim::sim {

class FaultRng {
public:
    explicit FaultRng(std::uint64_t seed) noexcept : state_(seed) {}
    std::uint64_t next() noexcept {
        std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    // Uniform in [0, 1).
    double unit() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    // Uniform in [0, n), n > 0.
    std::uint64_t below(std::uint64_t n) noexcept { return next() % n; }

private:
    std::uint64_t state_;
};

// A fault's own stream: the plan's seed mixed with the fault's position in
// the plan, so that adding a fault leaves the others' decisions as they were.
[[nodiscard]] inline std::uint64_t fault_stream_seed(std::uint64_t seed, std::size_t index) noexcept {
    FaultRng mix(seed ^ (0xd1b54a32d192ed03ull * (index + 1)));
    return mix.next();
}

} // namespace rdmasim::sim
