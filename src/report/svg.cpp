// SVG primitives: axes with "nice" ticks, legends, lines, bars.
#include "remat/report/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "remat/spec/text.hpp"
#include "svg_frame.hpp"

namespace remat::svg_detail {

const char* color(size_t i) {
  static const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                   "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kPalette[i % (sizeof(kPalette) / sizeof(kPalette[0]))];
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : escape_text(s)) {  // control characters and bytes that are not UTF-8 are not XML text
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

// Heckbert's nice numbers ("Nice numbers for graph labels", Graphics Gems 1990).
std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(target, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  const double step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  std::vector<double> out;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    out.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

std::string tick_label(double v) {
  std::string s = fmt::format("{:.4g}", v);
  return s;
}

std::string open_svg(double w, double h, const std::string& title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">{3}</text>\n",
      w, h, w / 2, escape(title));
}

std::string Frame::axes(const std::string& x_label, const std::string& y_label, bool x_ticks) const {
  std::string out = fmt::format(
      "<g class=\"axes\" stroke=\"black\">\n<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>\n"
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{3}\"/>\n</g>\n",
      left, bottom, right, top);
  for (double v : nice_ticks(y0, y1, 5))
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        left, y(v), right, left - 5, y(v) + 4, tick_label(v));
  if (x_ticks)
    for (double v : nice_ticks(x0, x1, 6))
      out += fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"black\"/>"
          "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
          x(v), bottom, bottom + 5, bottom + 18, tick_label(v));
  out += fmt::format("<text class=\"x-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", (left + right) / 2,
                     bottom + 36, escape(x_label));
  out += fmt::format(
      "<text class=\"y-label\" x=\"{0}\" y=\"{1}\" text-anchor=\"middle\" transform=\"rotate(-90 {0} "
      "{1})\">{2}</text>\n",
      left - 48, (top + bottom) / 2, escape(y_label));
  return out;
}

std::string legend(double x, double y, const std::vector<std::string>& labels) {
  std::string out = "<g class=\"legend\">\n";
  for (size_t i = 0; i < labels.size(); ++i)
    out += fmt::format(
        "<rect x=\"{0}\" y=\"{1:.1f}\" width=\"12\" height=\"12\" fill=\"{2}\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\">{5}</text>\n",
        x, y + 18.0 * double(i), color(i), x + 18, y + 18.0 * double(i) + 10, escape(labels[i]));
  return out + "</g>\n";
}

}  // namespace remat::svg_detail

namespace remat {

using namespace svg_detail;

std::string line_chart_svg(const std::string& title, const std::string& x_label, const std::string& y_label,
                           const std::vector<SvgSeries>& series) {
  Frame f{80, 640, 40, 330, 0, 1, 0, 1};
  bool any = false;
  for (const auto& s : series)
    for (auto [x, y] : s.points) {
      if (!any) f.x0 = f.x1 = x, f.y1 = y, any = true;
      f.x0 = std::min(f.x0, x), f.x1 = std::max(f.x1, x), f.y1 = std::max(f.y1, y);
    }
  if (f.x1 <= f.x0) f.x1 = f.x0 + 1;
  f.y1 = f.y1 > 0 ? f.y1 * 1.05 : 1;
  std::string out = open_svg(820, 390, title) + f.axes(x_label, y_label, true);
  std::vector<std::string> labels;
  for (size_t i = 0; i < series.size(); ++i) {
    labels.push_back(series[i].label);
    std::string pts;
    for (auto [x, y] : series[i].points) pts += fmt::format("{:.1f},{:.1f} ", f.x(x), f.y(y));
    out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", color(i), pts);
    for (auto [x, y] : series[i].points)
      out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>\n", f.x(x), f.y(y), color(i));
  }
  return out + legend(660, 50, labels) + "</svg>\n";
}

std::string stacked_bars_svg(const std::string& title, const std::string& y_label,
                             const std::vector<std::string>& part_names, const std::vector<SvgBar>& bars) {
  std::vector<std::string> groups;
  for (const auto& b : bars)
    if (std::find(groups.begin(), groups.end(), b.group) == groups.end()) groups.push_back(b.group);
  double top = 0;
  for (const auto& b : bars) {
    double sum = 0;
    for (double v : b.parts) sum += v;
    top = std::max(top, sum);
  }
  Frame f{80, 640, 40, 330, 0, double(bars.size()), 0, top > 0 ? top * 1.08 : 1};
  std::string out = open_svg(900, 420, title) + f.axes("", y_label, false);
  const double slot = (f.right - f.left) / std::max<double>(1, double(bars.size()) + double(groups.size()));
  double xpos = f.left + slot / 2;
  std::string prev_group;
  for (const auto& b : bars) {
    if (b.group != prev_group) {
      if (!prev_group.empty()) xpos += slot;
      prev_group = b.group;
    }
    double base = 0;
    for (size_t k = 0; k < b.parts.size(); ++k) {
      const double h = f.y(base) - f.y(base + b.parts[k]);
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", xpos,
                         f.y(base + b.parts[k]), slot * 0.85, h, color(k));
      base += b.parts[k];
    }
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"10\">{:.1f}</text>\n",
                       xpos + slot * 0.42, f.y(base) - 3, base);
    out += fmt::format(
        "<text x=\"{0:.1f}\" y=\"{1}\" text-anchor=\"end\" font-size=\"10\" transform=\"rotate(-45 {0:.1f} "
        "{1})\">{2}</text>\n",
        xpos + slot * 0.42, f.bottom + 12, escape(b.label));
    xpos += slot;
  }
  // group names under their bars
  xpos = f.left + slot / 2;
  for (const auto& g : groups) {
    const auto n = std::count_if(bars.begin(), bars.end(), [&](const SvgBar& b) { return b.group == g; });
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>\n",
                       xpos + slot * double(n) / 2, f.bottom + 70, escape(g));
    xpos += slot * double(n + 1);
  }
  return out + legend(660, 50, part_names) + "</svg>\n";
}

}  // namespace remat
