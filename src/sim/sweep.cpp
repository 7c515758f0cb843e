#include "remat/sim/sweep.hpp"

#include <algorithm>

#include "remat/spec/validate.hpp"

namespace remat {

std::vector<RecomputeSweepPoint> sweep_recompute_layers(const ModelSpec& m, const HardwareSpec& hw,
                                                        const TrainingSpec& t,
                                                        const std::vector<Strategy>& strategies) {
  int64_t max_r = effective_layers(m, t);
  for (auto [first, last] : stage_layer_ranges(m, t)) max_r = std::min(max_r, last - first);
  std::vector<RecomputeSweepPoint> out;
  for (Strategy s : strategies)
    for (int64_t r = 0; r <= max_r; ++r) {
      Plan p;
      p.strategy = s;
      p.recompute_layers = {r};
      const Simulation sim = simulate(m, hw, t, p);
      double peak = 0;
      for (const auto& st : sim.stages) peak = std::max(peak, st.peak.bytes);
      out.push_back({s, r, sim.iteration_s, peak});
    }
  return out;
}

}  // namespace remat
