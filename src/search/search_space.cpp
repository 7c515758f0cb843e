#include "remat/search/search_space.hpp"

#include <algorithm>
#include <array>

#include "remat/cost/estimate.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

bool allowed(const SearchOptions& o, Strategy s) {
  return std::find(o.strategies.begin(), o.strategies.end(), s) != o.strategies.end();
}

// Every combination of block modes the options allow, plus the layer-level modes.
std::vector<LayerChoice> enumerate_choices(const LayerDef& layer, const SearchOptions& o) {
  std::vector<BlockMode> modes = {BlockMode::keep};
  if (allowed(o, Strategy::standard)) modes.push_back(BlockMode::standard);
  if (allowed(o, Strategy::eagle)) modes.push_back(BlockMode::eagle);
  if (o.offload) modes.push_back(BlockMode::offload);
  std::vector<LayerChoice> out = {LayerChoice{LayerMode::keep, {}}};
  if (allowed(o, Strategy::full)) out.push_back({LayerMode::full, {}});
  if (allowed(o, Strategy::selective)) out.push_back({LayerMode::selective, {}});
  const size_t n = size_t(layer.recompute_block_count());
  std::vector<size_t> digit(n, 0);
  while (true) {  // odometer over modes^n
    LayerChoice c{LayerMode::blocks, {}};
    bool all_keep = true;
    for (size_t d : digit) c.blocks.push_back(modes[d]), all_keep = all_keep && d == 0;
    if (!all_keep) out.push_back(c);
    size_t i = 0;
    while (i < n && ++digit[i] == modes.size()) digit[i++] = 0;
    if (i == n) break;
  }
  return out;
}

bool dominates(const LayerCost& a, const LayerCost& b) {
  return a.kept_bytes <= b.kept_bytes && a.transient_bytes <= b.transient_bytes && a.recompute_s <= b.recompute_s &&
         a.offload_bytes <= b.offload_bytes;
}

// Keeps the choices no other choice beats on every cost (first wins ties).
std::vector<LayerOption> prune(std::vector<LayerOption> all) {
  std::vector<LayerOption> kept;
  for (size_t i = 0; i < all.size(); ++i) {
    bool beaten = false;
    for (size_t j = 0; j < all.size() && !beaten; ++j) {
      if (i == j || !dominates(all[j].cost, all[i].cost)) continue;
      beaten = !dominates(all[i].cost, all[j].cost) || j < i;
    }
    if (!beaten) kept.push_back(std::move(all[i]));
  }
  return kept;
}

}  // namespace

int SearchSpace::kind_of(int64_t g) const {
  const int shape = model.layer_kind(g);
  if (g > first_adapted) return shape;
  return g < first_adapted ? shape_kinds + shape : 2 * shape_kinds + shape;
}

LayerCost SearchSpace::cost(int kind, LayerChoice choice) const {
  const LayerDef& layer = shapes->kinds[size_t(kind % shape_kinds)];
  return stage_layer_cost(model, hardware, costed, layer, choice, kind_layer[kind]);
}

namespace {

// The stages of `sp.costed`'s pipeline: each one's fixed part and its layers' kinds.
void add_stages(SearchSpace& sp, const RankShape& r) {
  const auto ranges = stage_layer_ranges(sp.model, sp.costed);
  for (size_t i = 0; i < ranges.size(); ++i) {
    StageSpace st{stage_base(sp.model, sp.hardware, sp.costed, r, int64_t(i), ranges[i]), {}};
    for (int64_t g = ranges[i].first; g < ranges[i].second; ++g) st.kinds.push_back(sp.kind_of(g));
    st.runs = kind_runs(st.kinds);
    sp.stages.push_back(std::move(st));
  }
}

}  // namespace

