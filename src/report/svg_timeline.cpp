// Memory over time per stage, stacked by category.
#include <fmt/format.h>

#include <algorithm>

#include "remat/report/svg.hpp"
#include "svg_frame.hpp"

namespace remat {

using namespace svg_detail;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Cumulative bytes of categories [0, upto] at point p, in GiB.
double stacked(const MemoryPoint& p, int upto) {
  double sum = 0;
  for (int c = 0; c <= upto; ++c) sum += std::max(0.0, p.bytes[size_t(c)]);
  return sum / kGiB;
}

// One category's band as a step-shaped polygon between the stack below it
// and its own top; runs of equal heights merge into one step.
std::string band(const Frame& f, const std::vector<MemoryPoint>& pts, int c, double end_s) {
  std::string upper, lower;
  bool any = false;
  for (size_t k = 0; k < pts.size();) {
    const double hi = stacked(pts[k], c), lo = c > 0 ? stacked(pts[k], c - 1) : 0;
    size_t next = k + 1;
    while (next < pts.size() && stacked(pts[next], c) == hi && (c == 0 || stacked(pts[next], c - 1) == lo)) ++next;
    const double t1 = next < pts.size() ? pts[next].t_s : end_s;
    any = any || hi > lo;
    upper += fmt::format("{:.1f},{:.1f} {:.1f},{:.1f} ", f.x(pts[k].t_s), f.y(hi), f.x(t1), f.y(hi));
    lower = fmt::format("{:.1f},{:.1f} {:.1f},{:.1f} ", f.x(t1), f.y(lo), f.x(pts[k].t_s), f.y(lo)) + lower;
    k = next;
  }
  if (!any) return "";
  return fmt::format("<polygon fill=\"{}\" stroke=\"none\" points=\"{}{}\"/>\n", color(size_t(c)), upper, lower);
}

std::string panel(const Frame& f, const StageTimeline& st, double end_s, bool last_panel) {
  std::string out = f.axes(last_panel ? "time (s)" : "", fmt::format("stage {} (GiB)", st.index), true);
  for (int c = 0; c < kMemCategories; ++c) out += band(f, st.memory, c, end_s);
  const double peak = st.peak.bytes / kGiB;
  out += fmt::format(
      "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"black\" stroke-dasharray=\"3,3\"/>"
      "<text x=\"{3:.1f}\" y=\"{4}\" font-size=\"11\">peak {5:.2f} GiB at {6:.3f} s</text>\n",
      f.x(st.peak.t_s), f.y(peak), f.bottom, std::min(f.x(st.peak.t_s) + 4, f.right - 170), f.top + 12, peak,
      st.peak.t_s);
  return out;
}

}  // namespace

std::string memory_timeline_svg(const Simulation& sim, const std::string& title, int64_t only_stage) {
  std::vector<const StageTimeline*> stages;
  double top = 0;
  for (const auto& st : sim.stages)
    if (only_stage < 0 || st.index == only_stage) {
      stages.push_back(&st);
      top = std::max(top, st.peak.bytes / kGiB);
    }
  const double panel_h = 150, gap = 45, head = 40;
  const double height = head + double(stages.size()) * (panel_h + gap) + 30;
  std::string out = open_svg(900, height, title);
  for (size_t i = 0; i < stages.size(); ++i) {
    const double y0 = head + double(i) * (panel_h + gap);
    const Frame f{80, 700, y0 + 10, y0 + 10 + panel_h, 0, std::max(sim.iteration_s, 1e-9), 0, top * 1.1};
    out += panel(f, *stages[i], sim.iteration_s, i + 1 == stages.size());
  }
  std::vector<std::string> labels;
  for (int c = 0; c < kMemCategories; ++c) labels.push_back(to_string(MemCategory(c)));
  return out + legend(720, head + 10, labels) + "</svg>\n";
}

}  // namespace remat
