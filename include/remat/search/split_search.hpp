#pragma once
// The pipeline split as a plan choice: how many decoder layers each stage
// holds, searched with the same stage costs as every estimate.
#include <limits>
#include <vector>

#include "remat/cost/estimate.hpp"
#include "remat/search/search_space.hpp"

namespace remat {

struct SplitChoice {
  std::vector<int64_t> layers_per_stage;
  bool fits = false;  // false: no split fits; this one has the smallest peak
};

// The split of `t`'s layers (at least one per stage) that gives `plan` the
// shortest iteration with every stage within `budget_bytes`; when none fits,
// the split with the smallest peak. Exact over every split while pp x layers x
// the widest stage considered stays small (3 x the even count + 2 layers a stage);
// `plan` applies by position in a stage (a Megatron setting, or R for every
// stage), not per global layer.
// Beyond this many layers in a stage of the even split, or beyond this many (stage, first layer,
// layer count) cells, the split is not searched: the default split (stage_layer_ranges) is
// returned, priced.
// Real models need 50k cells at most (LLaMA3-405B, 126 layers, on pp 2-8); a plan searches the
// split once per Megatron-LM setting, and 200k cells (250 layers on pp 16) took 1.7 s.
inline constexpr int64_t kMaxSearchedStageLayers = 64;
inline constexpr int64_t kMaxSearchedCells = 100'000;

// `wanted_below_s`: a split is only wanted if its iteration can come under it (a caller comparing
// plans, holding one that fast); where a bound over every fitting split is above it, the search
// stops at its first fitting split (min-max stage time) instead of the best.
SplitChoice best_split(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, const Plan& plan,
                       double budget_bytes, double wanted_below_s = std::numeric_limits<double>::infinity());

// The split and per-stage R of `strategy` (not StreamBP) for `space`'s layout with the shortest iteration, every stage
// within `budget_bytes`: each stage of a split recomputes the fewest of its first layers that fit it (its time grows
// with R). Searched under the same limits as best_split; beyond them the default split with each stage's least fitting
// R. `fits` false: no split fits (this one has the least peak).
struct SplitPlan {
  std::vector<int64_t> layers_per_stage, recompute_layers;
  bool fits = false;
};
SplitPlan best_split_and_r(const SearchSpace& space, Strategy strategy, double budget_bytes);

}  // namespace remat
