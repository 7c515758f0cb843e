// The per-layer search of deep stages (best_stage_plan runs it where the exact search would take
// too long: see kExactLayers in src/search/layer_dp.cpp): layers of one kind are interchangeable
// when their order does not change the stage's cost, so a plan is a count of layers per (kind,
// option), and the search works on counts, not on layers.
#pragma once
#include <cstddef>
#include <optional>

#include "remat/search/layer_dp.hpp"

namespace remat {

// Whether counts_stage_plan can search the stage: its cost does not depend on the order of its
// layers (no ordered backward, no option that replays a chunk).
bool counts_search_applies(const SearchSpace& space, size_t stage);

// A fitting plan of the stage, not proven fastest: StagePlan::optimum_lower_bound_s is a lower
// bound on the time of every fitting plan (the linear relaxation of the choice, under every
// bound on the transient and the staging buffer), so the plan is at most its time less that
// bound slower than the exact search's. Empty iff no assignment fits. Its work does not grow with
// the layer count but for writing the plan out: per bound pair and cost mix a fill along each
// kind's hull, then a local search that moves one or two layers at a time.
std::optional<StagePlan> counts_stage_plan(const SearchSpace& space, size_t stage, double budget_bytes);

}  // namespace remat
