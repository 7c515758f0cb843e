#pragma once
// Event simulation of one training iteration: every stage's compute, offload
// copies and p2p as timed events (1F1B, or interleaved with v virtual stages),
// each allocating and freeing named buffers, and the memory timeline that
// follows. Per-op costs come from the analytical model (stage_model,
// layer_cost), so the simulated peak and time agree with `estimate` by
// construction wherever no overlap effect applies.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "remat/cost/estimate.hpp"
#include "remat/spec/hardware_spec.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/plan.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

// What a buffer holds. The first three are allocated once and live all the
// iteration; the others come and go with the events.
// runtime: a framework's buffers alive all iteration (--framework: score buffer, workspaces)
enum class MemCategory { weights, gradients, optimizer, activations, working, offload, logits, comm, runtime };
inline constexpr int kMemCategories = 9;
const char* to_string(MemCategory c);

// One stream of a stage: compute, the host link per direction, pipeline p2p.
enum class SimStream { compute, offload_out, offload_in, p2p };
inline constexpr int kSimStreams = 4;
const char* to_string(SimStream s);

enum class SimOp { forward, recompute, backward, head_forward, head_backward, send, copy_out, copy_in, optimizer };
const char* to_string(SimOp k);

struct SimEvent {
  int64_t stage = 0;
  SimStream stream = SimStream::compute;
  SimOp op = SimOp::forward;
  int64_t microbatch = -1, chunk = 0, layer = -1;  // layer: global index, -1 when none
  double start_s = 0, end_s = 0;
};

struct SimBuffer {
  int64_t stage = 0;
  std::string name;  // "kept mb3 L12", "working mb3 L12", "logits mb3", ...
  MemCategory category = MemCategory::activations;
  double bytes = 0;
  double alloc_s = 0, free_s = 0;
};

using CategoryBytes = std::array<double, kMemCategories>;

// Bytes alive by category from `t_s` until the next point.
struct MemoryPoint {
  double t_s = 0;
  CategoryBytes bytes{};
  double total() const;
};

struct StagePeak {
  double bytes = 0, t_s = 0;
  CategoryBytes by_category{};
  std::vector<SimBuffer> top;  // largest buffers alive at the peak, largest first
};

struct StageTimeline {
  int64_t index = 0;
  std::vector<MemoryPoint> memory;  // one point per change, in time order
  StagePeak peak;
  double compute_busy_s = 0;  // seconds the compute stream runs
  double exposed_copy_s = 0;  // seconds compute waited on the host link
};

struct SimOptions {
  int64_t virtual_stages = 1;  // interleaved 1F1B when > 1 (Megatron's schedule)
  int64_t top_buffers = 8;     // buffers listed at each stage's peak
};

struct Simulation {
  std::vector<SimEvent> events;    // all stages and streams, in issue order
  std::vector<SimBuffer> buffers;  // every buffer of the iteration
  std::vector<StageTimeline> stages;
  int64_t microbatches = 0, virtual_stages = 1;
  double iteration_s = 0;
  Estimate estimate;  // the analytical model of the same plan (virtual_stages 1)
};

// `t` must have passed validate_training and `plan` validate_plan. With
// virtual stages v > 1 the layers split evenly into pp x v chunks, the plan's
// R (one value) applies per chunk and microbatches must be a multiple of pp;
// throws InputError otherwise.
Simulation simulate(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, const Plan& plan,
                    const SimOptions& opts = {});

// Whether every stage's simulated peak is within the budget the simulation's
// estimate used (the GPU's capacity less the hardware file's reserve).
bool fits_budget(const Simulation& sim);

}  // namespace remat
