// Predicted against measured: one square panel per quantity.
#include <fmt/format.h>

#include <algorithm>

#include "remat/report/svg.hpp"
#include "svg_frame.hpp"

namespace remat {

using namespace svg_detail;

namespace {

constexpr double kPanel = 300, kGap = 110, kLeft = 80, kTop = 50;

// The range both axes share: every point, padded by the band.
std::pair<double, double> panel_range(const ScatterPanel& p) {
  double lo = 0, hi = 0;
  bool any = false;
  for (const auto& pt : p.points)
    for (double v : {pt.predicted, pt.measured}) {
      if (!any) lo = hi = v, any = true;
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
  if (!any) return {0, 1};
  const double pad = std::max((hi - lo) * 0.05, hi * p.band_pct / 100);
  return {std::max(0.0, lo - pad), hi + pad};
}

std::string panel_svg(const ScatterPanel& p, double left) {
  const auto [lo, hi] = panel_range(p);
  const Frame f{left, left + kPanel, kTop, kTop + kPanel, lo, hi, lo, hi};
  std::string out = f.axes("measured", "predicted", true);
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>\n",
                     left + kPanel / 2, kTop - 8, escape(p.title));
  out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#888\"/>\n", f.x(lo),
                     f.y(lo), f.x(hi), f.y(hi));
  for (double sign : {-1.0, 1.0}) {
    const double k = 1 + sign * p.band_pct / 100;  // predicted = k * measured, clipped to the panel
    const double x_start = std::max(lo, lo / k), x_end = std::min(hi, hi / k);
    out += fmt::format(
        "<line class=\"band\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#888\" "
        "stroke-dasharray=\"4 3\"/>\n",
        f.x(x_start), f.y(k * x_start), f.x(x_end), f.y(k * x_end));
  }
  for (const auto& pt : p.points)
    out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\" fill-opacity=\"0.8\"/>\n",
                       f.x(pt.measured), f.y(pt.predicted), color(pt.group));
  out += fmt::format("<text x=\"{}\" y=\"{}\">dashed: {:+g}% / {:+g}%</text>\n", left + 6, kTop + 14, p.band_pct,
                     -p.band_pct);
  return out;
}

}  // namespace

std::string predicted_vs_measured_svg(const std::string& title, const std::vector<std::string>& group_names,
                                      const std::vector<ScatterPanel>& panels) {
  const double panels_width = double(panels.size()) * (kPanel + kGap);
  std::string out = open_svg(kLeft + panels_width + 160, kTop + kPanel + 60, title);
  for (size_t i = 0; i < panels.size(); ++i) out += panel_svg(panels[i], kLeft + double(i) * (kPanel + kGap));
  return out + legend(kLeft + panels_width - kGap + 30, kTop + 10, group_names) + "</svg>\n";
}

}  // namespace remat
