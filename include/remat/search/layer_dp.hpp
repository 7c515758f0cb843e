#pragma once
// The exact per-layer search of one stage: which choice each layer takes so
// that the stage's microbatch time is least and its peak fits the budget.
#include <atomic>
#include <limits>
#include <optional>
#include <vector>

#include "remat/search/search_space.hpp"

namespace remat {

struct StagePlan {
  std::vector<LayerChoice> per_layer;
  StageTotals totals;
  // 0 when the exact search chose the plan; when the counts search did (a deep stage, see
  // best_stage_plan), a lower bound on the fastest fitting plan's time: this plan is at most
  // totals.microbatch_s - optimum_lower_bound_s slower than it.
  double optimum_lower_bound_s = 0;
};

// Dynamic programming over the stage's layers. The stage's cost depends on
// its layers only through sums (kept bytes, recompute time, offload bytes,
// collective time; time grows with each) and the largest transient, so for
// every bound on the transient the Pareto-optimal partial sums are carried
// layer by layer; the fastest final state within the budget is optimal.
// Under ordered backward (StageBase::ordered_backward) the transient depends
// on the layers' order, and the states carry it too: exact there as well.
// `known_microbatch_s`, the time of a plan known to fit (or infinity), only
// prunes partial plans that cannot beat it. Empty when no assignment fits.
// `stop` (when given): the caller sets it once it no longer wants the result (another stage's
// search was refused); the search then returns empty soon after.
std::optional<StagePlan> best_stage_plan(const SearchSpace& space, size_t stage, double budget_bytes,
                                         double known_microbatch_s = std::numeric_limits<double>::infinity(),
                                         const std::atomic<bool>* stop = nullptr);

// The assignment with the lowest peak whatever the budget (ties: the faster):
// for every bound on the transient and the staging buffer, each layer takes
// the admitted choice that keeps the fewest bytes. What the planner reports
// for a stage that no assignment fits.
StagePlan smallest_stage_plan(const SearchSpace& space, size_t stage);

}  // namespace remat
