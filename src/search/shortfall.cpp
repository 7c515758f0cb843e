// Why a plan does not fit: its worst stage's memory, part by part.
#include <algorithm>

#include <fmt/format.h>

#include "remat/search/planner.hpp"

namespace remat {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The cost of `choice` on a layer of `kind` (the per-layer search's options,
// or the R modes' strategy costs).
const LayerCost& choice_cost(const SearchSpace& sp, int kind, const LayerChoice& choice) {
  for (const auto& o : sp.options[kind])
    if (o.choice.mode == choice.mode && o.choice.blocks == choice.blocks) return o.cost;
  return sp.keep_cost[kind];
}

// The layer sums of stage `stage` under candidate `c`.
LayerSums candidate_sums(const SearchSpace& sp, const Candidate& c, size_t stage) {
  const StageSpace& st = sp.stages[stage];
  LayerSums sums;
  for (size_t j = 0; j < st.kinds.size(); ++j) {
    const int kind = st.kinds[j];
    if (c.mode == SearchMode::per_layer)
      sums.add(choice_cost(sp, kind, c.per_layer[stage][j]));
    else
      sums.add(int64_t(j) < c.r[stage] ? sp.strategy_cost[kind][size_t(c.strategy)] : sp.keep_cost[kind]);
  }
  return sums;
}

}  // namespace

const char* to_string(ShortfallCause c) {
  switch (c) {
    case ShortfallCause::static_state:
      return "static_state";
    case ShortfallCause::optimizer_step:
      return "optimizer_step";
    case ShortfallCause::transient:
      return "transient";
    case ShortfallCause::activations:
      return "activations";
  }
  return "?";
}

const char* describe(ShortfallCause c) {
  switch (c) {
    case ShortfallCause::static_state:
      return "weights, gradients and optimizer state alone exceed the budget";
    case ShortfallCause::optimizer_step:
      return "weights and state plus the optimizer step's temporary exceed the budget";
    case ShortfallCause::transient:
      return "weights and state plus the transient working set exceed the budget";
    case ShortfallCause::activations:
      return "kept activations exceed the room left by weights, state and the transient";
  }
  return "?";
}

namespace {

// What exceeds the budget first: what no plan changes (the static state and
// the framework's buffers, then the optimizer step on top of them), then the
// transient, then the kept activations.
ShortfallCause cause_of(const Shortfall& s) {
  if (s.fixed_bytes() > s.budget_bytes) return ShortfallCause::static_state;
  if (s.optimizer_step_peak_bytes > s.budget_bytes) return ShortfallCause::optimizer_step;
  const double fixed_at_peak = s.fixed_bytes() - s.gradients_absent_bytes + s.autocast_cast_bytes;
  if (fixed_at_peak + s.transient_bytes > s.budget_bytes) return ShortfallCause::transient;
  return ShortfallCause::activations;
}

}  // namespace

// Every part from stage_totals, the pieces estimate reports for the stage.
Shortfall shortfall_of(const SearchSpace& sp, const Candidate& c, double budget_bytes) {
  Shortfall s;
  s.smallest = c;
  s.stage = c.worst_stage;
  s.budget_bytes = budget_bytes;
  const StageBase& base = sp.stages[size_t(s.stage)].base;
  const LayerSums sums = candidate_sums(sp, c, size_t(s.stage));
  const StageTotals tot = stage_totals(base, sums);
  s.in_flight_microbatches = base.in_flight;
  s.weights_bytes = base.static_bytes.weights;
  s.gradients_bytes = base.static_bytes.gradients;
  s.optimizer_bytes = base.static_bytes.optimizer;
  s.runtime_bytes = base.runtime_bytes;
  s.gradients_absent_bytes = base.grads_absent_bytes;
  s.autocast_cast_bytes = base.autocast_cast_bytes;
  s.optimizer_step_peak_bytes = tot.optimizer_step_peak_bytes;
  s.activations_bytes = tot.activations_bytes;
  s.transient_bytes = tot.transient_bytes;
  s.peak_bytes = tot.peak_bytes;
  // stage_totals' transient: the larger of a layer's backward (+ a staging
  // buffer) and the LM head with the loss (+ the staging buffer)
  s.transient_is_head =
      base.head_transient_bytes > 0 && base.head_transient_bytes + sums.offload_staging_bytes >= tot.transient_bytes;
  s.cause = cause_of(s);
  return s;
}

std::string Shortfall::why() const {
  const std::string buffers =
      runtime_bytes > 0 ? fmt::format(" + framework buffers {:.2f}", runtime_bytes / kGiB) : std::string();
  const std::string state =
      fmt::format("weights {:.2f} + gradients {:.2f} + optimizer state {:.2f}{} GiB = {:.2f} GiB", weights_bytes / kGiB,
                  gradients_bytes / kGiB, optimizer_bytes / kGiB, buffers, fixed_bytes() / kGiB);
  const std::string transient =
      fmt::format("the transient working set of {} ({:.2f} GiB)",
                  transient_is_head ? "the LM head and loss" : "a layer's backward", transient_bytes / kGiB);
  switch (cause) {
    case ShortfallCause::static_state:
      return fmt::format("on stage {} {} alone exceed the budget", stage, state);
    case ShortfallCause::optimizer_step:
      return fmt::format("on stage {} {} plus the optimizer step's temporary ({:.2f} GiB) exceed the budget", stage,
                         state, (optimizer_step_peak_bytes - fixed_bytes()) / kGiB);
    case ShortfallCause::transient:
      return fmt::format("on stage {} {} plus {} exceed the budget", stage, state, transient);
    case ShortfallCause::activations:
      break;
  }
  return fmt::format(
      "on stage {} {} plus {} plus the kept activations of {} microbatches in flight ({:.2f} GiB) "
      "exceed the budget",
      stage, state, transient, in_flight_microbatches, activations_bytes / kGiB);
}

}  // namespace remat
