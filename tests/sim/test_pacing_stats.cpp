// The lateness histogram behind a paced replay's "pacing" report: buckets
// that cover every value, quantiles never below the truth and at most 1/16
// above it, exact below 32 ns.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "sim/pacing_stats.hpp"

using rdmasim::sim::PacingStats;

TEST_CASE("pacing stats: every lateness falls in a bucket whose bounds hold it", "[sim][pacing]") {
    std::vector<std::uint64_t> values;
    for (std::uint64_t v = 0; v < 5000; ++v)
        values.push_back(v);
    for (unsigned e = 12; e < 64; ++e)
        for (std::uint64_t d : {0ull, 1ull, 3ull})
            values.push_back((std::uint64_t{1} << e) - d);
    values.push_back(std::numeric_limits<std::uint64_t>::max());
    std::size_t last = 0;
    std::uint64_t last_v = 0;
    for (std::uint64_t v : values) {
        const std::size_t b = PacingStats::bucket_of(v);
        REQUIRE(b < PacingStats::kBuckets);
        CHECK(v <= PacingStats::bucket_upper(b));
        if (b > 0) CHECK(v > PacingStats::bucket_upper(b - 1)); // the bucket below ends under v
        if (v >= last_v) CHECK(b >= last);                      // monotonic
        if (v < 32)
            CHECK(PacingStats::bucket_upper(b) == v); // exact
        else
            CHECK(PacingStats::bucket_upper(b) - v <= v / 16); // within 1/16
        last = b;
        last_v = v;
    }
    CHECK(PacingStats::bucket_of(std::numeric_limits<std::uint64_t>::max()) ==
          PacingStats::kBuckets - 1);
}

TEST_CASE("pacing stats: quantiles, max and the schedule of a known set of frames",
          "[sim][pacing]") {
    PacingStats p;
    CHECK(p.frames() == 0);
    CHECK(p.quantile_ns(0.99) == 0);

    // 1000 frames 1 ms apart, frame i late by (i + 1) us, in shuffled order of lateness.
    std::vector<std::uint64_t> late(1000);
    for (std::size_t i = 0; i < late.size(); ++i)
        late[i] = (i + 1) * 1000;
    std::shuffle(late.begin(), late.end(), std::mt19937(7));
    for (std::size_t i = 0; i < late.size(); ++i)
        p.record(i * 1'000'000, i * 1'000'000 + late[i]);

    CHECK(p.frames() == 1000);
    CHECK(p.max_ns() == 1'000'000);
    CHECK(p.schedule_ns() == 999'000'000);
    CHECK(p.elapsed_ns() == 999'000'000 + late.back());
    const std::uint64_t p50 = p.quantile_ns(0.50), p99 = p.quantile_ns(0.99);
    CHECK(p50 >= 500'000);
    CHECK(p50 <= 500'000 + 500'000 / 16);
    CHECK(p99 >= 990'000);
    CHECK(p99 <= 1'000'000); // capped at the max
    CHECK(p.quantile_ns(1.0) == 1'000'000);
    CHECK(p.quantile_ns(0.0) >= 1000); // the smallest
    CHECK(p.quantile_ns(0.0) <= 1000 + 1000 / 16);
}

TEST_CASE("pacing stats: a frame that entered early counts as on time", "[sim][pacing]") {
    PacingStats p;
    p.record(5000, 4000);
    p.record(6000, 6000);
    CHECK(p.frames() == 2);
    CHECK(p.max_ns() == 0);
    CHECK(p.quantile_ns(0.99) == 0);
}
