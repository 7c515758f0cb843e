#pragma once
// The order in which each pipeline stage runs its forward and backward steps.
#include <cstdint>
#include <vector>

namespace remat {

struct PipeStep {
  bool forward = true;
  int64_t microbatch = 0;
  int64_t chunk = 0;  // model chunk (virtual stage) on this stage, 0 without interleaving
};

// Per stage, the steps in execution order. v == 1: 1F1B (PipeDream-Flush,
// Narayanan et al. 2021, and Megatron-LM's
// forward_backward_pipelining_without_interleaving): stage i runs
// min(p - i - 1, m) warm-up forwards, then alternates one forward and one
// backward, then drains the remaining backwards. v > 1: Megatron-LM's
// interleaved schedule (forward_backward_pipelining_with_interleaving):
// (p - i - 1) * 2 + (v - 1) * p warm-up steps over chunks of p microbatches;
// needs m to be a multiple of p.
std::vector<std::vector<PipeStep>> pipeline_schedule(int64_t pp, int64_t microbatches, int64_t virtual_stages);

}  // namespace remat
