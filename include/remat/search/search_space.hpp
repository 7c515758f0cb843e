#pragma once
// What the planner chooses from: per layer kind (dense, MoE) every choice's
// cost, computed once; per stage its fixed part. Stage totals of any
// assignment are then sums, evaluated without rebuilding layers.
#include <memory>
#include <string>
#include <vector>

#include "remat/cost/estimate.hpp"
#include "remat/cost/stage_model.hpp"
#include "remat/spec/plan.hpp"

namespace remat {

// Which decisions the search may take.
struct SearchOptions {
  std::vector<Strategy> strategies = searched_strategies();
  bool uniform_r = true;    // one R for all stages (Megatron's --recompute-num-layers)
  bool per_stage_r = true;  // one R per stage
  bool per_layer = true;    // per layer and block: keep, recompute or offload
  bool offload = true;      // offload may be chosen
  bool intervals = true;    // Chen's checkpoint-interval rows (plan's report)
  // why each candidate lost, the frontier and each strategy's best (plan's report); sweep needs
  // only the best plan, or the shortfall when none fits
  bool explain = true;
  double budget_bytes = 0;
  // stages the per-layer search works on at once; the plan does not depend on it
  int64_t threads = 1;
};

struct LayerOption {
  LayerChoice choice;
  LayerCost cost;
};

// Consecutive layers of one kind.
struct KindRun {
  int kind = 0;
  int64_t layers = 0;
};
std::vector<KindRun> kind_runs(const std::vector<int>& kinds);

struct StageSpace {
  StageBase base;
  std::vector<int> kinds;     // per layer of the stage: ModelSpec::layer_kind (0 dense, 1 MoE, ...)
  std::vector<KindRun> runs;  // kinds in runs (kind_runs); empty: not made, stage_with_r makes them
};

struct SearchSpace {
  ModelSpec model;
  HardwareSpec hardware;
  TrainingSpec training;   // as given, with defaults: what reports show and to_plan's plans are estimated with
  TrainingSpec costed;     // what every stage, layer and the iteration are costed with (costed_training)
  double model_flops = 0;  // per iteration, for MFU (iteration_model_flops)
  double microbatch_model_flops = 0;          // per microbatch (model_flops_per_microbatch): pp and dp do not change it
  std::shared_ptr<const LayerShapes> shapes;  // shared by the spaces with_pipeline makes
  // per layer kind (ModelSpec::layer_kind_count() of them):
  std::vector<int64_t> kind_layer;  // a global layer index of each kind
  std::vector<StageSpace> stages;
  std::vector<LayerCost> keep_cost;                   // every activation kept
  std::vector<std::vector<LayerOption>> options;      // non-dominated choices (keep included)
  std::vector<std::vector<LayerCost>> strategy_cost;  // indexed by Strategy (kStrategies)
  int kind_count() const { return int(kind_layer.size()); }
  // The search's kind of global layer g: its shape's (ModelSpec::layer_kind), except in a LoRA
  // step's frozen prefix, which estimate costs apart (frozen_prefix_layer): the layers before the
  // first adapted one, and that one, are kinds of their own beside their shape's.
  int kind_of(int64_t g) const;
  int64_t first_adapted = -1;  // first_adapted_layer of `costed`
  int shape_kinds = 0;         // ModelSpec::layer_kind_count()
  // A layer of `kind` under `choice`, as estimate costs it (stage_layer_cost).
  LayerCost cost(int kind, LayerChoice choice) const;
};

// `t` validated; the options' choices respect `opts`. The planner searches no
// StreamBP (the space is costed as estimate costs a plan of any other strategy).
SearchSpace build_search_space(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t,
                               const SearchOptions& opts);
// `built` for another pipeline and data-parallel size (t_in's pp, dp, gbs), same tp, ep, mbs, seq
// and options: the layer shapes and costs do not depend on pp or dp (rank_shape), only the stages
// are rebuilt.
SearchSpace with_pipeline(const SearchSpace& built, const TrainingSpec& t_in);
// with_pipeline in place (no copy of the model, hardware and layer costs).
void repipeline(SearchSpace& sp, const TrainingSpec& t_in);

// The sums of a stage's layers of `kinds` (in order) when the first `r` use strategy `s` and the
// rest keep.
LayerSums sums_with_r(const SearchSpace& space, const std::vector<int>& kinds, Strategy s, int64_t r);
// The same from the kinds' runs (kind_runs): the same sums, in time linear in the runs.
LayerSums sums_with_r(const SearchSpace& space, const std::vector<KindRun>& runs, Strategy s, int64_t r);

// Stage totals when the first `r` layers use strategy `s` and the rest keep.
StageTotals stage_with_r(const SearchSpace& space, size_t stage, Strategy s, int64_t r);

// The iteration of per-stage totals, through estimate's iteration_from_stages
// (hardware FLOPs are not counted).
IterationEstimate iteration_of(const SearchSpace& space, const std::vector<StageTotals>& stages);

}  // namespace remat
