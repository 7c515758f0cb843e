// Small-dim correctness checks on the GPU: every strategy's gradients against none's (bit
// equality), and the none strategy's against the fp32 CPU reference (Table 8 metrics).
#pragma once
#include <nlohmann/json.hpp>

#include "bench.hpp"

namespace remat::cuda {

// Tolerances of the fp32-reference check (bf16 storage): per tensor, max |diff| <= kMaxTol *
// max |ref| and mean |diff| <= kMeanTol * mean |ref|.
constexpr double kMaxTol = 0.1, kMeanTol = 0.03;

nlohmann::json run_correctness(Ctx& c, const RunOpts& o);
// StreamBP blocks at small dims: gradients with `chunks` chunks against the unchunked run.
nlohmann::json streambp_check(Ctx& c, const RunOpts& o, int64_t chunks);

}  // namespace remat::cuda
