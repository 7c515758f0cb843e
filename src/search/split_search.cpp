// Exact search over contiguous splits. With n microbatches the iteration is
// sum(stage times) + (n - 1) x max(stage time) + the slowest optimizer step S:
// for each pair of bounds (S, B on the slowest stage), ascending, a DP over
// (stage, first layer) finds the split of least summed time whose stages all
// fit and stay within both; the search stops once S + (n - 1) x B plus the
// least sum without bounds reaches the best iteration found.
#include "remat/search/split_search.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>

#include "remat/cost/stage_model.hpp"
#include "remat/search/search_space.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMaxRuns = 512;               // bound pairs tried; the stopping rule ends far sooner on real models
constexpr int64_t kMaxCellVisits = 40'000'000;  // over all runs

struct StageCell {
  double microbatch_s = kInf, peak_bytes = kInf, step_s = 0;
  bool fits = false;
  int64_t recompute_layers = 0;  // with least_r: the R this stage takes
};

class SplitSearch {
 public:
  // With `space` (of t's layout): each stage takes the fewest of its first layers recomputed under
  // plan.strategy that fit it (its time grows with that count), instead of the plan's own R.
  SplitSearch(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, const Plan& plan, double budget,
              const SearchSpace* space = nullptr)
      : space_(space),
        m_(m),
        hw_(hw),
        t_(costed_training(t, plan.strategy)),
        plan_(plan),
        budget_(budget),
        r_(rank_shape(t_)),
        shapes_(build_shapes(m, r_)),
        layers_(effective_layers(m, t_)),
        pp_(t_.pp) {
    const int64_t even = (layers_ + pp_ - 1) / pp_;
    widest_ = std::min(layers_ - pp_ + 1, 3 * even + 2);
    // bounded work and memory for very deep models: narrower stages only (exact for the others)
    const int64_t cell_limit = 4'000'000 / std::max<int64_t>(1, pp_ * layers_);
    widest_ = std::max(std::min(widest_, cell_limit - 1), std::min(even, layers_ - pp_ + 1));
    // rolling hash of the layer shapes, so that ranges of identical layers share one evaluation
    std::unordered_map<const LayerDef*, uint64_t> kind;
    prefix_.assign(size_t(layers_ + 1), 0);
    power_.assign(size_t(layers_ + 1), 1);
    for (int64_t g = 0; g < layers_; ++g) {
      const LayerDef* l = &shapes_.at(m, g);
      const uint64_t id = kind.emplace(l, kind.size() + 1).first->second;
      prefix_[size_t(g + 1)] = prefix_[size_t(g)] * kBase + id;
      power_[size_t(g + 1)] = power_[size_t(g)] * kBase;
    }
    cells_.assign(size_t(pp_ * layers_ * (widest_ + 1)), nullptr);
    walks_.resize(size_t(pp_ * layers_));
  }

  int64_t pp() const { return pp_; }
  int64_t layers() const { return layers_; }
  int64_t widest() const { return widest_; }
  int64_t microbatches() const { return t_.microbatches(); }

  // Stage i over layers [a, a + k): priced on first use (the split searches visit each many times).
  const StageCell& cell(int64_t i, int64_t a, int64_t k) {
    const StageCell*& slot = cells_[size_t((i * layers_ + a) * (widest_ + 1) + k)];
    return slot ? *slot : first_use(slot, i, a, k);
  }

  // The stage sizes k allowed for stage i starting at layer a (every later stage keeps >= 1 layer).
  int64_t largest_k(int64_t i, int64_t a) const { return std::min(widest_, layers_ - a - (pp_ - 1 - i)); }
  int64_t smallest_k(int64_t i, int64_t a) const {
    return i + 1 == pp_ ? layers_ - a : std::max<int64_t>(1, layers_ - a - (pp_ - 1 - i) * widest_);
  }

 private:
  [[gnu::noinline]] const StageCell& first_use(const StageCell*& slot, int64_t i, int64_t a, int64_t k) {
    const uint64_t hash = prefix_[size_t(a + k)] - prefix_[size_t(a)] * power_[size_t(k)];
    auto [it, added] = unique_.try_emplace({i, k, hash, a == 0}, StageCell{});
    if (added) it->second = space_ ? least_r_cell(i, a, k) : priced(i, a, k);
    slot = &it->second;
    return *slot;
  }

  // stage_estimate's stage, its layers walked on from the last size priced for (i, a)
  StageCell priced(int64_t i, int64_t a, int64_t k) {
    const StageEstimate st = walk_to(i, a, k).finish(stage_base(m_, hw_, t_, r_, i, {a, a + k}, &params_));
    const StageMemory& mem = st.memory_bytes;
    return {st.microbatch_s, mem.peak, optimizer_step_s({mem.weights, mem.gradients, mem.optimizer}, t_, hw_),
            mem.peak <= budget_, st.recompute_layers};
  }

