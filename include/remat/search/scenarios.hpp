#pragma once
// The EAGLE paper's two end-to-end scenarios, predicted: every method at one
// fixed R (Table 3) and every method at its own best R (Table 4), with the
// first, middle and last stage's peak memory and the MFU.
#include <string>
#include <vector>

#include "remat/cost/estimate.hpp"

namespace remat {

struct ScenarioRow {
  Strategy strategy = Strategy::none;
  int64_t r = 0;  // layers per stage recomputed (Megatron's single --recompute-num-layers)
  double first_peak_bytes = 0, middle_peak_bytes = 0, last_peak_bytes = 0;
  double time_s = 0, mfu = 0, tokens_per_s = 0;
  bool fits = false;
  std::string reason;  // why not, when it does not fit
};

struct ScenarioResult {
  std::string scenario;               // "fixed-r" or "best-r"
  std::vector<ScenarioRow> rows;      // none, full, standard, eagle
  double eagle_vs_full_mfu_gain = 0;  // (MFU_eagle - MFU_full) / MFU_full
};

// Fixed R: the smallest R at which full, standard and eagle all fit (none at R = 0).
ScenarioResult fixed_r_scenario(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, double budget_bytes);
// Best R: each method's fastest fitting R; a method that no R fits shows the
// R with its lowest peak and why.
ScenarioResult best_r_scenario(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, double budget_bytes);

}  // namespace remat
