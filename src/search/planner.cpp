#include "remat/search/planner.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>

#include <fmt/format.h>

#include "remat/search/layer_dp.hpp"
#include "workers.hpp"

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

Candidate candidate(SearchMode mode, Strategy s) {
  Candidate c;
  c.mode = mode, c.strategy = s;
  return c;
}

// c as candidate(mode, s) makes it, keeping the memory of its vectors.
void renew(Candidate& c, SearchMode mode, Strategy s) {
  std::vector<int64_t> r = std::move(c.r);
  std::vector<double> peaks = std::move(c.stage_peak_bytes);
  c = candidate(mode, s);
  r.clear(), peaks.clear();
  c.r = std::move(r), c.stage_peak_bytes = std::move(peaks);
}

// The candidates plan_search weighs, in the order searched. With `keep_all` (the explained
// report) each one; else only what the sweep reads: the fastest that fits and, while none does,
// the smallest footprint (each the first of equals, as plan_search picks them from all), so the
// R loops reuse one candidate's memory instead of keeping every candidate.
struct Candidates {
  bool keep_all = true;
  int64_t count = 0;
  std::vector<Candidate> all;                // keep_all
  std::optional<Candidate> fastest, lowest;  // the others
  // Takes c (keep_all) or copies what it needs of it; c is renewed before its next use.
  void add(Candidate& c) {
    ++count;
    if (keep_all) {
      all.push_back(std::move(c));
      return;
    }
    if (c.fits && (!fastest || c.time_s < fastest->time_s)) fastest = c;
    if (!fastest && (!lowest || c.peak_bytes < lowest->peak_bytes)) lowest = c;
  }
};

// Fills time, peak, fit and reason from per-stage totals.
void finish(Candidate& c, const SearchSpace& sp, const std::vector<StageTotals>& stages, double budget, bool explain) {
  const IterationEstimate it = iteration_of(sp, stages);
  c.time_s = it.time_s, c.mfu = it.mfu, c.tokens_per_s = it.tokens_per_s;
  c.peak_bytes = 0;
  c.stage_peak_bytes.clear();
  c.stage_peak_bytes.reserve(stages.size());
  for (size_t i = 0; i < stages.size(); ++i) {
    c.stage_peak_bytes.push_back(stages[i].peak_bytes);
    if (stages[i].peak_bytes > c.peak_bytes) c.peak_bytes = stages[i].peak_bytes, c.worst_stage = int64_t(i);
  }
  c.fits = c.peak_bytes <= budget;
  if (!c.fits && explain)
    c.reason = fmt::format("stage {} peaks at {:.2f} GiB > budget {:.2f} GiB", c.worst_stage, c.peak_bytes / kGiB,
                           budget / kGiB);
}

int64_t max_stage_layers(const SearchSpace& sp) {
  int64_t n = 0;
  for (const auto& s : sp.stages) n = std::max(n, int64_t(s.kinds.size()));
  return n;
}

// Per strategy and stage, the fewest recomputed layers that fit it (all of them when none does) and
// the stage's totals with them: per_stage_candidates's picks, which uniform_candidates meets as it
// prices every R (R = 0 is the same stage under every strategy).
struct LeastFittingR {
  std::vector<int64_t> r;           // per stage, -1 until found
  std::vector<StageTotals> totals;  // per stage
};
using LeastFitting = std::array<LeastFittingR, kStrategyCount>;  // empty where uniform_candidates did not run

void uniform_candidates(const SearchSpace& sp, const SearchOptions& o, Candidates& out, LeastFitting& least) {
  std::vector<Strategy> strategies = {Strategy::none};
  strategies.insert(strategies.end(), o.strategies.begin(), o.strategies.end());
  std::vector<StageTotals> stages;  // per candidate, reused
  stages.reserve(sp.stages.size());
  std::vector<StageTotals> keep_all;  // per stage, R = 0
  Candidate c;                        // renewed from R to R
  for (Strategy s : strategies) {
    LeastFittingR* fit = s == Strategy::none ? nullptr : &least[size_t(s)];
    if (fit) {
      fit->r.assign(sp.stages.size(), -1);
      fit->totals.resize(sp.stages.size());
      for (size_t i = 0; i < sp.stages.size(); ++i)
        if (keep_all[i].peak_bytes <= o.budget_bytes || sp.stages[i].kinds.empty())
          fit->r[i] = 0, fit->totals[i] = keep_all[i];
    }
    for (int64_t r = (s == Strategy::none ? 0 : 1); r <= (s == Strategy::none ? 0 : max_stage_layers(sp)); ++r) {
      renew(c, SearchMode::uniform_r, s);
      c.r.reserve(sp.stages.size());
      stages.clear();
      for (size_t i = 0; i < sp.stages.size(); ++i) {
        const int64_t n = int64_t(sp.stages[i].kinds.size());
        c.r.push_back(std::min<int64_t>(r, n));
        stages.push_back(stage_with_r(sp, i, s, c.r.back()));
        if (fit && fit->r[i] < 0 && c.r.back() == r && (stages.back().peak_bytes <= o.budget_bytes || r == n))
          fit->r[i] = r, fit->totals[i] = stages.back();
      }
      if (s == Strategy::none) keep_all = stages;
      finish(c, sp, stages, o.budget_bytes, o.explain);
      out.add(c);
    }
  }
}

