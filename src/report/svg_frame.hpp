#pragma once
// Shared pieces of the SVG plots.
#include <string>
#include <vector>

namespace remat::svg_detail {

const char* color(size_t i);
std::string escape(const std::string& s);
std::vector<double> nice_ticks(double lo, double hi, int target);
std::string open_svg(double w, double h, const std::string& title);
std::string legend(double x, double y, const std::vector<std::string>& labels);

// A plot area in pixels and the data range it shows.
struct Frame {
  double left, right, top, bottom;
  double x0, x1, y0, y1;
  double x(double v) const { return left + (v - x0) / (x1 - x0) * (right - left); }
  double y(double v) const { return bottom - (v - y0) / (y1 - y0) * (bottom - top); }
  std::string axes(const std::string& x_label, const std::string& y_label, bool x_ticks) const;
};

}  // namespace remat::svg_detail
