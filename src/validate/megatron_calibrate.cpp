#include <cmath>

#include "remat/spec/framework.hpp"
#include "remat/validate/megatron_run.hpp"

namespace remat {

namespace {

double rms_error(const std::vector<MegatronLog>& logs, HardwareSpec hw, const FrameworkEfficiency& e) {
  hw.framework_fits[kMegatronLocalFramework] = e;
  double sum = 0;
  for (const auto& log : logs) {
    const MegatronComparison c = compare_megatron(log, hw);
    const double r = std::log(c.predicted_iteration_ms / c.measured_iteration_ms);
    sum += r * r;
  }
  return std::sqrt(sum / double(logs.size()));
}

}  // namespace

// Coordinate descent over the four constants, each on a shrinking bracket:
// a handful of runs and four parameters need nothing cleverer. The MoE host
// time is a floor (a max), flat wherever no layer sits below it, so each round
// also scans it over 0-20 ms instead of only stepping from where it stands.
// Without an MoE run it is not fitted at all (nothing would pin it).
FrameworkEfficiency fit_megatron_local(const std::vector<MegatronLog>& logs, HardwareSpec hw, double* rms_log_error) {
  FrameworkEfficiency best;
  for (const auto& log : logs) best.has_moe_layer_host |= megatron_setup(log).model.is_moe();
  double best_error = rms_error(logs, hw, best);
  double step[4] = {0.2, 0.2, 200e-6, 2e-3};
  const double lower[4] = {0.05, 0.05, 0, 0}, upper[4] = {4, 4, 0.05, 0.2};
  const int constants = best.has_moe_layer_host ? 4 : 3;
  for (int round = 0; round < 60; ++round) {
    for (int k = 0; k < constants; ++k)
      for (double direction : {-1.0, 1.0}) {
        FrameworkEfficiency trial = best;
        double* value[4] = {&trial.gemm_scale, &trial.memory_bound_scale, &trial.layer_overhead_s,
                            &trial.moe_layer_host_s};
        *value[k] = std::min(upper[k], std::max(lower[k], *value[k] + direction * step[k]));
        const double error = rms_error(logs, hw, trial);
        if (error < best_error) best_error = error, best = trial;
      }
    for (int i = 0; i <= 80 && best.has_moe_layer_host; ++i) {
      FrameworkEfficiency trial = best;
      trial.moe_layer_host_s = i * 0.25e-3;
      const double error = rms_error(logs, hw, trial);
      if (error < best_error) best_error = error, best = trial;
    }
    for (double& s : step) s *= 0.75;
  }
  if (rms_log_error) *rms_log_error = best_error;
  return best;
}

}  // namespace remat
