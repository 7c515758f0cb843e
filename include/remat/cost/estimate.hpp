#pragma once
// Whole model, per pipeline stage: memory, FLOPs and time of one iteration.
#include <cstdint>
#include <vector>

#include "remat/spec/hardware_spec.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/plan.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

struct StageMemory {
  double weights = 0, gradients = 0, optimizer = 0;
  double activations = 0;        // kept activations of the microbatches in flight
  double transient_peak = 0;     // the largest working set on top: a layer's backward or the loss
  double runtime = 0;            // framework buffers alive all iteration (--framework)
  double optimizer_step = 0;     // static + runtime + the optimizer step's temporary (--framework)
  double peak = 0;               // allocated bytes at the peak: max of the activation peak and optimizer_step
  double outside_allocator = 0;  // CUDA context and NCCL buffers, not in peak (--framework)
};

struct StageFlops {  // per iteration
  double forward = 0, backward = 0, recompute = 0;
};

struct StageTime {  // per iteration, seconds
  double forward = 0, backward = 0, recompute = 0, offload_exposed = 0, total = 0;
};

struct StageEstimate {
  int64_t index = 0;
  int64_t first_layer = 0, last_layer = 0;  // [first, last)
  int64_t recompute_layers = 0, offload_layers = 0;
  int64_t host_bound_layers = 0;  // MoE layers whose forward waits on the framework's host time
  std::vector<LayerChoice> per_layer;
  int64_t in_flight_microbatches = 0;
  StageMemory memory_bytes;
  StageFlops flops;
  StageTime time_s;
  double microbatch_s = 0;  // one microbatch's forward + backward on this stage
  double comm_s = 0;        // collectives and p2p inside total
  bool fits = true;
};

struct IterationEstimate {
  double time_s = 0, mfu = 0, tokens_per_s = 0;
  double model_flops = 0, hardware_flops = 0;
  double bubble_fraction = 0;
  double optimizer_step_s = 0;
};

struct Estimate {
  std::vector<StageEstimate> stages;
  IterationEstimate iteration;
  int64_t microbatches = 0;
  double budget_bytes = 0;
  double peak_memory_bytes = 0;
  bool fits = true;
};

// MoE layers, over all stages, whose forward waits on the framework's host time.
int64_t host_bound_layers(const Estimate& e);

// Default memory budget: HBM less the hardware file's reserve.
double default_budget_bytes(const HardwareSpec& hw);

// Model FLOPs of one microbatch on unsharded shapes, recompute excluded.
double model_flops_per_microbatch(const ModelSpec& m, const TrainingSpec& t, int64_t layers);
// Optimizer step time of a stage: one read and write of its static state.
double optimizer_step_s(const StageMemory& mem, const TrainingSpec& t, const HardwareSpec& hw);
// Iteration time (1F1B fill, steady state, drain), MFU and tokens/s from the
// stages' microbatch times.
IterationEstimate iteration_from_stages(const std::vector<double>& microbatch_s, double optimizer_step_s,
                                        double model_flops, double hardware_flops, const TrainingSpec& t,
                                        const HardwareSpec& hw);

// `t` must have passed validate_training and `plan` validate_plan.
Estimate estimate(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, const Plan& plan,
                  double budget_bytes);

}  // namespace remat
