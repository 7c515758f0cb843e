#include "remat/search/planner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "remat/search/layer_dp.hpp"

namespace remat {

const char* to_string(SearchMode m) {
  switch (m) {
    case SearchMode::uniform_r:
      return "uniform-R";
    case SearchMode::per_stage_r:
      return "per-stage-R";
    case SearchMode::per_layer:
      return "per-layer";
  }
  return "?";
}

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr size_t kMaxRejectedListed = 30;

// Fills time, peak, fit and reason from per-stage totals.
void finish(Candidate& c, const SearchSpace& sp, const std::vector<StageTotals>& stages, double budget) {
  c.time_s = iteration_time_s(sp, stages);
  c.peak_bytes = 0;
  for (size_t i = 0; i < stages.size(); ++i)
    if (stages[i].peak_bytes > c.peak_bytes) c.peak_bytes = stages[i].peak_bytes, c.worst_stage = int64_t(i);
  c.fits = c.peak_bytes <= budget;
  if (!c.fits)
    c.reason = fmt::format("stage {} peaks at {:.2f} GiB > budget {:.2f} GiB", c.worst_stage, c.peak_bytes / kGiB,
                           budget / kGiB);
}

int64_t max_stage_layers(const SearchSpace& sp) {
  int64_t n = 0;
  for (const auto& s : sp.stages) n = std::max(n, int64_t(s.kinds.size()));
  return n;
}

void uniform_candidates(const SearchSpace& sp, const SearchOptions& o, std::vector<Candidate>& out) {
  std::vector<Strategy> strategies = {Strategy::none};
  strategies.insert(strategies.end(), o.strategies.begin(), o.strategies.end());
  for (Strategy s : strategies)
    for (int64_t r = (s == Strategy::none ? 0 : 1); r <= (s == Strategy::none ? 0 : max_stage_layers(sp)); ++r) {
      Candidate c{SearchMode::uniform_r, s, {}, {}, 0, 0, 0, false, ""};
      std::vector<StageTotals> stages;
      for (size_t i = 0; i < sp.stages.size(); ++i) {
        c.r.push_back(std::min<int64_t>(r, int64_t(sp.stages[i].kinds.size())));
        stages.push_back(stage_with_r(sp, i, s, c.r.back()));
      }
      finish(c, sp, stages, o.budget_bytes);
      out.push_back(std::move(c));
    }
}

// Per stage the smallest R that fits: time grows with R, the iteration time
// grows with every stage's time, so stage by stage is optimal.
void per_stage_candidates(const SearchSpace& sp, const SearchOptions& o, std::vector<Candidate>& out) {
  for (Strategy s : o.strategies) {
    Candidate c{SearchMode::per_stage_r, s, {}, {}, 0, 0, 0, false, ""};
    std::vector<StageTotals> stages;
    for (size_t i = 0; i < sp.stages.size(); ++i) {
      const int64_t n = int64_t(sp.stages[i].kinds.size());
      int64_t r = 0;
      StageTotals tot = stage_with_r(sp, i, s, 0);
      while (tot.peak_bytes > o.budget_bytes && r < n) tot = stage_with_r(sp, i, s, ++r);
      c.r.push_back(r);
      stages.push_back(tot);
    }
    finish(c, sp, stages, o.budget_bytes);
    if (!c.fits) c.reason += fmt::format(" even with every layer under {}", to_string(s));
    out.push_back(std::move(c));
  }
}

// Costs depend on which choices a stage's layers take, not on their order:
// list the layers of each kind most-recomputed first (Megatron's block
// method recomputes a stage's first layers), so equal choices sit together.
std::vector<LayerChoice> canonical_order(const SearchSpace& sp, size_t stage, std::vector<LayerChoice> choices) {
  const StageSpace& st = sp.stages[stage];
  const auto kept = [&](int kind, const LayerChoice& c) {
    for (const auto& o : sp.options[kind])
      if (o.choice.mode == c.mode && o.choice.blocks == c.blocks) return o.cost.kept_bytes;
    return 0.0;
  };
  for (int kind : {0, 1}) {
    std::vector<size_t> at;
    std::vector<LayerChoice> mine;
    for (size_t j = 0; j < st.kinds.size(); ++j)
      if (st.kinds[j] == kind) at.push_back(j), mine.push_back(choices[j]);
    std::stable_sort(mine.begin(), mine.end(),
                     [&](const LayerChoice& a, const LayerChoice& b) { return kept(kind, a) < kept(kind, b); });
    for (size_t i = 0; i < at.size(); ++i) choices[at[i]] = mine[i];
  }
  return choices;
}

// The fastest fitting stage time among the R plans: a bound that lets the
// per-layer search drop partial plans early.
double known_stage_time(const SearchSpace& sp, const SearchOptions& o, size_t stage) {
  double best = std::numeric_limits<double>::infinity();
  const int64_t n = int64_t(sp.stages[stage].kinds.size());
  for (Strategy s : o.strategies)
    for (int64_t r = 0; r <= n; ++r) {
      const StageTotals tot = stage_with_r(sp, stage, s, r);
      if (tot.peak_bytes <= o.budget_bytes) {
        best = std::min(best, tot.microbatch_s);
        break;
      }
    }
  return best;
}

// Per stage the fastest assignment that fits; a stage that none fits takes
// its smallest-footprint assignment, so the candidate still says how far over
// the budget the best the search could do is.
void per_layer_candidate(const SearchSpace& sp, const SearchOptions& o, std::vector<Candidate>& out) {
  Candidate c{SearchMode::per_layer, Strategy::none, {}, {}, 0, 0, 0, false, ""};
  std::vector<StageTotals> stages;
  for (size_t i = 0; i < sp.stages.size(); ++i) {
    auto plan = best_stage_plan(sp, i, o.budget_bytes, known_stage_time(sp, o, i));
    if (!plan) plan = smallest_stage_plan(sp, i);
    c.per_layer.push_back(canonical_order(sp, i, plan->per_layer));
    stages.push_back(plan->totals);
  }
  finish(c, sp, stages, o.budget_bytes);
  if (!c.fits) c.reason += " with its smallest per-layer assignment";
  out.push_back(std::move(c));
}

std::vector<Candidate> frontier_of(const std::vector<Candidate>& all) {
  std::vector<Candidate> sorted = all;
  std::sort(sorted.begin(), sorted.end(), [](const Candidate& a, const Candidate& b) {
    return a.peak_bytes != b.peak_bytes ? a.peak_bytes < b.peak_bytes : a.time_s < b.time_s;
  });
  std::vector<Candidate> out;
  for (const auto& c : sorted)
    if (out.empty() || c.time_s < out.back().time_s) out.push_back(c);
  return out;
}

std::vector<IntervalRow> interval_rows(const SearchSpace& sp) {
  std::vector<IntervalRow> rows;
  for (size_t i = 0; i < sp.stages.size(); ++i) {
    const StageSpace& st = sp.stages[i];
    const int64_t n = int64_t(st.kinds.size());
    double input = 0, layer = 0, grads = 0;
    for (int k : st.kinds) {
      input = std::max(input, sp.strategy_cost[k][size_t(Strategy::full)].kept_bytes);
      layer = std::max(layer, sp.keep_cost[k].kept_bytes);
      grads = std::max(grads, sp.keep_cost[k].transient_bytes);
    }
    // peak with segments of k layers: ceil(n/k) inputs per microbatch in
    // flight, one segment's activations replayed during its backward
    const auto peak = [&](int64_t k) {
      const double kept = double((n + k - 1) / k) * input * double(st.base.in_flight);
      const double transient = std::max(double(k) * layer + grads, st.base.head_transient_bytes);
      return st.base.static_bytes.total() + kept + transient;
    };
    IntervalRow row{int64_t(i), n, std::max<int64_t>(1, std::llround(std::sqrt(double(n)))), 1, 0, peak(1), 0};
    for (int64_t k = 1; k <= n; ++k)
      if (peak(k) < row.best_peak_bytes) row.best_peak_bytes = peak(k), row.best_k = k;
    row.chen_peak_bytes = peak(row.chen_k);
    row.time_s = stage_with_r(sp, i, Strategy::full, n).microbatch_s;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

Plan to_plan(const Candidate& c, const SearchSpace& sp) {
  Plan p;
  p.strategy = c.strategy;
  if (c.mode != SearchMode::per_layer) {
    p.recompute_layers = c.r;
    return p;
  }
  p.recompute_layers = {0};
  for (size_t i = 0; i < c.per_layer.size(); ++i)
    for (size_t j = 0; j < c.per_layer[i].size(); ++j)
      p.layer_overrides[sp.stages[i].base.first_layer + int64_t(j)] = c.per_layer[i][j];
  return p;
}

PlanSearchResult plan_search(const SearchSpace& sp, const SearchOptions& o) {
  std::vector<Candidate> all;
  if (o.uniform_r) uniform_candidates(sp, o, all);
  if (o.per_stage_r) per_stage_candidates(sp, o, all);
  if (o.per_layer) per_layer_candidate(sp, o, all);
  PlanSearchResult res;
  res.evaluated = int64_t(all.size());
  size_t best_i = all.size();
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].fits && (best_i == all.size() || all[i].time_s < all[best_i].time_s)) best_i = i;
  if (best_i < all.size()) res.best = all[best_i];
  for (size_t i = 0; i < all.size(); ++i) {
    if (!all[i].fits) {
      ++res.over_budget;
    } else if (i != best_i) {
      ++res.slower;
      all[i].reason = fmt::format("fits, but {:.3f} s > best {:.3f} s", all[i].time_s, res.best->time_s);
    }
  }
  for (const auto& c : all)
    if (!c.reason.empty() && res.rejected.size() < kMaxRejectedListed) res.rejected.push_back(c);
  for (Strategy s : o.strategies)
    for (SearchMode m : {SearchMode::uniform_r, SearchMode::per_stage_r}) {
      const Candidate* best = nullptr;
      for (const auto& c : all)
        if (c.strategy == s && c.mode == m && c.fits && (!best || c.time_s < best->time_s)) best = &c;
      if (best) res.best_by_strategy.push_back(*best);
    }
  res.frontier = frontier_of(all);
  res.intervals = interval_rows(sp);
  if (res.best) {
    res.best_plan = to_plan(*res.best, sp);
  } else if (all.empty()) {
    res.reason = "no candidate was searched";
  } else {
    const auto lowest = std::min_element(
        all.begin(), all.end(), [](const Candidate& a, const Candidate& b) { return a.peak_bytes < b.peak_bytes; });
    res.shortfall = shortfall_of(sp, *lowest, o.budget_bytes);
    res.reason = fmt::format(
        "no plan fits: the smallest footprint searched ({} {}) peaks at {:.2f} GiB on stage {}, over the budget of "
        "{:.2f} GiB: {}",
        to_string(lowest->mode), lowest->mode == SearchMode::per_layer ? "mixed" : to_string(lowest->strategy),
        lowest->peak_bytes / kGiB, lowest->worst_stage, o.budget_bytes / kGiB, res.shortfall->why());
  }
  return res;
}

PlanSearchResult plan_search(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t,
                             const SearchOptions& opts) {
  return plan_search(build_search_space(m, hw, t, opts), opts);
}

}  // namespace remat
