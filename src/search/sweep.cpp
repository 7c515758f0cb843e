#include "remat/search/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "remat/cost/op_time.hpp"
#include "remat/search/split_search.hpp"
#include "remat/spec/validate.hpp"
#include "workers.hpp"

namespace remat {

namespace {

// The divisors of n up to `limit`, ascending; O(sqrt n).
std::vector<int64_t> divisors_up_to(int64_t n, int64_t limit) {
  std::vector<int64_t> low, high;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    if (d <= limit) low.push_back(d);
    if (d != n / d && n / d <= limit) high.push_back(n / d);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

struct Layout {
  TrainingSpec t;
  Strategy s;
};

// Calls visit(tp, pp, dp, ep, mbs, strategy) for each layout until it returns false.
template <typename Visit>
void for_each_layout(const ModelSpec& m, const SweepSpace& sp, Visit visit) {
  for (int64_t gpus : sp.gpus)
    for (int64_t tp : sp.tp) {
      if (tp > gpus || gpus % tp != 0) continue;
      const auto pps = sp.pp.empty() ? divisors_up_to(gpus / tp, m.num_hidden_layers) : sp.pp;
      for (int64_t pp : pps) {
        if (pp > gpus || gpus % (tp * pp) != 0) continue;
        const int64_t dp = gpus / (tp * pp);
        const auto eps = !m.is_moe()     ? std::vector<int64_t>{1}
                         : sp.ep.empty() ? divisors_up_to(m.n_routed_experts, dp * tp)
                                         : sp.ep;
        for (int64_t ep : eps)
          for (int64_t mbs : sp.mbs)
            for (Strategy s : sp.strategies)
              if (!visit(tp, pp, dp, ep, mbs, s)) return;
      }
    }
}

std::vector<Layout> enumerate(const ModelSpec& m, const TrainingSpec& base, const SweepSpace& sp) {
  std::vector<Layout> out;
  for_each_layout(m, sp, [&](int64_t tp, int64_t pp, int64_t dp, int64_t ep, int64_t mbs, Strategy s) {
    TrainingSpec t = base;
    t.tp = tp, t.pp = pp, t.dp = dp, t.ep = ep, t.mbs = mbs;
    out.push_back({t, s});
    return true;
  });
  return out;
}

std::string category(const Problem& p) { return p.key + " " + p.message; }

}  // namespace

static bool recomputes_nothing(const Candidate& c) {
  if (c.mode == SearchMode::per_layer) {
    for (const auto& stage : c.per_layer)
      for (const LayerChoice& l : stage)
        if (!(l == LayerChoice{})) return false;
    return true;
  }
  return std::all_of(c.r.begin(), c.r.end(), [](int64_t r) { return r == 0; });
}

int64_t count_layouts(const ModelSpec& m, const SweepSpace& space, int64_t limit) {
  int64_t n = 0;
  for_each_layout(m, space, [&](int64_t, int64_t, int64_t, int64_t, int64_t, Strategy) { return ++n <= limit; });
  return n;
}

namespace {

// One worker's share of the layouts, in layout order.
struct SweepPart {
  std::vector<SweepRow> rows;
  std::vector<size_t> row_layouts;  // per row, its index in the layouts
  std::map<std::string, int64_t> infeasible_by_reason;
  std::vector<std::pair<double, size_t>> most_tokens_per_s;  // per valid layout: its bound, its index
  std::map<size_t, std::string> no_fit;                      // layouts whose plans do not fit: the reason counted
};

// The least peak of `sp`'s layout over every split and plan: a stage holds at least its weights,
// gradients, optimizer state and framework buffers, which sum to the same on any split, so the
// largest stage holds at least their mean.
double least_peak_bytes(const SearchSpace& sp) {
  const TrainingSpec& t = sp.costed;
  // a stage's state also holds its largest layer under LoRA, GRPO/DPO and ZeRO-3 (stage_base): no sum
  if (t.lora_rank > 0 || t.objective != Objective::sft || t.zero_stage >= 3) return 0;
  double held = 0;
  for (const StageSpace& st : sp.stages) held += st.base.static_bytes.total() + st.base.runtime_bytes;
  return held / double(sp.stages.size());
}

// The least iteration time of `sp`'s layout over every split and plan: each stage runs at least
// its layers' forward and backward (what no recompute adds to), the same sum on any split; the
// slowest stage takes at least the mean; the optimizer step of the largest stage at least the mean
// step (it grows with the stage's bytes).
double iteration_lower_bound_s(const SearchSpace& sp) {
  double floor_s = 0, step_s = 0;
  for (size_t i = 0; i < sp.stages.size(); ++i) {
    floor_s += stage_with_r(sp, i, Strategy::none, 0).microbatch_s;
    const StaticBytes& b = sp.stages[i].base.static_bytes;
    step_s += optimizer_step_s({b.weights, b.gradients, b.optimizer}, sp.costed, sp.hardware);
  }
  const double stages = double(sp.stages.size());
  return floor_s * (1 + double(sp.costed.microbatches() - 1) / stages) + step_s / stages;
}

// One worker's search spaces by what their layers depend on (tp, ep, mbs; with the per-layer
// search, whose options depend on it, the strategy): layouts that differ only in pp and dp share
// the layers' shapes and costs and rebuild only their stages (with_pipeline).
struct SpaceCache {
  using Key = std::tuple<int64_t, int64_t, int64_t, int>;
  std::map<Key, SearchSpace> spaces;
  static constexpr size_t kMaxSpaces = 512;  // a worker's memory stays bounded

