#pragma once
// What the planner chooses from: per layer kind (dense, MoE) every choice's
// cost, computed once; per stage its fixed part. Stage totals of any
// assignment are then sums, evaluated without rebuilding layers.
#include <string>
#include <vector>

#include "remat/cost/stage_model.hpp"
#include "remat/spec/plan.hpp"

namespace remat {

// Which decisions the search may take.
struct SearchOptions {
  std::vector<Strategy> strategies = {Strategy::full, Strategy::selective, Strategy::standard, Strategy::eagle};
  bool uniform_r = true;    // one R for all stages (Megatron's --recompute-num-layers)
  bool per_stage_r = true;  // one R per stage
  bool per_layer = true;    // per layer and block: keep, recompute or offload
  bool offload = true;      // offload may be chosen
  double budget_bytes = 0;
};

struct LayerOption {
  LayerChoice choice;
  LayerCost cost;
};

struct StageSpace {
  StageBase base;
  std::vector<int> kinds;  // per layer of the stage: 0 dense, 1 MoE
};

struct SearchSpace {
  ModelSpec model;
  HardwareSpec hardware;
  TrainingSpec training;
  LayerShapes shapes;
  std::vector<StageSpace> stages;
  LayerCost keep_cost[2];                   // per kind: every activation kept
  std::vector<LayerOption> options[2];      // per kind: non-dominated choices (keep included)
  std::vector<LayerCost> strategy_cost[2];  // per kind, indexed by Strategy
  bool early_stop = false;
};

// `t` validated; the options' choices respect `opts`.
SearchSpace build_search_space(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t,
                               const SearchOptions& opts);

// Stage totals when the first `r` layers use strategy `s` and the rest keep.
StageTotals stage_with_r(const SearchSpace& space, size_t stage, Strategy s, int64_t r);

// Iteration time from per-stage microbatch times (same formula as estimate).
double iteration_time_s(const SearchSpace& space, const std::vector<StageTotals>& stages);

}  // namespace remat
