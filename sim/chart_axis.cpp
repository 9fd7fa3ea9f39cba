#include "sim/chart_axis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace rdmasim::sim {

AxisScale round_scale(double max, int most) noexcept {
    if (!(max > 0) || !std::isfinite(max) || most < 1) return {};
    const double power = std::pow(10.0, std::floor(std::log10(max / most)));
    double step = 10 * power;
    for (const double m : std::array{1.0, 2.0, 5.0})
        if (m * power * most >= max * (1 - 1e-12)) {
            step = m * power;
            break;
        }
    const int ticks = std::max(1, static_cast<int>(std::ceil(max / step - 1e-9)));
    return {step, ticks};
}

std::string tick_label(double value, const AxisScale& scale, std::string_view unit) {
    const double top = scale.top();
    const double divisor = top >= 1e6 ? 1e6 : top >= 1e4 ? 1e3 : 1;
    const std::string_view suffix = top >= 1e6 ? "M" : top >= 1e4 ? "k" : "";
    const double step = scale.step / divisor;
    const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
    std::string s =
        value == 0 ? std::string("0") : fmt::format("{:.{}f}{}", value / divisor, decimals, suffix);
    if (!unit.empty()) s += fmt::format(" {}", unit);
    return s;
}

} // namespace rdmasim::sim
