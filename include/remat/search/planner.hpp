#pragma once
// remat plan: the fastest plan whose every stage fits the memory budget.
#include <optional>
#include <string>
#include <vector>

#include "remat/cost/estimate.hpp"
#include "remat/search/search_space.hpp"

namespace remat {

enum class SearchMode { uniform_r, per_stage_r, per_layer };
const char* to_string(SearchMode m);

struct Candidate {
  SearchMode mode = SearchMode::uniform_r;
  Strategy strategy = Strategy::none;               // the R modes' strategy
  std::vector<int64_t> r;                           // per stage (R modes)
  std::vector<std::vector<LayerChoice>> per_layer;  // per stage and layer (per_layer mode)
  double time_s = 0;
  double peak_bytes = 0;
  int64_t worst_stage = 0;  // the stage with the highest peak
  bool fits = false;
  std::string reason;  // why it was rejected
  // per-layer mode: set when the counts search (a deep stage) chose some stage's plan, and how
  // close to the fastest that can be (best_stage_plan); empty when the exact search chose all
  std::string search_note;
  std::vector<double> stage_peak_bytes;  // per stage, as estimate's memory_bytes.peak
  double mfu = 0, tokens_per_s = 0;      // as estimate's iteration
};

// Chen et al. 2016 checkpointing of a chain of layers: keep every k-th
// layer's input, replay a segment of k layers in backward. That is Megatron's
// uniform method with chunks of k layers: each row's peak and time are the
// stage's under that plan (the stage totals estimate reports).
struct IntervalRow {
  int64_t stage = 0, layers = 0;
  int64_t chen_k = 0, best_k = 0;  // sqrt(n) rule; the k with the lowest peak
  double chen_peak_bytes = 0, best_peak_bytes = 0;
  double time_s = 0;  // every layer replayed once, whatever k
};

// What pushes a plan's worst stage over the budget, judged in this order:
// the stage's weights, gradients and optimizer state alone; those plus the
// transient working set (a layer's backward or the LM head and loss); or the
// kept activations of the microbatches in flight on top.
// The framework's buffers (runtime) count with the static state; the
// optimizer step's temporary sits on the static state and the buffers alone.
enum class ShortfallCause { static_state, optimizer_step, transient, activations };
const char* to_string(ShortfallCause c);  // static_state, optimizer_step, transient, activations
const char* describe(ShortfallCause c);   // a phrase: what exceeds the budget

// The smallest footprint searched when nothing fits: its worst stage's
// memory, part by part, and why it is over the budget.
struct Shortfall {
  Candidate smallest;  // the candidate with the lowest peak
  int64_t stage = 0;   // its stage with the highest peak
  int64_t in_flight_microbatches = 0;
  double weights_bytes = 0, gradients_bytes = 0, optimizer_bytes = 0;
  double runtime_bytes = 0;              // the framework's buffers alive all iteration
  double optimizer_step_peak_bytes = 0;  // static state, buffers and the optimizer step's temporary
  double activations_bytes = 0, transient_bytes = 0, peak_bytes = 0;
  // at the activation peak: gradients not yet allocated (allocated in backward) and autocast's
  // bf16 weight casts alive (hf profile)
  double gradients_absent_bytes = 0, autocast_cast_bytes = 0;
  double budget_bytes = 0;
  bool transient_is_head = false;  // the LM head and loss, not a layer's backward, set the transient
  ShortfallCause cause = ShortfallCause::activations;
  double static_bytes() const { return weights_bytes + gradients_bytes + optimizer_bytes; }
  double fixed_bytes() const { return static_bytes() + runtime_bytes; }
  double activation_peak_bytes() const {
    return fixed_bytes() - gradients_absent_bytes + autocast_cast_bytes + activations_bytes + transient_bytes;
  }
  std::string why() const;  // one sentence naming the parts and the budget
};

struct PlanSearchResult {
  std::optional<Candidate> best;
  Plan best_plan;
  std::vector<Candidate> frontier;          // non-dominated in (time, peak), ascending peak
  std::vector<Candidate> best_by_strategy;  // fastest fitting candidate per strategy and R mode
  std::vector<Candidate> rejected;          // up to 30 examples
  int64_t evaluated = 0, over_budget = 0, slower = 0;
  std::vector<IntervalRow> intervals;
  std::string reason;                  // when nothing fits
  std::optional<Shortfall> shortfall;  // when nothing fits and a candidate was searched
};

PlanSearchResult plan_search(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t,
                             const SearchOptions& opts);
PlanSearchResult plan_search(const SearchSpace& space, const SearchOptions& opts);

// The breakdown of candidate `c`'s worst stage against `budget_bytes`.
Shortfall shortfall_of(const SearchSpace& space, const Candidate& c, double budget_bytes);

// The candidate as a plan `estimate` takes (per-layer choices as overrides).
Plan to_plan(const Candidate& c, const SearchSpace& space);

}  // namespace remat