  // The walk of stage i from layer a with k layers added. The DP asks for k ascending, so one walk
  // per (i, a) serves all its sizes over the layers placed alike in each (layers_placed_alike); a
  // copy of it adds the rest.
  StageLayerWalk& walk_to(int64_t i, int64_t a, int64_t k) {
    std::optional<StageLayerWalk>& w = walks_[size_t(i * layers_ + a)];
    const int64_t alike = layers_placed_alike(plan_, k);
    if (!w || w->added() > alike) w.emplace(m_, hw_, t_, plan_, shapes_, size_t(i), a, largest_k(i, a), cache_);
    while (w->added() < alike) w->add_next();
    if (alike == k) return *w;
    tail_.emplace(*w);
    tail_->set_length(k);
    while (tail_->added() < k) tail_->add_next();
    return *tail_;
  }

  // The fastest R that fits the stage, else the one of least peak. The first R layers recomputed
  // are summed forward one layer per R; the kept rest comes from sums over each suffix, built once
  // from the back (kept_suffix), so each R costs one join instead of a pass over the stage.
  StageCell least_r_cell(int64_t i, int64_t a, int64_t k) {
    const StageBase base = stage_base(m_, hw_, t_, r_, i, {a, a + k}, &params_);
    const StaticBytes& b = base.static_bytes;
    const double step_s = optimizer_step_s({b.weights, b.gradients, b.optimizer}, t_, hw_);
    fill_kept_suffixes(a, k);
    const size_t strategy = size_t(plan_.strategy);
    LayerSums recomputed;
    StageCell lowest;
    for (int64_t r = 0; r <= (plan_.strategy == Strategy::none ? 0 : k); ++r) {
      if (r > 0) recomputed.add(space_->strategy_cost[size_t(space_->kind_of(a + r - 1))][strategy]);
      const StageTotals tot = stage_totals(base, joined(recomputed, suffixes_[size_t(r)]));
      const StageCell c{tot.microbatch_s, tot.peak_bytes, step_s, tot.peak_bytes <= budget_, r};
      if (c.fits) return c;
      if (c.peak_bytes < lowest.peak_bytes) lowest = c;
    }
    return lowest;
  }

  // Layers j.. of a stage, all kept: their sums, and their ordered working set as a map of the one
  // before them, x -> max(x + shift, ordered_alone) (LayerSums::add, composed layer by layer). No
  // layers: the identity (ordered_alone -inf).
  struct KeptSuffix {
    LayerSums sums;
    double shift = 0;
    double ordered_alone = -kInf;
    bool empty() const { return ordered_alone == -kInf; }
  };

  void fill_kept_suffixes(int64_t a, int64_t k) {
    suffixes_.assign(size_t(k + 1), KeptSuffix{});
    for (int64_t j = k - 1; j >= 0; --j) {
      const LayerCost& c = space_->keep_cost[size_t(space_->kind_of(a + j))];
      const KeptSuffix& later = suffixes_[size_t(j + 1)];
      KeptSuffix& s = suffixes_[size_t(j)];
      s.sums.add(c);
      s.sums = joined(s.sums, later);
      s.shift = c.grads_bytes - c.kept_bytes + later.shift;
      s.ordered_alone = std::max(c.transient_bytes + later.shift, later.ordered_alone);
    }
  }

  // The times, FLOPs and offload counts of `later` added to `sums` (what LayerSums::add sums).
  static void add_additive(LayerSums& sums, const LayerSums& later) {
    sums.offloaded_layers += later.offloaded_layers;
    sums.offload_bytes += later.offload_bytes;
    sums.fwd_s += later.fwd_s, sums.bwd_s += later.bwd_s, sums.recompute_s += later.recompute_s;
    sums.comm_s += later.comm_s, sums.fwd_comm_s += later.fwd_comm_s, sums.bwd_comm_s += later.bwd_comm_s;
    sums.fwd_flops += later.fwd_flops, sums.bwd_flops += later.bwd_flops;
    sums.recompute_flops += later.recompute_flops;
  }

