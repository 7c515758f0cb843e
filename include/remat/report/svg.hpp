#pragma once
// Plots drawn as SVG text (no plotting dependency): each has a title, axes
// with ticks and labels, and a legend.
#include <string>
#include <utility>
#include <vector>

#include "remat/sim/simulate.hpp"

namespace remat {

struct SvgSeries {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
};

// Line chart of several series (markers at the points).
std::string line_chart_svg(const std::string& title, const std::string& x_label, const std::string& y_label,
                           const std::vector<SvgSeries>& series);

struct SvgBar {
  std::string group;          // x-axis group ("first stage")
  std::string label;          // bar within the group ("eagle")
  std::vector<double> parts;  // stacked bottom to top, one per part name
};

// Grouped, stacked bars.
std::string stacked_bars_svg(const std::string& title, const std::string& y_label,
                             const std::vector<std::string>& part_names, const std::vector<SvgBar>& bars);

// Memory over time, one panel per stage, stacked by category (GiB), with the
// peak marked. `only_stage` < 0: every stage.
std::string memory_timeline_svg(const Simulation& sim, const std::string& title, int64_t only_stage = -1);

}  // namespace remat

#include "remat/sim/sweep.hpp"

namespace remat {

// Iteration time and peak memory against R, one line per strategy, side by side.
std::string recompute_sweep_svg(const std::vector<RecomputeSweepPoint>& points, const std::string& title);

// The paper's Table 3 scenario as bars: first, middle and last stage, one bar
// per strategy, stacked static / kept activations / working set / other.
struct StageBarsInput {
  Strategy strategy;
  const Simulation* sim;
};
std::string stage_memory_bars_svg(const std::vector<StageBarsInput>& runs, const std::string& title);

}  // namespace remat

namespace remat {

// Predicted against measured, one panel per quantity: the y = x line, a dashed band of
// +-`band_pct` around it, and one colour per group.
struct ScatterPoint {
  double predicted = 0, measured = 0;
  size_t group = 0;  // index into the plot's group names
};
struct ScatterPanel {
  std::string title;  // "peak, max allocated (GiB)"
  double band_pct = 0;
  std::vector<ScatterPoint> points;
};
std::string predicted_vs_measured_svg(const std::string& title, const std::vector<std::string>& group_names,
                                      const std::vector<ScatterPanel>& panels);

}  // namespace remat
