#include "sim/html_report.hpp"
#include "sim/chart_axis.hpp"
#include "sim/output_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace rdmasim::sim {

namespace {

constexpr int kWidth = 820, kHeight = 280;
constexpr int kLeft = 100, kRight = 190, kTop = 20, kBottom = 45;
constexpr int kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
constexpr std::size_t kMaxPoints = 60;  // points per series drawn (samples are merged to fit)
constexpr std::size_t kMaxLines = 16;   // queues drawn one by one; the rest as one line
constexpr std::array<std::string_view, 10> kColors{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                                   "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                                   "#bcbd22", "#17becf"};

std::string_view color(std::size_t i) { return kColors[i % kColors.size()]; }

// 4 significant digits, with k and M for thousands and millions.
std::string num(double v) {
    if (v >= 1e6) return fmt::format("{:.4g}M", v / 1e6);
    if (v >= 1e4) return fmt::format("{:.4g}k", v / 1e3);
    return fmt::format("{:.4g}", v);
}

struct Series {
    std::string name;
    std::vector<std::pair<double, double>> points; // (seconds, value)
};

// The time axis in a readable unit.
struct TimeUnit {
    double scale;
    std::string_view name;
};
TimeUnit time_unit(double max_s) {
    if (max_s < 1e-3) return {1e6, "us"};
    if (max_s < 1) return {1e3, "ms"};
    return {1, "s"};
}

// The two axes, their ticks at round steps (sim/chart_axis.hpp) and titles;
// no x ticks without `x` (the bar charts name their bars instead).
std::string axes(const AxisScale* x, std::string_view x_unit, const AxisScale& y,
                 std::string_view y_unit, std::string_view x_label, std::string_view y_label) {
    std::string s = fmt::format(
        "<g class=\"axes\" stroke=\"#444\"><line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>"
        "<line x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\"/></g>",
        kLeft, kTop, kTop + kPlotH, kLeft + kPlotW);
    s += "<g class=\"ticks\" font-size=\"11\" fill=\"#333\">";
    for (int i = 0; i <= y.ticks; ++i) {
        const double py = kTop + kPlotH - kPlotH * static_cast<double>(i) / y.ticks;
        s +=
            fmt::format("<text class=\"y-tick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>"
                        "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>",
                        kLeft - 6, py + 4, html_escape(tick_label(y.step * i, y, y_unit)),
                        kLeft + 1, py, kLeft + kPlotW, py);
    }
    for (int i = 0; x != nullptr && i <= x->ticks; ++i)
        s += fmt::format(
            "<text class=\"x-tick\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            kLeft + kPlotW * static_cast<double>(i) / x->ticks, kTop + kPlotH + 16,
            html_escape(tick_label(x->step * i, *x, x_unit)));
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", kLeft + kPlotW / 2,
                     kHeight - 6, html_escape(x_label));
    s += fmt::format("<text transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
                     kTop + kPlotH / 2, html_escape(y_label));
    return s + "</g>";
}

std::string legend(const std::vector<std::string>& names) {
    std::string s = "<g class=\"legend\" font-size=\"12\">";
    for (std::size_t i = 0; i < names.size(); ++i) {
        const int y = kTop + 6 + static_cast<int>(i) * 16;
        s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"10\" fill=\"{}\"/>"
                         "<text x=\"{}\" y=\"{}\">{}</text>",
                         kLeft + kPlotW + 14, y, color(i), kLeft + kPlotW + 30, y + 9,
                         html_escape(names[i]));
    }
    return s + "</g>";
}

std::string figure(std::string_view id, std::string_view title, std::string_view body,
                   std::string_view note) {
    std::string s = fmt::format(
        "<figure id=\"{0}\"><figcaption>{1}</figcaption>"
        "<svg class=\"chart\" data-chart=\"{0}\" xmlns=\"http://www.w3.org/2000/svg\" "
        "viewBox=\"0 0 {2} {3}\" width=\"{2}\" height=\"{3}\" role=\"img\" aria-label=\"{1}\">",
        id, html_escape(title), kWidth, kHeight);
    s += body;
    s += "</svg>";
    if (!note.empty()) s += fmt::format("<p class=\"note\">{}</p>", html_escape(note));
    return s + "</figure>\n";
}