  // `first` followed by the kept layers of `later` (kept layers replay no chunk: they close it).
  static LayerSums joined(const LayerSums& first, const KeptSuffix& later) {
    if (later.empty()) return first;
    LayerSums sums = first;
    sums.kept_bytes += later.sums.kept_bytes;
    sums.transient_bytes = std::max(sums.transient_bytes, later.sums.transient_bytes);
    sums.ordered_transient_bytes = std::max(first.ordered_transient_bytes + later.shift, later.ordered_alone);
    sums.open_chunk_bytes = 0;
    sums.offload_staging_bytes = std::max(sums.offload_staging_bytes, later.sums.offload_staging_bytes);
    add_additive(sums, later.sums);
    return sums;
  }

  const SearchSpace* space_ = nullptr;
  static constexpr uint64_t kBase = 1000003;
  struct Key {
    int64_t stage, count;
    uint64_t hash;
    bool first;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return size_t(k.hash ^ (uint64_t(k.stage) * 0x9e3779b97f4a7c15ULL) ^ (uint64_t(k.count) << 32) ^ k.first);
    }
  };
  const ModelSpec& m_;
  const HardwareSpec& hw_;
  TrainingSpec t_;
  const Plan& plan_;
  double budget_;
  RankShape r_;
  LayerShapes shapes_;
  int64_t layers_, pp_, widest_ = 1;
  std::vector<uint64_t> prefix_, power_;
  std::vector<const StageCell*> cells_;
  std::unordered_map<Key, StageCell, KeyHash> unique_;
  LayerCostCache cache_;
  LayerParamTable params_{m_, t_};
  std::vector<std::optional<StageLayerWalk>> walks_;  // by (stage, first layer)
  std::optional<StageLayerWalk> tail_;                // walk_to's copy for the layers past those
  std::vector<KeptSuffix> suffixes_;                  // least_r_cell's, reused
};

// The split that minimizes the stages' values folded by `combine` (max or sum) over the
// stages `admit` lets in; `*best` is that minimum (infinity and an empty split when none).
template <class Admit, class Value, class Combine>
std::vector<int64_t> best_split_by(SplitSearch& s, Admit admit, Value value, Combine combine, double* best) {
  const int64_t pp = s.pp(), n = s.layers();
  std::vector<double> f(size_t((pp + 1) * (n + 1)), kInf);  // (stage, first layer) -> best of the rest
  std::vector<int64_t> pick(size_t(pp * (n + 1)), 0);
  f[size_t(pp * (n + 1) + n)] = 0;
  for (int64_t i = pp - 1; i >= 0; --i)
    for (int64_t a = i; a <= n - (pp - i); ++a) {
      double& out = f[size_t(i * (n + 1) + a)];
      for (int64_t k = s.smallest_k(i, a); k <= s.largest_k(i, a); ++k) {
        const double rest = f[size_t((i + 1) * (n + 1) + a + k)];
        if (rest == kInf) continue;
        const StageCell& c = s.cell(i, a, k);
        if (!admit(c)) continue;
        const double v = combine(value(c), rest);
        if (v < out) out = v, pick[size_t(i * (n + 1) + a)] = k;
      }
    }
  *best = f[0];
  std::vector<int64_t> split;
  if (f[0] == kInf) return split;
  for (int64_t i = 0, a = 0; i < pp; a += split.back(), ++i) split.push_back(pick[size_t(i * (n + 1) + a)]);
  return split;
}

const auto kMax = [](double x, double y) { return std::max(x, y); };
const auto kSum = [](double x, double y) { return x + y; };
const auto kTime = [](const StageCell& c) { return c.microbatch_s; };

// The split of least summed stage time, every stage fitting, within `bound` and
// with an optimizer step within `step_bound`.
std::vector<int64_t> min_sum_split(SplitSearch& s, double bound, double step_bound, double* best) {
  const auto admit = [&](const StageCell& c) { return c.fits && c.microbatch_s <= bound && c.step_s <= step_bound; };
  return best_split_by(s, admit, kTime, kSum, best);
}

// The iteration time of a split, as iteration_from_stages computes it.
double iteration_s(SplitSearch& s, const std::vector<int64_t>& split) {
  double sum = 0, slowest = 0, step = 0;
  int64_t a = 0;
  for (size_t i = 0; i < split.size(); a += split[i], ++i) {
    const StageCell& c = s.cell(int64_t(i), a, split[i]);
    sum += c.microbatch_s, slowest = std::max(slowest, c.microbatch_s), step = std::max(step, c.step_s);
  }
  return sum + double(s.microbatches() - 1) * slowest + step;
}

// Whether the split is searched: the search's cells grow as layers squared.
bool split_searched(const ModelSpec& m, const TrainingSpec& t) {
  const int64_t layers = effective_layers(m, t);
  const int64_t even = (layers + t.pp - 1) / t.pp;
  return t.pp > 1 && even <= kMaxSearchedStageLayers && t.pp * layers * (3 * even + 2) <= kMaxSearchedCells;
}

