#pragma once
// Whole model, per pipeline stage: memory, FLOPs and time of one iteration.
#include <array>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/layer_cost.hpp"
#include "remat/cost/params.hpp"
#include "remat/cost/stage_model.hpp"
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
  double adapter_params = 0;  // LoRA's trainable parameters on the stage (PEFT's count, tp-sharded)
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
// The same, reusing `built` (build_shapes of rank_shape(t)) where it has the unsharded FLOPs.
double model_flops_per_microbatch(const ModelSpec& m, const TrainingSpec& t, int64_t layers, const LayerShapes& built);
// Optimizer step time of a stage: one read and write of its static state.
double optimizer_step_s(const StageMemory& mem, const TrainingSpec& t, const HardwareSpec& hw);

// The spec the cost model runs for a plan of strategy `s`: `t` with defaults,
// microbatches in sequences (GRPO's group, DPO's pair) and StreamBP's D and C
// only under streambp (streambp_effective_training). Every consumer costs
// stages, layers and the iteration with it; reports show `t`.
TrainingSpec costed_training(const TrainingSpec& t, Strategy s);

// Under --framework hf with fp32 parameters (autocast): the seconds one forward of layer g spends
// casting its weights to bf16 (4 + 2 bytes a weight; grouped_mm experts run in fp32, uncast). A replay
// spends it again, and a trained weight's bf16 gradient is cast back in backward as long.
double autocast_cast_s(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, int64_t g);

// One layer of a stage as estimate costs it under `costed`: layer_cost with
// StreamBP's D from the spec (`choice` is updated) and, for D > 1, the extra
// weight traffic of global layer `g`.
LayerCost stage_layer_cost(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& costed,
                           const LayerDef& layer, LayerChoice& choice, int64_t g);
// The same, with the block costs through `memo` (layer_cost).
LayerCost stage_layer_cost(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& costed,
                           const LayerDef& layer, LayerChoice& choice, int64_t g, BlockCostMemo& memo);

// Costs of identical layers computed once: a layer of one shape with one
// choice costs the same wherever it sits (the first layer aside, whose input
// LoRA leaves frozen), and choices equal in their cost key (reduce_to_cost_key:
// not a layer's place further in a chunk) cost the same. Valid for one
// (model, hardware, costed spec).
class LayerCostCache {
 public:
  // stage_layer_cost, remembered; `choice` is updated as stage_layer_cost updates it.
  const LayerCost& cost(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& costed, const LayerDef& layer,
                        LayerChoice& choice, int64_t g);

 private:
  struct Entry {
    const LayerDef* layer;
    int frozen;                         // LoRA's frozen prefix: 0 past it, 1 the first adapted layer, 2 before it
    LayerChoice choice, costed_choice;  // the cost key, and it as stage_layer_cost updated it
    LayerCost cost;
  };
  std::deque<Entry> entries_;  // stable addresses for the references returned
  BlockCostMemo blocks_;       // the layers' block costs, shared by their choices
  // entries by a hash of (layer, frozen, cost key); equal hashes are told apart by comparing
  std::unordered_multimap<size_t, size_t> by_hash_;
  // the entry last found for each hash modulo the array's size (index + 1; 0: none): a stage's
  // layers ask for a few entries over and over, which this answers without the map
  std::array<size_t, 512> recent_{};
};

// One stage of `plan` over layers [range.first, range.second) as stage `i` of
// the pipeline (`t` costed, `shapes` and `r` built from it).
StageEstimate stage_estimate(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, const Plan& plan,
                             const LayerShapes& shapes, const RankShape& r, size_t i, std::pair<int64_t, int64_t> range,
                             LayerCostCache& cache);

// A stage's layers under `plan`, added in order from its first: stage_estimate's loop, which the
// split search extends one layer at a time over a stage's sizes (choices_fixed_by_place). The
// stage has `n_layers` at most: the plan's R and offload counts are clamped to it.
class StageLayerWalk {
 public:
  StageLayerWalk(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, const Plan& plan,
                 const LayerShapes& shapes, size_t stage, int64_t first_layer, int64_t n_layers, LayerCostCache& cache);
  // Adds the next layer; its choice as costed.
  const LayerChoice& add_next();
  int64_t added() const { return added_; }
  // The walk as in a stage of `n_layers`: valid while the layers added choose as they would there
  // (layers_placed_alike).
  void set_length(int64_t n_layers);
  // The stage of `base` over the layers added so far (with the MTP layers on the last stage).
  StageEstimate finish(const StageBase& base);

 private:
  const ModelSpec& m_;
  const HardwareSpec& hw_;
  const TrainingSpec& t_;
  const Plan& plan_;
  const LayerShapes& shapes_;
  LayerCostCache& cache_;
  size_t stage_;
  int64_t first_, n_layers_, recompute_limit_, offload_limit_;
  int64_t added_ = 0, host_bound_ = 0, recomputing_ = 0, offloading_ = 0;
  LayerSums sums_;
  LayerChoice last_;
};

// How many of the first layers of a stage of `n_layers` choose as they would in any longer stage,
// so that one walk serves stages of every length up to there: all of them, or under Megatron's
// uniform chunks of more than one layer those before the last chunk (which the stage cuts short).
int64_t layers_placed_alike(const Plan& plan, int64_t n_layers);

// What the iteration needs of one stage.
struct StageRun {
  double microbatch_s = 0;   // one microbatch's forward, backward and recompute
  StaticBytes static_bytes;  // read and written by the optimizer step
};
// Model FLOPs of one iteration (all dp ranks), the numerator of MFU.
double iteration_model_flops(const ModelSpec& m, const TrainingSpec& costed);
// The same from one microbatch's (model_flops_per_microbatch of the effective layers).
double iteration_model_flops(double microbatch_model_flops, const TrainingSpec& costed);
// The one formula of the iteration, which every consumer calls: 1F1B fill,
// steady state and drain over the stages' microbatch times, the slowest
// stage's optimizer step, MFU (Megatron's count) and tokens/s. `costed` as
// above; `hardware_flops` is reported, not used.
IterationEstimate iteration_from_stages(const std::vector<StageRun>& stages, double model_flops, double hardware_flops,
                                        const TrainingSpec& costed, const HardwareSpec& hw);

// `t` must have passed validate_training and `plan` validate_plan.
Estimate estimate(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, const Plan& plan,
                  double budget_bytes);

}  // namespace remat