SearchSpace build_search_space(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t_in,
                               const SearchOptions& opts) {
  SearchSpace sp;
  sp.model = m, sp.hardware = hw;
  sp.training = with_defaults(t_in);
  sp.costed = costed_training(sp.training, Strategy::none);
  const RankShape r = rank_shape(sp.costed);
  sp.shapes = std::make_shared<const LayerShapes>(build_shapes(m, r));
  sp.microbatch_model_flops = model_flops_per_microbatch(m, sp.costed, effective_layers(m, sp.costed), *sp.shapes);
  sp.model_flops = iteration_model_flops(sp.microbatch_model_flops, sp.costed);
  const auto ranges = stage_layer_ranges(m, sp.costed);
  sp.shape_kinds = m.layer_kind_count();
  sp.first_adapted = std::min(first_adapted_layer(m, sp.costed), ranges.back().second);
  const size_t kinds = 3 * size_t(sp.shape_kinds);  // the shapes', then the frozen prefix's (kind_of)
  sp.kind_layer.assign(kinds, 0), sp.keep_cost.assign(kinds, {}), sp.options.assign(kinds, {});
  sp.strategy_cost.assign(kinds, {});
  std::vector<bool> used(kinds);
  used[0] = used[1] = true;  // attention + dense / MoE: always costed, as before hybrid kinds
  for (int64_t g = ranges.back().second; g-- > 0;) {
    // a shape's kind is costed at a layer past the frozen prefix where it has one
    if (sp.kind_of(g) != m.layer_kind(g) || sp.kind_layer[size_t(m.layer_kind(g))] <= sp.first_adapted)
      sp.kind_layer[size_t(sp.kind_of(g))] = g;
    used[size_t(sp.kind_of(g))] = true;
  }
  for (int k = 0; k < sp.kind_count(); ++k) {
    if (!used[size_t(k)]) continue;
    const LayerDef& layer = sp.shapes->kinds[size_t(k % sp.shape_kinds)];
    sp.keep_cost[k] = sp.cost(k, choice_for(Strategy::none, layer));
    for (const StrategyInfo& s : kStrategies) sp.strategy_cost[k].push_back(sp.cost(k, choice_for(s.strategy, layer)));
    if (!opts.per_layer) continue;
    std::vector<LayerOption> all;
    BlockCostMemo memo;  // the layer's blocks in each mode, costed once for all its choices
    for (const LayerChoice& c : enumerate_choices(layer, opts)) {
      LayerChoice costed = c;  // as SearchSpace::cost: the option keeps the choice as enumerated
      all.push_back({c, stage_layer_cost(sp.model, sp.hardware, sp.costed, layer, costed, sp.kind_layer[k], memo)});
    }
    sp.options[k] = prune(std::move(all));
  }
  add_stages(sp, r);
  return sp;
}

void repipeline(SearchSpace& sp, const TrainingSpec& t_in) {
  sp.training = with_defaults(t_in);
  sp.costed = costed_training(sp.training, Strategy::none);
  sp.model_flops = iteration_model_flops(sp.microbatch_model_flops, sp.costed);
  sp.stages.clear();
  add_stages(sp, rank_shape(sp.costed));
}

SearchSpace with_pipeline(const SearchSpace& built, const TrainingSpec& t_in) {
  SearchSpace sp = built;
  repipeline(sp, t_in);
  return sp;
}

std::vector<KindRun> kind_runs(const std::vector<int>& kinds) {
  std::vector<KindRun> runs;
  for (int kind : kinds) {
    if (runs.empty() || runs.back().kind != kind) runs.push_back({kind, 0});
    ++runs.back().layers;
  }
  return runs;
}

LayerSums sums_with_r(const SearchSpace& space, const std::vector<KindRun>& runs, Strategy s, int64_t r) {
  LayerSums sums;
  // runs of equal layers (one kind, all recomputed or all kept) are added at once: a run of one
  // kind splits at r into its recomputed and its kept layers (add skips none)
  int64_t first = 0;
  for (const KindRun& run : runs) {
    const int64_t recomputed = std::clamp<int64_t>(r - first, 0, run.layers);
    sums.add(space.strategy_cost[run.kind][size_t(s)], recomputed);
    sums.add(space.keep_cost[run.kind], run.layers - recomputed);
    first += run.layers;
  }
  return sums;
}

LayerSums sums_with_r(const SearchSpace& space, const std::vector<int>& kinds, Strategy s, int64_t r) {
  return sums_with_r(space, kind_runs(kinds), s, r);
}

StageTotals stage_with_r(const SearchSpace& space, size_t stage, Strategy s, int64_t r) {
  const StageSpace& st = space.stages[stage];
  const LayerSums sums =
      st.runs.empty() && !st.kinds.empty() ? sums_with_r(space, st.kinds, s, r) : sums_with_r(space, st.runs, s, r);
  return stage_totals(st.base, sums);
}

IterationEstimate iteration_of(const SearchSpace& space, const std::vector<StageTotals>& stages) {
  thread_local std::vector<StageRun> runs;  // reused: the planner asks for one per candidate
  runs.clear();
  for (size_t i = 0; i < stages.size(); ++i)
    runs.push_back({stages[i].microbatch_s, space.stages[i].base.static_bytes});
  return iteration_from_stages(runs, space.model_flops, 0, space.costed, space.hardware);
}

}  // namespace remat