std::vector<int64_t> default_split(const ModelSpec& m, const TrainingSpec& t) {
  std::vector<int64_t> split;
  for (const auto& [first, last] : stage_layer_ranges(m, with_defaults(t))) split.push_back(last - first);
  return split;
}

SplitChoice search_split(SplitSearch& s, double wanted_below_s) {
  double slowest = kInf;
  std::vector<int64_t> best = best_split_by(
      s, [](const StageCell& c) { return c.fits; }, kTime, kMax, &slowest);
  if (best.empty()) {
    double peak = kInf;
    const auto any = [](const StageCell&) { return true; };
    return {best_split_by(
                s, any, [](const StageCell& c) { return c.peak_bytes; }, kMax, &peak),
            false};
  }
  double least_sum = kInf;
  min_sum_split(s, kInf, kInf, &least_sum);
  double best_s = iteration_s(s, best);
  const double fill = double(s.microbatches() - 1);
  // every bound worth trying: the stage times and optimizer steps of fitting cells, ascending.
  // The loops below end at the first bound (and step) past which no split can beat best_s, and
  // best_s only falls, so those past it for the least step (for the slowest stage) are left out
  // before sorting: the same bounds are tried.
  std::vector<double> bounds, step_bounds;
  double least_step = kInf;
  for (int64_t i = 0; i < s.pp(); ++i)
    for (int64_t a = i; a <= s.layers() - (s.pp() - i); ++a)
      for (int64_t k = s.smallest_k(i, a); k <= s.largest_k(i, a); ++k) {
        const StageCell& c = s.cell(i, a, k);
        if (!c.fits) continue;
        if (c.microbatch_s >= slowest) bounds.push_back(c.microbatch_s);
        least_step = std::min(least_step, c.step_s);
        if (!(c.step_s + fill * slowest + least_sum >= best_s)) step_bounds.push_back(c.step_s);
      }
  if (least_step + fill * slowest + least_sum > wanted_below_s) return {best, true};
  bounds.erase(std::remove_if(bounds.begin(), bounds.end(),
                              [&](double b) { return least_step + fill * b + least_sum >= best_s; }),
               bounds.end());
  for (auto* v : {&bounds, &step_bounds}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  // bounded work: each run visits up to pp x layers x widest cells; past the cap the best split
  // found so far stands (exact on every model whose search ends sooner, which real ones do)
  const int64_t cells_per_run = std::max<int64_t>(1, s.pp() * s.layers() * s.widest());
  const int64_t max_runs = std::clamp<int64_t>(kMaxCellVisits / cells_per_run, 1, kMaxRuns);
  int64_t runs = 0;
  for (double step : step_bounds) {
    if (step + fill * slowest + least_sum >= best_s) break;
    for (double bound : bounds) {
      if (step + fill * bound + least_sum >= best_s || ++runs > max_runs) break;
      double sum = kInf;
      const std::vector<int64_t> split = min_sum_split(s, bound, step, &sum);
      if (split.empty()) continue;
      const double it = iteration_s(s, split);
      if (it < best_s) best_s = it, best = split;
    }
  }
  return {best, true};
}

}  // namespace

SplitChoice best_split(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, const Plan& plan,
                       double budget_bytes, double wanted_below_s) {
  if (!split_searched(m, t)) {
    const std::vector<int64_t> split = default_split(m, t);
    return {split, estimate(m, hw, with_defaults(t), plan, budget_bytes).fits};
  }
  SplitSearch s(m, hw, t, plan, budget_bytes);
  return search_split(s, wanted_below_s);
}

SplitPlan best_split_and_r(const SearchSpace& space, Strategy strategy, double budget_bytes) {
  const ModelSpec& m = space.model;
  const TrainingSpec& t = space.training;
  Plan plan;
  plan.strategy = strategy;
  SplitSearch s(m, space.hardware, t, plan, budget_bytes, &space);
  SplitPlan out;
  if (split_searched(m, t)) {
    const SplitChoice c = search_split(s, kInf);
    out.layers_per_stage = c.layers_per_stage, out.fits = c.fits;
  } else {
    out.layers_per_stage = default_split(m, t);
  }
  out.fits = !out.layers_per_stage.empty();
  int64_t a = 0;
  for (size_t i = 0; i < out.layers_per_stage.size(); a += out.layers_per_stage[i], ++i) {
    const StageCell& c = s.cell(int64_t(i), a, out.layers_per_stage[i]);
    out.recompute_layers.push_back(c.recompute_layers);
    out.fits = out.fits && c.fits;
  }
  return out;
}

}  // namespace remat
