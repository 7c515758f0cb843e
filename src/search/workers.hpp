// Work split over threads, for the planner's stages and the sweep's layouts.
#pragma once
#include <cstddef>
#include <functional>

namespace remat {

// Runs work(0) on the calling thread and work(1) .. work(threads - 1) on new ones. While the
// others still run after work(0) returns, the calling thread calls `tick` (when given) every
// 100 ms. Rethrows, after all have finished, the exception of the lowest-numbered worker that
// raised one: an exception never ends the process from a worker thread.
void run_workers(size_t threads, const std::function<void(size_t worker)>& work,
                 const std::function<void()>& tick = {});

}  // namespace remat
