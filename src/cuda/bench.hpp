// Runs one block under each strategy: timings (CUDA events, median of reps after warm-up),
// exact memory counts from the arena, the per-op log, offload copies, and the gradients of
// every strategy against the none strategy's.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "block.hpp"
#include "ctx.hpp"

namespace remat::cuda {

struct RunOpts {
  int warmup = 2;
  int reps = 10;
  int profiled_reps = 3;
  uint64_t seed = 1234;
};

nlohmann::json dims_json(const Dims& d);
// One forward + backward; returns dx (caller frees it).
Buf run_once(Ctx& c, Block& blk, Strategy st, uint64_t seed);
// One JSON object per strategy, in the order given.
nlohmann::json run_block(Ctx& c, const std::string& block, const Dims& d, const std::vector<Strategy>& strategies,
                         const RunOpts& o);

}  // namespace remat::cuda