// One polyline per series (class "series"), over a shared time axis.
std::string line_chart(std::string_view id, std::string_view title, std::string_view y_label,
                       const std::vector<Series>& series, std::string_view note) {
    double x_max = 0, y_max = 0;
    for (const auto& s : series)
        for (const auto& [x, y] : s.points) {
            x_max = std::max(x_max, x);
            y_max = std::max(y_max, y);
        }
    const TimeUnit unit = time_unit(x_max);
    const AxisScale xs = round_scale(x_max * unit.scale), ys = round_scale(y_max);
    std::string body = axes(x_max > 0 ? &xs : nullptr, unit.name, ys, y_label, "time", y_label);
    // Drawn against the axes' ends, which the round steps put at or past the data's.
    x_max = xs.top() / unit.scale;
    y_max = ys.top();
    std::vector<std::string> names;
    for (std::size_t i = 0; i < series.size(); ++i) {
        std::string pts;
        for (const auto& [x, y] : series[i].points)
            fmt::format_to(std::back_inserter(pts), "{:.1f},{:.1f} ",
                           kLeft + (x_max > 0 ? kPlotW * x / x_max : 0.0),
                           kTop + kPlotH - kPlotH * y / y_max);
        body += fmt::format("<polyline class=\"series\" data-name=\"{}\" fill=\"none\" "
                            "stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>",
                            html_escape(series[i].name), color(i), pts);
        if (series[i].points.size() == 1) // a single point draws no line: mark it
            body += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>",
                                kLeft + (x_max > 0 ? kPlotW * series[i].points[0].first / x_max : 0.0),
                                kTop + kPlotH - kPlotH * series[i].points[0].second / y_max, color(i));
        names.push_back(series[i].name);
    }
    return figure(id, title, body + legend(names), note);
}

struct Bar {
    std::string name;
    double value;
};
struct Band {
    double mean, low, high;
};

// One rect per bar (class "bar"); with a band, the expected range is drawn
// behind the bars and its mean as a dashed line.
std::string bar_chart(std::string_view id, std::string_view title, std::string_view y_label,
                      const std::vector<Bar>& bars, const Band* band, std::string_view note) {
    double y_max = 0;
    for (const auto& b : bars) y_max = std::max(y_max, b.value);
    if (band) y_max = std::max(y_max, band->high);
    const AxisScale ys = round_scale(y_max * 1.05);
    y_max = ys.top();
    const auto y_of = [&](double v) { return kTop + kPlotH - kPlotH * v / y_max; };
    std::string body = axes(nullptr, "", ys, y_label, "", y_label);
    if (band)
        body += fmt::format("<rect class=\"band\" x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" "
                            "fill=\"#2ca02c\" fill-opacity=\"0.15\"/>",
                            kLeft + 1, y_of(band->high), kPlotW - 1,
                            y_of(std::max(band->low, 0.0)) - y_of(band->high));
    const double slot = static_cast<double>(kPlotW) / static_cast<double>(std::max<std::size_t>(bars.size(), 1));
    const bool labels = bars.size() <= 32;
    for (std::size_t i = 0; i < bars.size(); ++i) {
        const double x = kLeft + slot * static_cast<double>(i) + slot * 0.15;
        const double h = kTop + kPlotH - y_of(bars[i].value);
        body += fmt::format("<rect class=\"bar\" data-name=\"{}\" data-value=\"{}\" x=\"{:.1f}\" "
                            "y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\">"
                            "<title>{}: {}</title></rect>",
                            html_escape(bars[i].name), num(bars[i].value), x, y_of(bars[i].value),
                            std::max(slot * 0.7, 0.5), std::max(h, 0.0), band ? "#1f77b4" : color(i),
                            html_escape(bars[i].name), num(bars[i].value));
        if (labels)
            body += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
                                x + slot * 0.35, kTop + kPlotH + 14, html_escape(bars[i].name));
    }
    std::vector<std::string> names;
    if (band) {
        body += fmt::format("<line class=\"mean\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" "
                            "stroke=\"#2ca02c\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>",
                            kLeft, y_of(band->mean), kLeft + kPlotW, y_of(band->mean));
        body += fmt::format("<g class=\"legend\" font-size=\"12\"><rect x=\"{0}\" y=\"{1}\" width=\"12\" "
                            "height=\"10\" fill=\"#1f77b4\"/><text x=\"{2}\" y=\"{3}\">measured</text>"
                            "<rect x=\"{0}\" y=\"{4}\" width=\"12\" height=\"10\" fill=\"#2ca02c\" "
                            "fill-opacity=\"0.3\"/><text x=\"{2}\" y=\"{5}\">uniform: mean &#177; 2&#963;</text></g>",
                            kLeft + kPlotW + 14, kTop + 6, kLeft + kPlotW + 30, kTop + 15, kTop + 22,
                            kTop + 31);
    }
    return figure(id, title, body, note);
}

