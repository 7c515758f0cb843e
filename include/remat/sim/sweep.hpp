#pragma once
// Simulations over the number of recomputed layers per stage R, per strategy.
#include <vector>

#include "remat/sim/simulate.hpp"

namespace remat {

struct RecomputeSweepPoint {
  Strategy strategy = Strategy::none;
  int64_t recompute_layers = 0;  // R, the same on every stage
  double iteration_s = 0;
  double peak_bytes = 0;  // the largest stage peak
};

// R from 0 to the smallest stage's layer count, for each strategy.
std::vector<RecomputeSweepPoint> sweep_recompute_layers(const ModelSpec& m, const HardwareSpec& hw,
                                                        const TrainingSpec& t, const std::vector<Strategy>& strategies);

}  // namespace remat
