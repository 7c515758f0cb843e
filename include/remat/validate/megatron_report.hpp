#pragma once
// remat validate --megatron-log: per rank predicted vs measured peak, per run
// predicted vs measured iteration time, and each recompute setting's time
// against the same layout without recompute.
#include <string>
#include <vector>

#include "remat/report/json_report.hpp"
#include "remat/validate/megatron_run.hpp"

namespace remat {

struct MegatronRun {
  std::string name;  // the log's file name
  MegatronComparison comparison;
  std::string session;     // the log's "# device:" line: runs of one harness session share it
  std::string host;        // the log's "# host:" line (host_probe.py), "" when absent
  std::string host_after;  // its "# host after:" line: the probe once the run had ended, "" when absent
  // MoE layers whose forward waits on the framework's host time (all stages)
  int64_t host_bound_layers() const;
};

// Predicted / measured time of each run divided by the same ratio of the runs
// with the same model, layout and batch and no recompute, measured in the same
// session (host speed differs between machines); 0 when there is none. Where
// a session ran that no-recompute setting more than once, its measured time is
// the median of those runs.
struct RecomputeRatio {
  double predicted = 0, measured = 0;
  bool has_baseline = false;
  int baseline_runs = 0;
  double error_pct() const { return 100 * (predicted / measured - 1); }
};
std::vector<RecomputeRatio> recompute_ratios(const std::vector<MegatronRun>& runs);

// Runs of one session with the same model, layout, batch and recompute
// settings: repeats of one set of flags. How far apart their measured
// iteration times lie is the noise a prediction is held against.
struct RepeatGroup {
  std::vector<size_t> runs;  // indices into the runs, in their order
  double fastest_ms = 0, slowest_ms = 0;
  double spread_pct() const { return 100 * (slowest_ms / fastest_ms - 1); }
};
std::vector<RepeatGroup> session_repeats(const std::vector<MegatronRun>& runs);

// How much the host slowed (+) or sped up (-) over one run: host_probe.py's kernel launch time after
// the run against before it. A host-bound run's time follows its host; only logs with both probe
// lines have one (harness.py writes the second since harness run 14).
struct HostDrift {
  bool known = false;
  double launch_before_us = 0, launch_after_us = 0;
  double pct() const { return 100 * (launch_after_us / launch_before_us - 1); }
};
HostDrift host_drift(const MegatronRun& run);
constexpr double kHostDriftNotedPct = 10;  // the table lists runs whose host moved at least this much

std::string megatron_table(const std::vector<MegatronRun>& runs, const std::string& hardware_name);
Json megatron_report(const ReportMeta& meta, const std::vector<MegatronRun>& runs, const std::string& hardware_name);
// Predicted against measured: peak per rank, iteration time per run, time over none per recompute run;
// GPU-bound and host-bound runs in two colours, dashed at the bounds (3%, 15%, 5%).
std::string megatron_svg(const std::vector<MegatronRun>& runs, const std::string& hardware_name);

}  // namespace remat