// Indexes of the samples drawn: at most kMaxPoints + 1, the first and last always.
std::vector<std::size_t> drawn(std::size_t n) {
    std::vector<std::size_t> idx;
    if (n == 0) return idx;
    const std::size_t stride = std::max<std::size_t>(1, (n - 1 + kMaxPoints - 1) / kMaxPoints);
    for (std::size_t i = 0; i < n; i += stride) idx.push_back(i);
    if (idx.back() != n - 1) idx.push_back(n - 1);
    return idx;
}

// A per-second rate between drawn samples of a cumulative count.
template <class Count>
std::vector<std::pair<double, double>> rate(const std::vector<TimelineSample>& samples,
                                            const std::vector<std::size_t>& idx, Count count) {
    std::vector<std::pair<double, double>> pts;
    for (std::size_t k = 1; k < idx.size(); ++k) {
        const TimelineSample& a = samples[idx[k - 1]];
        const TimelineSample& b = samples[idx[k]];
        if (b.t_ns <= a.t_ns) continue;
        const double ca = static_cast<double>(count(a)), cb = static_cast<double>(count(b));
        pts.emplace_back(static_cast<double>(b.t_ns) / 1e9,
                         std::max(cb - ca, 0.0) * 1e9 / static_cast<double>(b.t_ns - a.t_ns));
    }
    return pts;
}

std::uint64_t queue_frames(const TimelineSample& s, std::uint32_t qpn) {
    for (const auto& [q, f] : s.queue_frames)
        if (q == qpn) return f;
    return 0;
}

std::string queue_name(const HtmlReport& r, std::uint32_t qpn) {
    const auto it = r.queue_names.find(qpn);
    return it != r.queue_names.end() ? it->second : fmt::format("queue {:#x}", qpn);
}

std::string rate_chart(const HtmlReport& r, const std::vector<std::size_t>& idx) {
    const auto& samples = r.timeline.samples;
    std::vector<std::pair<std::uint64_t, std::uint32_t>> by_frames; // busiest first
    for (const auto& [qpn, c] : r.timeline.queues) by_frames.emplace_back(c.frames, qpn);
    std::stable_sort(by_frames.begin(), by_frames.end(), [](auto a, auto b) { return a.first > b.first; });
    std::vector<std::uint32_t> shown;
    for (std::size_t i = 0; i < by_frames.size() && i < kMaxLines; ++i) shown.push_back(by_frames[i].second);
    std::sort(shown.begin(), shown.end(), [&](std::uint32_t a, std::uint32_t b) {
        return queue_name(r, a) < queue_name(r, b);
    });
    std::vector<Series> series;
    for (const std::uint32_t q : shown)
        series.push_back({queue_name(r, q), rate(samples, idx, [q](const TimelineSample& s) {
                              return queue_frames(s, q);
                          })});
    std::string note;
    if (by_frames.size() > shown.size()) {
        series.push_back({"other queues", rate(samples, idx, [&](const TimelineSample& s) {
                              std::uint64_t n = 0;
                              for (const auto& [q, f] : s.queue_frames)
                                  if (std::find(shown.begin(), shown.end(), q) == shown.end()) n += f;
                              return n;
                          })});
        note = fmt::format("The {} busiest queues one by one, the other {} as one line.", shown.size(),
                           by_frames.size() - shown.size());
    }
    if (series.empty()) {
        series.push_back({"port", rate(samples, idx, [](const TimelineSample& s) { return s.port.frames; })});
        note = "No receive queue was attached: the port's frames offered.";
    }
    return line_chart("rate", "Frames per second per receive queue", "frames/s", series, note);
}

std::string drops_chart(const HtmlReport& r, const std::vector<std::size_t>& idx) {
    const auto& samples = r.timeline.samples;
    std::vector<Series> series;
    const CountSnapshot last = samples.empty() ? CountSnapshot{} : samples.back().port;
    for (std::size_t d = 0; d < datapath::kDropKinds; ++d) {
        if (last.drops[d] == 0) continue;
        series.push_back({fmt::format("{} ({})", datapath::drop_name(static_cast<datapath::Drop>(d)),
                                      last.drops[d]),
                          rate(samples, idx, [d](const TimelineSample& s) { return s.port.drops[d]; })});
    }
    std::string note;
    if (series.empty()) {
        series.push_back({"all reasons (0)", rate(samples, idx, [](const TimelineSample&) { return 0; })});
        note = "No frame was dropped.";
    }
    return line_chart("drops", "Drops per second by reason (port)", "drops/s", series, note);
}

