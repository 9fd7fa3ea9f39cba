// Round axis steps and tick labels for the HTML report's charts
// (sim/README.md, "HTML report"): ticks at 0, s, 2s, ... with s 1, 2 or 5
// times a power of ten, labelled "0.2 ms" or "40k frames/s".
#pragma once

#include <string>
#include <string_view>

namespace rdmasim::sim {

struct AxisScale {
    double step = 1; // 1, 2 or 5 times a power of ten
    int ticks = 1;   // ticks above 0; the axis ends at top()
    [[nodiscard]] double top() const noexcept { return step * ticks; }
};

// The scale whose ticks cover [0, max] with at most `most` steps, the
// smallest such step; max <= 0 (or not finite) gives 0..1.
[[nodiscard]] AxisScale round_scale(double max, int most = 5) noexcept;

// The label of the tick at `value` (a multiple of scale.step): in k or M
// when the axis reaches 10,000 or 1,000,000, with the decimals the step
// needs and no more, then " unit" when `unit` is not empty.
[[nodiscard]] std::string tick_label(double value, const AxisScale& scale, std::string_view unit);

} // namespace rdmasim::sim
