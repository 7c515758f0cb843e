#pragma once
// Outputs of `remat simulate` as values: the Chrome trace event format
// (Perfetto, chrome://tracing) and the JSON timeline summary.
#include "remat/report/json_report.hpp"
#include "remat/sim/simulate.hpp"

namespace remat {

// One process per stage, one thread per stream (compute, offload out,
// offload in, p2p) with complete ("X") events in microseconds, sorted by time
// per track; a counter track per stage with bytes alive by category (GiB).
// `only_stage` < 0: every stage.
Json chrome_trace(const Simulation& sim, int64_t only_stage = -1);

// meta, model, hardware, training, plan (json_report conventions) and
// `simulation`: per stage the peak (bytes, time, by category, top buffers),
// the analytical peak of the same plan, busy and exposed-copy seconds; the
// iteration time beside the analytical one. Byte counts are integers.
Json simulate_report(const ReportMeta& meta, const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t,
                     const Plan& p, const Simulation& sim, int64_t only_stage = -1);

}  // namespace remat