std::string delay_chart(const HtmlReport& r, const std::vector<std::size_t>& idx) {
    const auto& samples = r.timeline.samples;
    const CountSnapshot last = samples.empty() ? CountSnapshot{} : samples.back().port;
    std::vector<Series> series{
        {fmt::format("held for a WQE ({})", last.delay_drop_waits),
         rate(samples, idx, [](const TimelineSample& s) { return s.port.delay_drop_waits; })},
        {fmt::format("timed out ({})", last.drop(datapath::Drop::delay_drop_timeout)),
         rate(samples, idx,
              [](const TimelineSample& s) { return s.port.drop(datapath::Drop::delay_drop_timeout); })}};
    return line_chart("delay", "Delay drop: frames held and timeouts per second", "frames/s", series,
                      last.delay_drop_waits == 0 ? "No frame waited for a WQE (delay drop off, or "
                                                   "WQEs were always posted in time)."
                                                 : "");
}

std::string rss_chart(const HtmlReport& r) {
    std::vector<std::uint32_t> queues = r.rss_queues;
    if (queues.empty())
        for (const auto& [qpn, c] : r.timeline.queues) queues.push_back(qpn);
    std::vector<Bar> bars;
    double total = 0;
    for (const std::uint32_t q : queues) {
        const auto it = r.timeline.queues.find(q);
        const double f = it == r.timeline.queues.end() ? 0.0 : static_cast<double>(it->second.frames);
        bars.push_back({queue_name(r, q), f});
        total += f;
    }
    if (bars.empty())
        return bar_chart("rss", "RSS spread across receive queues", "frames", {{"none", 0}}, nullptr,
                         "No receive queue was attached.");
    // Each frame lands on one of k queues with p = 1/k: binomial(total, p).
    const double k = static_cast<double>(bars.size());
    const double mean = total / k;
    const double sigma = std::sqrt(total * (1 / k) * (1 - 1 / k));
    const Band band{mean, mean - 2 * sigma, mean + 2 * sigma};
    return bar_chart("rss", "RSS spread across receive queues", "frames", bars, &band,
                     fmt::format("{} frames over {} queues. Green: what a uniform hash of independent "
                                 "frames gives, mean {} and +/- 2 sigma ({} .. {}). Frames of one flow "
                                 "hash alike, so a capture of few flows spreads wider; frames no RSS "
                                 "class matches go to the catch-all queue.",
                                 num(total), bars.size(), num(mean), num(std::max(band.low, 0.0)),
                                 num(band.high)));
}

std::string status_chart(const HtmlReport& r) {
    std::vector<Bar> bars;
    std::uint64_t total = 0;
    for (const auto& [name, n] : r.statuses) total += n;
    for (const auto& [name, n] : r.statuses) bars.push_back({fmt::format("{} ({})", name, n), static_cast<double>(n)});
    if (bars.empty()) bars.push_back({"none (0)", 0});
    return bar_chart("status", "Completion status mix", "completions", bars, nullptr,
                     fmt::format("{} completions.", total));
}

std::string config_table(const HtmlReport& r) {
    std::string s = "<table id=\"config\"><caption>Configuration</caption>";
    for (const auto& [k, v] : r.config)
        s += fmt::format("<tr><th>{}</th><td>{}</td></tr>", html_escape(k), html_escape(v));
    return s + "</table>\n";
}

} // namespace

std::string html_escape(std::string_view in) {
    std::string out;
    out.reserve(in.size());
    for (const char c : in) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
        }
    }
    return out;
}

std::string render_html_report(const HtmlReport& r) {
    const auto idx = drawn(r.timeline.samples.size());
    std::string s = fmt::format(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{0}</title>\n"
        "<style>body{{font-family:sans-serif;margin:2em;color:#222}}figure{{margin:1.5em 0}}"
        "figcaption{{font-weight:bold;margin-bottom:.3em}}.note{{color:#555;max-width:820px;font-size:.9em}}"
        "table{{border-collapse:collapse;margin:1em 0}}th,td{{border:1px solid #ccc;padding:.2em .6em;"
        "text-align:left;vertical-align:top}}pre{{background:#f6f6f6;padding:1em;overflow:auto}}</style>"
        "</head>\n<body><h1>{0}</h1>\n<p>{1} samples of the counters, {2}; charts plot rates "
        "between them.</p>\n",
        html_escape(r.title), r.timeline.samples.size(), html_escape(r.clock));
    s += config_table(r);
    s += rate_chart(r, idx);
    s += drops_chart(r, idx);
    s += delay_chart(r, idx);
    s += rss_chart(r);
    s += status_chart(r);
    s += fmt::format("<h2>Counters at the end</h2><pre id=\"counters\">{}</pre>\n</body></html>\n",
                     html_escape(r.counters));
    return s;
}

Result<void> write_html_report(const std::string& path, const HtmlReport& report) {
    return write_output_file("report", path, render_html_report(report));
}

} // namespace rdmasim::sim
