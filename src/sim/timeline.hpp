#pragma once
// Memory over time of one stage from the buffers the events allocated.
#include <vector>

#include "remat/sim/simulate.hpp"

namespace remat::sim_detail {

// Fills `out.memory` and `out.peak` from the stage's buffers. At equal times
// frees come before allocations (a buffer freed at the end of an event is gone
// when the next event allocates).
void build_timeline(StageTimeline& out, int64_t stage, const std::vector<SimBuffer>& buffers, int64_t top_buffers);

}  // namespace remat::sim_detail
