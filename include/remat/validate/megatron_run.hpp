#pragma once
// A Megatron-LM training run as its log shows it (the arguments it prints at
// start, per-rank memory reports and iteration times), rebuilt into remat's
// specs and set beside remat's prediction.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "remat/cost/estimate.hpp"
#include "remat/spec/hardware_spec.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/plan.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

struct MegatronRankMemory {
  int64_t rank = 0;
  int64_t after_iteration = 0;
  double allocated_MiB = 0, max_allocated_MiB = 0, reserved_MiB = 0, max_reserved_MiB = 0;
  double device_used_MiB = -1;  // -1: the log has no "total device memory used"
};

struct MegatronLog {
  std::string file;
  std::string device;      // "# device:" line the harness writes, "" when absent
  std::string host;        // "# host:" line: the harness's host_probe.py JSON (host speed), "" when absent
  std::string host_after;  // "# host after:" line: the same probe once the run had ended, "" when absent
  std::map<std::string, std::string> args;               // as printed: "None", "True", "8", "['core_attn', 'mlp']"
  std::vector<MegatronRankMemory> ranks;                 // the last report of each rank, by rank
  std::vector<std::pair<int64_t, double>> iteration_ms;  // (iteration, elapsed ms)
  int64_t train_iters = 0;
};

// What remat builds from the arguments.
struct MegatronSetup {
  ModelSpec model;
  TrainingSpec training;
  Plan plan;
  std::string recompute;  // Megatron's settings in words, e.g. "selective core_attn mlp"
};

// Throws InputError naming the log, the argument and its value when the run
// uses something remat does not model (or an argument is missing).
MegatronSetup megatron_setup(const MegatronLog& log);

struct MegatronRankRow {
  int64_t rank = 0, stage = 0;
  double predicted_peak_MiB = 0, measured_max_allocated_MiB = 0;
  double measured_max_reserved_MiB = 0, measured_device_used_MiB = -1;
  double predicted_outside_allocator_MiB = 0;
  double error_pct() const { return 100 * (predicted_peak_MiB / measured_max_allocated_MiB - 1); }
};

struct MegatronComparison {
  MegatronSetup setup;
  std::vector<MegatronRankRow> ranks;
  double predicted_iteration_ms = 0;
  double measured_iteration_ms = 0;  // median of the iterations after the first two (warm-up)
  int64_t timed_iterations = 0;
  Estimate estimate;
  double time_error_pct() const { return 100 * (predicted_iteration_ms / measured_iteration_ms - 1); }
};

// Median elapsed time of the iterations after the first two; 0 when none.
double steady_iteration_ms(const MegatronLog& log, int64_t* count = nullptr);
// The middle value (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> values);

MegatronComparison compare_megatron(const MegatronLog& log, const HardwareSpec& hw);

}  // namespace remat

namespace remat {

// remat calibrate --megatron-log: the frameworks.megatron-local entry of the
// hardware file that best predicts these runs' iteration times (least squares
// of log(predicted / measured)); `hw` without such an entry, or with it
// ignored. `rms_log_error` gets the fit's root-mean-square log error.
FrameworkEfficiency fit_megatron_local(const std::vector<MegatronLog>& logs, HardwareSpec hw,
                                       double* rms_log_error = nullptr);

}  // namespace remat