// Per stage the smallest R that fits: time grows with R, the iteration time
// grows with every stage's time, so stage by stage is optimal.
void per_stage_candidates(const SearchSpace& sp, const SearchOptions& o, Candidates& out, const LeastFitting& least) {
  for (Strategy s : o.strategies) {
    Candidate c = candidate(SearchMode::per_stage_r, s);
    const LeastFittingR& fit = least[size_t(s)];
    if (!fit.r.empty()) {
      c.r = fit.r;
      finish(c, sp, fit.totals, o.budget_bytes, o.explain);
    } else {
      c.r.reserve(sp.stages.size());
      std::vector<StageTotals> stages;
      stages.reserve(sp.stages.size());
      for (size_t i = 0; i < sp.stages.size(); ++i) {
        const int64_t n = int64_t(sp.stages[i].kinds.size());
        int64_t r = 0;
        StageTotals tot = stage_with_r(sp, i, s, 0);
        while (tot.peak_bytes > o.budget_bytes && r < n) tot = stage_with_r(sp, i, s, ++r);
        c.r.push_back(r);
        stages.push_back(tot);
      }
      finish(c, sp, stages, o.budget_bytes, o.explain);
    }
    if (!c.fits && o.explain) c.reason += fmt::format(" even with every layer under {}", to_string(s));
    out.add(c);
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
  for (int kind = 0; kind < sp.kind_count(); ++kind) {
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

// Each stage's fastest assignment that fits, or when none fits its smallest-footprint one. The
// stages' searches are independent: `threads` workers take stages in turn. A refusal (a search
// past its limit) is rethrown for the first stage that raised one, so the stages after one that
// refused are not searched, or stop where they are: nothing they could return or raise is used.
std::vector<StagePlan> stage_plans(const SearchSpace& sp, const SearchOptions& o) {
  const size_t n = sp.stages.size();
  std::vector<StagePlan> plans(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::atomic<bool>> stop(n);  // set: a stage before this one refused
  std::atomic<size_t> next{0};
  run_workers(std::min<size_t>(n, size_t(std::max<int64_t>(1, o.threads))), [&](size_t) {
    for (size_t i; (i = next++) < n;) {
      if (stop[i].load()) continue;
      try {
        auto plan = best_stage_plan(sp, i, o.budget_bytes, known_stage_time(sp, o, i), &stop[i]);
        if (stop[i].load()) continue;
        plans[i] = plan ? std::move(*plan) : smallest_stage_plan(sp, i);
      } catch (...) {
        errors[i] = std::current_exception();
        for (size_t later = i + 1; later < n; ++later) stop[later].store(true);
      }
    }
  });
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return plans;
}

// Which stages the counts search planned and how far from their fastest fitting plans they can
// be (StagePlan::optimum_lower_bound_s); empty when the exact search planned every stage.
std::string counts_search_note(const std::vector<StagePlan>& plans) {
  std::string stages;  // as ranges: 3-15
  size_t count = 0;
  double worst = 0;
  for (size_t i = 0; i < plans.size(); ++i) {
    const double lower_s = plans[i].optimum_lower_bound_s;
    if (lower_s <= 0) continue;
    const bool follows = i > 0 && plans[i - 1].optimum_lower_bound_s > 0;
    const bool continues = i + 1 < plans.size() && plans[i + 1].optimum_lower_bound_s > 0;
    if (!follows) stages += (count ? ", " : "") + std::to_string(i);
    if (follows && !continues) stages += "-" + std::to_string(i);
    ++count;
    worst = std::max(worst, plans[i].totals.microbatch_s / lower_s - 1);
  }
  if (count == 0) return "";
  return fmt::format(
      "the counts search, not the exact one, planned {} of the {} stages ({}), deep stages the exact per-layer "
      "search would take too long on: each within {:.3f}% of its fastest fitting plan's microbatch time (against "
      "a lower bound from the relaxed choice; not proven fastest)",
      count, plans.size(), stages, 100 * worst);
}

// The per-layer candidate: per stage its stage_plans plan, so a stage that none fits still says
// how far over the budget the best the search could do is.
void per_layer_candidate(const SearchSpace& sp, const SearchOptions& o, Candidates& out) {
  Candidate c = candidate(SearchMode::per_layer, Strategy::none);
  std::vector<StageTotals> stages;
  std::vector<StagePlan> plans = stage_plans(sp, o);
  for (size_t i = 0; i < plans.size(); ++i) {
    c.per_layer.push_back(canonical_order(sp, i, plans[i].per_layer));
    stages.push_back(plans[i].totals);
  }
  finish(c, sp, stages, o.budget_bytes, o.explain);
  c.search_note = counts_search_note(plans);
  if (!c.fits && o.explain) c.reason += " with its smallest per-layer assignment";
  out.add(c);
}

std::vector<Candidate> frontier_of(const std::vector<Candidate>& all) {
  std::vector<Candidate> sorted = all;
  std::sort(sorted.begin(), sorted.end(), [](const Candidate& a, const Candidate& b) {
    return a.peak_bytes != b.peak_bytes ? a.peak_bytes < b.peak_bytes : a.time_s < b.time_s;
  });
  std::vector<Candidate> out;
  // faster by more than rounding: plans summed along different paths tie to the last bits
  for (const auto& c : sorted)
    if (out.empty() || c.time_s < out.back().time_s * (1 - 1e-12)) out.push_back(c);
  return out;
}

// Stage `stage` under Megatron's uniform method with chunks of k layers, as
// estimate costs a plan with that setting: a full-recompute layer costs the
// same at every chunk position but the first (which keeps the chunk's input)
// and in every chunk of more than one layer.
using ChunkCosts = std::vector<std::array<LayerCost, 2>>;  // per kind: a chunk's first layer, a later one

StageTotals chunked_stage(const SearchSpace& sp, size_t stage, int64_t k, const ChunkCosts& chunk) {
  const StageSpace& st = sp.stages[stage];
  const int64_t n = int64_t(st.kinds.size());
  const MegatronRecompute setting{MegatronGranularity::full, MegatronMethod::uniform, k, kCoreAttn};
  LayerSums sums;
  for (int64_t j = 0; j < n; ++j) {
    const int kind = st.kinds[size_t(j)];
    const LayerChoice c = megatron_layer_choice(setting, j, n);
    sums.add(c.chunk_layers == 1 ? sp.strategy_cost[kind][size_t(Strategy::full)]
                                 : chunk[size_t(kind)][c.chunk_position == 0 ? 0 : 1]);
  }
  return stage_totals(st.base, sums);
}

std::vector<IntervalRow> interval_rows(const SearchSpace& sp) {
  // every kind a stage holds (hybrid and sliding-window layers too, not only attention + dense or MoE)
  std::vector<bool> used(size_t(sp.kind_count()));
  for (const StageSpace& st : sp.stages)
    for (int kind : st.kinds) used[size_t(kind)] = true;
  ChunkCosts chunk(used.size());
  for (int kind = 0; kind < sp.kind_count(); ++kind)
    for (int64_t pos : {0, 1}) {
      if (!used[size_t(kind)]) continue;
      LayerChoice c{LayerMode::full, {}};
      c.chunk_layers = 2, c.chunk_position = pos;
      chunk[size_t(kind)][size_t(pos)] = sp.cost(kind, c);
    }
  std::vector<IntervalRow> rows;
  for (size_t i = 0; i < sp.stages.size(); ++i) {
    const int64_t n = int64_t(sp.stages[i].kinds.size());
    IntervalRow row{int64_t(i), n, std::max<int64_t>(1, std::llround(std::sqrt(double(n)))), 1, 0, 0, 0};
    row.best_peak_bytes = chunked_stage(sp, i, 1, chunk).peak_bytes;
    for (int64_t k = 2; k <= n; ++k) {
      const double peak = chunked_stage(sp, i, k, chunk).peak_bytes;
      if (peak < row.best_peak_bytes) row.best_peak_bytes = peak, row.best_k = k;
    }
    const StageTotals chen = chunked_stage(sp, i, row.chen_k, chunk);
    row.chen_peak_bytes = chen.peak_bytes;
    row.time_s = chen.microbatch_s;
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
  Candidates found;
  found.keep_all = o.explain;
  LeastFitting least;
  if (o.uniform_r) uniform_candidates(sp, o, found, least);
  if (o.per_stage_r) per_stage_candidates(sp, o, found, least);
  if (o.per_layer) per_layer_candidate(sp, o, found);
  PlanSearchResult res;
  res.evaluated = found.count;
  if (!o.explain) {
    res.best = std::move(found.fastest);
    if (res.best) res.best_plan = to_plan(*res.best, sp);
    if (!res.best && found.lowest) res.shortfall = shortfall_of(sp, *found.lowest, o.budget_bytes);
    return res;
  }
  std::vector<Candidate>& all = found.all;
  size_t best_i = all.size();
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].fits && (best_i == all.size() || all[i].time_s < all[best_i].time_s)) best_i = i;
  if (best_i < all.size()) res.best = all[best_i];
  const Candidate* lowest = nullptr;  // when nothing fits: the smallest footprint searched
  if (!res.best && !all.empty()) {
    lowest = &*std::min_element(all.begin(), all.end(),
                                [](const Candidate& a, const Candidate& b) { return a.peak_bytes < b.peak_bytes; });
    res.shortfall = shortfall_of(sp, *lowest, o.budget_bytes);
  }
  if (res.best) res.best_plan = to_plan(*res.best, sp);
  if (!o.explain) return res;
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
  if (o.intervals) res.intervals = interval_rows(sp);
  if (all.empty()) {
    res.reason = "no candidate was searched";
  } else if (lowest) {
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
