#include "remat/search/scenarios.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "remat/spec/validate.hpp"

namespace remat {

namespace {

const Strategy kMethods[] = {Strategy::none, Strategy::full, Strategy::standard, Strategy::eagle};

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

ScenarioRow row_for(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, double budget, Strategy s,
                    int64_t r) {
  Plan p;
  p.strategy = s;
  p.recompute_layers = {s == Strategy::none ? 0 : r};
  const Estimate e = estimate(m, hw, t, p, budget);
  const auto& st = e.stages;
  ScenarioRow row{s,
                  p.recompute_layers[0],
                  st.front().memory_bytes.peak,
                  st[st.size() / 2].memory_bytes.peak,
                  st.back().memory_bytes.peak,
                  e.iteration.time_s,
                  e.iteration.mfu,
                  e.iteration.tokens_per_s,
                  e.fits,
                  ""};
  if (!e.fits) {
    const auto worst = std::max_element(st.begin(), st.end(), [](const StageEstimate& a, const StageEstimate& b) {
      return a.memory_bytes.peak < b.memory_bytes.peak;
    });
    row.reason = fmt::format("at R = {}: stage {} peaks at {:.2f} GiB, over the budget of {:.2f} GiB", row.r,
                             worst->index, worst->memory_bytes.peak / kGiB, budget / kGiB);
  }
  return row;
}

double max_peak(const ScenarioRow& r) { return std::max({r.first_peak_bytes, r.middle_peak_bytes, r.last_peak_bytes}); }

int64_t max_stage_layers(const ModelSpec& m, const TrainingSpec& t) {
  int64_t n = 0;
  for (const auto& [first, last] : stage_layer_ranges(m, t)) n = std::max(n, last - first);
  return n;
}

void finish(ScenarioResult& res) {
  double full = 0, eagle = 0;
  for (const auto& r : res.rows) {
    if (r.strategy == Strategy::full) full = r.mfu;
    if (r.strategy == Strategy::eagle) eagle = r.mfu;
  }
  res.eagle_vs_full_mfu_gain = full > 0 ? (eagle - full) / full : 0;
}

}  // namespace

ScenarioResult fixed_r_scenario(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t_in, double budget) {
  const TrainingSpec t = with_defaults(t_in);
  const int64_t n = max_stage_layers(m, t);
  int64_t r = n;
  for (int64_t candidate = 0; candidate <= n; ++candidate) {
    bool all_fit = true;
    for (Strategy s : {Strategy::full, Strategy::standard, Strategy::eagle})
      all_fit = all_fit && row_for(m, hw, t, budget, s, candidate).fits;
    if (all_fit) {
      r = candidate;
      break;
    }
  }
  ScenarioResult res{"fixed-r", {}, 0};
  for (Strategy s : kMethods) res.rows.push_back(row_for(m, hw, t, budget, s, r));
  finish(res);
  return res;
}

ScenarioResult best_r_scenario(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t_in, double budget) {
  const TrainingSpec t = with_defaults(t_in);
  const int64_t n = max_stage_layers(m, t);
  ScenarioResult res{"best-r", {}, 0};
  for (Strategy s : kMethods) {
    ScenarioRow best = row_for(m, hw, t, budget, s, s == Strategy::none ? 0 : n);
    for (int64_t r = 0; r <= (s == Strategy::none ? 0 : n); ++r) {
      const ScenarioRow row = row_for(m, hw, t, budget, s, r);
      if (row.fits ? !best.fits || row.time_s < best.time_s : !best.fits && max_peak(row) < max_peak(best)) best = row;
    }
    if (!best.fits) best.reason = "no R fits; lowest peak " + best.reason;
    res.rows.push_back(best);
  }
  finish(res);
  return res;
}

}  // namespace remat
