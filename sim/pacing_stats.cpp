#include "sim/pacing_stats.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace rdmasim::sim {

namespace {
constexpr unsigned kSubBits = 4; // 16 buckets per power of two
constexpr std::uint64_t kSub = 1u << kSubBits;
} // namespace

std::size_t PacingStats::bucket_of(std::uint64_t ns) noexcept {
    if (ns < 2 * kSub) return static_cast<std::size_t>(ns);               // exact
    const unsigned e = 63u - static_cast<unsigned>(std::countl_zero(ns)); // 2^e <= ns
    const std::uint64_t sub = (ns >> (e - kSubBits)) & (kSub - 1);
    return static_cast<std::size_t>((e - kSubBits + 1) * kSub + sub);
}

std::uint64_t PacingStats::bucket_upper(std::size_t bucket) noexcept {
    if (bucket < 2 * kSub) return bucket;
    const unsigned e = static_cast<unsigned>(bucket / kSub) + kSubBits - 1;
    const std::uint64_t sub = bucket % kSub;
    const unsigned shift = e - kSubBits;
    return ((kSub + sub) << shift) + ((std::uint64_t{1} << shift) - 1);
}

static_assert(PacingStats::kBuckets == (63 - kSubBits + 1) * kSub + kSub);

void PacingStats::record(std::uint64_t due_ns, std::uint64_t arrival_ns) noexcept {
    const std::uint64_t late = arrival_ns > due_ns ? arrival_ns - due_ns : 0;
    Cell& b = buckets_[bucket_of(late)];
    set(b, get(b) + 1);
    set(frames_, get(frames_) + 1);
    if (late > get(max_ns_)) set(max_ns_, late);
    set(last_due_ns_, due_ns);
    set(last_arrival_ns_, arrival_ns);
}

std::uint64_t PacingStats::quantile_ns(double q) const noexcept {
    const std::uint64_t n = frames();
    if (n == 0) return 0;
    const double want = std::ceil(q * static_cast<double>(n));
    const std::uint64_t rank = want < 1 ? 1 : static_cast<std::uint64_t>(want);
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < kBuckets; ++b) {
        seen += get(buckets_[b]);
        if (seen >= rank) return std::min(bucket_upper(b), max_ns());
    }
    return max_ns(); // a reader racing the writer
}

} // namespace rdmasim::sim
