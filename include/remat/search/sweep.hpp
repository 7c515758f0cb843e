#pragma once
// remat sweep: many layouts for a GPU count, each planned, ranked by tokens/s.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "remat/search/planner.hpp"

namespace remat {

struct SweepSpace {
  std::vector<int64_t> gpus = {32};
  std::vector<int64_t> tp = {1, 2, 4, 8};
  std::vector<int64_t> pp;  // empty: every divisor of gpus/tp up to the layer count
  std::vector<int64_t> ep;  // empty: every divisor of the expert count (MoE), else {1}
  std::vector<int64_t> mbs = {1, 2, 4, 8};
  std::vector<Strategy> strategies = {Strategy::none, Strategy::full, Strategy::selective, Strategy::standard,
                                      Strategy::eagle};
  bool per_layer = false;  // also the per-layer search (slower)
  int64_t threads = 1;     // worker threads; the result does not depend on them
  // The layouts whose iteration could rank among the first `split_top` rows (its lower bound over
  // every split) are also planned on their best pipeline split, each stage with its own layer count
  // and R (best_split_and_r); the others keep the default split. 0: default splits only.
  int64_t split_top = 0;
};

struct SweepRow {
  TrainingSpec layout;
  Strategy strategy = Strategy::none;
  bool feasible = false;
  std::string reason;  // why not
  Candidate best;
  double mfu = 0, tokens_per_s = 0;
  bool split_searched = false;  // layout.layers_per_stage is the searched split (else the default one)
};

struct SweepResult {
  std::vector<SweepRow> rows;  // feasible ones, best first
  int64_t evaluated = 0;
  std::map<std::string, int64_t> infeasible_by_reason;
  std::vector<int64_t> gpus_without_layout;  // GPU counts no swept tp x pp x ep divides
};

// The layouts sweep() evaluates, counted up to limit + 1 (so a huge space
// costs no more than the limit to count).
int64_t count_layouts(const ModelSpec& m, const SweepSpace& space, int64_t limit);

// `base` supplies gbs, seq and the implementation options. `progress` is
// called with (done, total) now and then.
SweepResult sweep(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& base, const SweepSpace& space,
                  double budget_bytes, const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace remat