  const SearchSpace& space_for(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t,
                               const SearchOptions& o, Strategy s) {
    const Key key{t.tp, t.ep, t.mbs, o.per_layer ? int(s) : -1};
    auto it = spaces.find(key);
    if (it == spaces.end()) {
      if (spaces.size() >= kMaxSpaces) spaces.clear();
      return spaces.emplace(key, build_search_space(m, hw, t, o)).first->second;
    }
    // the strategies of one layout (visited in a row) share its space as it is
    if (it->second.training.pp != t.pp || it->second.training.dp != t.dp) repipeline(it->second, t);
    return it->second;
  }
};

// Plans layouts [first, last) into `out`; `done` counts the layouts finished.
void sweep_range(const ModelSpec& m, const HardwareSpec& hw, const SweepSpace& space,
                 const std::vector<Layout>& layouts, size_t first, size_t last, double budget_bytes, SweepPart& out,
                 SpaceCache& cache, std::atomic<int64_t>& done) {
  for (size_t i = first; i < last; ++i, ++done) {
    const Layout& l = layouts[i];
    auto problems = validate_training(l.t, m);
    if (problems.empty()) problems = network_problems(l.t, hw, hw.name);
    if (!problems.empty()) {
      ++out.infeasible_by_reason[category(problems.front())];
      continue;
    }
    SearchOptions o;
    o.strategies = l.s == Strategy::none ? std::vector<Strategy>{} : std::vector<Strategy>{l.s};
    o.per_layer = space.per_layer && l.s != Strategy::none;
    o.offload = false;
    o.intervals = false;
    o.explain = false;
    o.budget_bytes = budget_bytes;
    const SearchSpace& ss = cache.space_for(m, hw, l.t, o, l.s);
    if (space.split_top > 0 && ss.training.pp > 1 && least_peak_bytes(ss) <= budget_bytes)
      out.most_tokens_per_s.emplace_back(double(ss.training.gbs * ss.training.seq) / iteration_lower_bound_s(ss), i);
    const PlanSearchResult pr = plan_search(ss, o);
    if (!pr.best) {
      std::string why = "does not fit the memory budget";
      if (pr.shortfall) why += std::string(": ") + describe(pr.shortfall->cause);
      ++out.infeasible_by_reason[why];
      out.no_fit[i] = why;
      continue;
    }
    // a strategy whose best plan recomputes no layer is the none plan: listed once, under none
    if (l.s != Strategy::none && recomputes_nothing(*pr.best)) {
      if (std::find(space.strategies.begin(), space.strategies.end(), Strategy::none) != space.strategies.end())
        continue;
    }
    SweepRow row{ss.training, l.s, true, "", *pr.best, pr.best->mfu, pr.best->tokens_per_s};
    if (recomputes_nothing(*pr.best)) row.strategy = Strategy::none;
    out.rows.push_back(std::move(row));
    out.row_layouts.push_back(i);
  }
}

// `l` on its best split with per-stage R (best_split_and_r), as estimate prices it; empty when no
// split fits or the strategy recomputes nothing there and `none_listed` (none's own row covers it).
std::optional<SweepRow> split_row(const SearchSpace& space, const Layout& l, double budget_bytes, bool none_listed) {
  const ModelSpec& m = space.model;
  const HardwareSpec& hw = space.hardware;
  const SplitPlan sp = best_split_and_r(space, l.s, budget_bytes);
  if (!sp.fits) return std::nullopt;
  const bool recomputes =
      std::any_of(sp.recompute_layers.begin(), sp.recompute_layers.end(), [](int64_t r) { return r > 0; });
  if (l.s != Strategy::none && !recomputes && none_listed) return std::nullopt;
  SweepRow row;
  row.layout = with_defaults(l.t);
  row.layout.layers_per_stage = sp.layers_per_stage;
  Plan plan;
  plan.strategy = recomputes ? l.s : Strategy::none;
  plan.recompute_layers = sp.recompute_layers;
  const Estimate e = estimate(m, hw, row.layout, plan, budget_bytes);
  if (!e.fits) return std::nullopt;
  row.strategy = plan.strategy;
  row.feasible = true;
  row.best.mode = SearchMode::per_stage_r;
  row.best.strategy = plan.strategy;
  row.best.r = sp.recompute_layers;
  row.best.time_s = e.iteration.time_s;
  row.best.peak_bytes = e.peak_memory_bytes;
  row.best.fits = true;
  for (const auto& st : e.stages) {
    row.best.stage_peak_bytes.push_back(st.memory_bytes.peak);
    if (st.memory_bytes.peak >= e.peak_memory_bytes) row.best.worst_stage = st.index;
  }
  row.best.mfu = row.mfu = e.iteration.mfu;
  row.best.tokens_per_s = row.tokens_per_s = e.iteration.tokens_per_s;
  row.split_searched = true;
  return row;
}

// Replans on its best split each layout whose bound could place it among the first `top` rows,
// most promising first, until the bound of the next cannot; a replanned row replaces the layout's
// own where it is faster.
void search_splits(const ModelSpec& m, const HardwareSpec& hw, const std::vector<Layout>& layouts,
                   const SweepSpace& space, double budget_bytes, std::vector<std::pair<double, size_t>> bounds,
                   std::vector<SweepRow>& rows, std::vector<size_t>& row_layouts,
                   const std::map<size_t, std::string>& no_fit, std::map<std::string, int64_t>& infeasible_by_reason) {
  std::map<size_t, size_t> row_of;
  for (size_t r = 0; r < rows.size(); ++r) row_of[row_layouts[r]] = r;
  std::multiset<double, std::greater<>> tokens_per_s;  // of every row, fastest first
  for (const SweepRow& r : rows) tokens_per_s.insert(r.tokens_per_s);
  const auto threshold = [&] {
    if (int64_t(tokens_per_s.size()) < space.split_top) return 0.0;
    return *std::next(tokens_per_s.begin(), long(space.split_top - 1));
  };
  std::stable_sort(bounds.begin(), bounds.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  SpaceCache cache;
  SearchOptions o;  // the split search reads the layer costs of R plans only
  o.per_layer = false;
  const bool none_listed =
      std::find(space.strategies.begin(), space.strategies.end(), Strategy::none) != space.strategies.end();
  for (const auto& [bound, i] : bounds) {
    if (bound <= threshold()) break;
    std::optional<SweepRow> row =
        split_row(cache.space_for(m, hw, layouts[i].t, o, layouts[i].s), layouts[i], budget_bytes, none_listed);
    if (!row) continue;
    const auto it = row_of.find(i);
    if (it == row_of.end()) {
      if (const auto why = no_fit.find(i); why != no_fit.end() && --infeasible_by_reason[why->second] == 0)
        infeasible_by_reason.erase(why->second);
      row_of[i] = rows.size();
      rows.push_back(std::move(*row));
      row_layouts.push_back(i);
    } else if (row->tokens_per_s > rows[it->second].tokens_per_s) {
      tokens_per_s.erase(tokens_per_s.find(rows[it->second].tokens_per_s));
      rows[it->second] = std::move(*row);
    } else {
      continue;
    }
    tokens_per_s.insert(rows[row_of[i]].tokens_per_s);
  }
}

// Layouts per unit of work: the strategies of a layout stay together (they share its space).
constexpr size_t kLayoutsPerPart = 64;

}  // namespace

SweepResult sweep(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& base, const SweepSpace& space,
                  double budget_bytes, const std::function<void(int64_t, int64_t)>& progress) {
  const std::vector<Layout> layouts = enumerate(m, base, space);
  SweepResult res;
  res.evaluated = int64_t(layouts.size());
  for (int64_t gpus : space.gpus)
    if (std::none_of(layouts.begin(), layouts.end(), [&](const Layout& l) { return l.t.gpus() == gpus; }))
      res.gpus_without_layout.push_back(gpus);
  const size_t stride = kLayoutsPerPart * std::max<size_t>(space.strategies.size(), 1);
  std::vector<SweepPart> parts((layouts.size() + stride - 1) / stride);
  std::atomic<size_t> next_part = 0;
  std::atomic<int64_t> done = 0;
  const auto report = [&] { progress(done.load(), res.evaluated); };
  // a worker plans parts until none is left; the calling thread (worker 0) reports progress
  // between its own parts and then while the others finish
  const auto work = [&](size_t worker) {
    SpaceCache cache;
    for (size_t p; (p = next_part++) < parts.size();) {
      if (worker == 0 && progress) report();
      sweep_range(m, hw, space, layouts, p * stride, std::min(layouts.size(), (p + 1) * stride), budget_bytes, parts[p],
                  cache, done);
    }
  };
  run_workers(std::min(parts.size(), space.threads > 0 ? size_t(space.threads) : size_t(1)), work,
              progress ? std::function<void()>(report) : nullptr);
  if (progress) progress(res.evaluated, res.evaluated);
  // parts in layout order, then a stable sort: the same rows in the same order for any thread count
  std::vector<size_t> row_layouts;
  std::vector<std::pair<double, size_t>> bounds;
  std::map<size_t, std::string> no_fit;
  for (SweepPart& part : parts) {
    no_fit.merge(part.no_fit);
    std::move(part.rows.begin(), part.rows.end(), std::back_inserter(res.rows));
    row_layouts.insert(row_layouts.end(), part.row_layouts.begin(), part.row_layouts.end());
    bounds.insert(bounds.end(), part.most_tokens_per_s.begin(), part.most_tokens_per_s.end());
    for (const auto& [why, n] : part.infeasible_by_reason) res.infeasible_by_reason[why] += n;
  }
  if (space.split_top > 0)
    search_splits(m, hw, layouts, space, budget_bytes, std::move(bounds), res.rows, row_layouts, no_fit,
                  res.infeasible_by_reason);
  std::stable_sort(res.rows.begin(), res.rows.end(),
                   [](const SweepRow& a, const SweepRow& b) { return a.tokens_per_s > b.tokens_per_s; });
  return res;
}

}  // namespace remat
