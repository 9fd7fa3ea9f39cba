// The HTML report's axes: round steps and their labels (sim/chart_axis.hpp).
#include <catch2/catch.hpp>

#include <limits>
#include <string>
#include <vector>

#include "sim/chart_axis.hpp"

using rdmasim::sim::AxisScale;
using rdmasim::sim::round_scale;
using rdmasim::sim::tick_label;

namespace {

std::vector<std::string> labels(double max, std::string_view unit) {
    const AxisScale s = round_scale(max);
    std::vector<std::string> out;
    for (int i = 0; i <= s.ticks; ++i)
        out.push_back(tick_label(s.step * i, s, unit));
    return out;
}

} // namespace

TEST_CASE("round_scale: the smallest step of 1, 2 or 5 times ten to the n that covers max in 5",
          "[report]") {
    struct Row {
        double max, step;
        int ticks;
    };
    for (const Row& r : {Row{40620, 10000, 5}, Row{0.9075, 0.2, 5}, Row{3, 1, 3}, Row{1e6, 2e5, 5},
                         Row{1, 0.2, 5}, Row{7, 2, 4}, Row{12345, 5000, 3}, Row{0.004, 0.001, 4}}) {
        const AxisScale s = round_scale(r.max);
        INFO("max " << r.max);
        CHECK(s.step == Approx(r.step));
        CHECK(s.ticks == r.ticks);
        CHECK(s.top() >= r.max);
    }
    CHECK(round_scale(0).top() == 1);
    CHECK(round_scale(-3).top() == 1);
    CHECK(round_scale(std::numeric_limits<double>::infinity()).top() == 1);
}

TEST_CASE("tick_label: round values with k or M and the unit, no spurious digits", "[report]") {
    CHECK(labels(40620, "frames/s") == std::vector<std::string>{"0 frames/s", "10k frames/s",
                                                                "20k frames/s", "30k frames/s",
                                                                "40k frames/s", "50k frames/s"});
    CHECK(labels(0.9075, "ms") ==
          std::vector<std::string>{"0 ms", "0.2 ms", "0.4 ms", "0.6 ms", "0.8 ms", "1.0 ms"});
    CHECK(labels(3, "") == std::vector<std::string>{"0", "1", "2", "3"});
    CHECK(labels(2.4e6, "drops/s") == std::vector<std::string>{"0 drops/s", "0.5M drops/s",
                                                               "1.0M drops/s", "1.5M drops/s",
                                                               "2.0M drops/s", "2.5M drops/s"});
    CHECK(labels(1500, "frames") ==
          std::vector<std::string>{"0 frames", "500 frames", "1000 frames", "1500 frames"});
}
