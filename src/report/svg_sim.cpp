// The simulator's comparison plots: against R, and per-stage bars.
#include <fmt/format.h>

#include "remat/report/svg.hpp"
#include "svg_frame.hpp"

namespace remat {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Two complete SVG documents next to each other in one.
std::string side_by_side(const std::string& a, const std::string& b, double width, double height) {
  std::string right = b;
  right.replace(0, 4, "<svg x=\"" + fmt::format("{}", width / 2) + "\"");
  return fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\">\n", width, height) + a +
         right + "</svg>\n";
}

std::vector<SvgSeries> series_of(const std::vector<RecomputeSweepPoint>& points, bool time) {
  std::vector<SvgSeries> out;
  for (const auto& p : points) {
    if (out.empty() || out.back().label != to_string(p.strategy)) out.push_back({to_string(p.strategy), {}});
    out.back().points.emplace_back(double(p.recompute_layers), time ? p.iteration_s : p.peak_bytes / kGiB);
  }
  return out;
}

}  // namespace

std::string recompute_sweep_svg(const std::vector<RecomputeSweepPoint>& points, const std::string& title) {
  return side_by_side(line_chart_svg(title + ": iteration time", "recomputed layers per stage R", "iteration time (s)",
                                     series_of(points, true)),
                      line_chart_svg(title + ": peak memory", "recomputed layers per stage R", "max stage peak (GiB)",
                                     series_of(points, false)),
                      1640, 390);
}

std::string stage_memory_bars_svg(const std::vector<StageBarsInput>& runs, const std::string& title) {
  std::vector<SvgBar> bars;
  if (runs.empty()) return stacked_bars_svg(title, "GiB", {}, bars);
  const int64_t p = int64_t(runs.front().sim->stages.size());
  const std::pair<const char*, int64_t> picks[] = {
      {"first stage", 0}, {"middle stage", (p - 1) / 2}, {"last stage", p - 1}};
  for (auto [group, index] : picks)
    for (const auto& run : runs) {
      const CategoryBytes& b = run.sim->stages[size_t(index)].peak.by_category;
      const auto at = [&](MemCategory c) { return b[size_t(c)] / kGiB; };
      bars.push_back(
          {fmt::format("{} ({})", group, index),
           to_string(run.strategy),
           {at(MemCategory::weights) + at(MemCategory::gradients) + at(MemCategory::optimizer),
            at(MemCategory::activations), at(MemCategory::working),
            at(MemCategory::offload) + at(MemCategory::logits) + at(MemCategory::comm) + at(MemCategory::runtime)}});
    }
  return stacked_bars_svg(
      title, "memory at the stage's peak (GiB)",
      {"weights+grads+optimizer", "kept activations", "recompute/backward working set", "offload, logits, p2p"}, bars);
}

}  // namespace remat
