#pragma once
// One pipeline stage as a fixed part (weights, optimizer state, the LM head
// and loss, p2p) plus sums over its layers' choices. `estimate` and the
// planner both build stages from these pieces, so they agree by construction.
#include <array>
#include <cstdint>

#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/layer_cost.hpp"
#include "remat/cost/params.hpp"
#include "remat/spec/hardware_spec.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

// Layers differ by kind (ModelSpec::layer_kind: mixer x dense, MoE or no feed-forward);
// all layers of one kind are the same. Kinds the model does not use stay empty.
struct LayerShapes {
  std::vector<LayerDef> kinds;  // ModelSpec::layer_kind_count() of them
  const LayerDef& at(const ModelSpec& m, int64_t i) const { return kinds[size_t(m.layer_kind(i))]; }
};
LayerShapes build_shapes(const ModelSpec& m, const RankShape& r);

// What a stage costs whatever its layers do.
struct StageBase {
  int64_t index = 0, first_layer = 0, last_layer = 0;
  int64_t in_flight = 0;  // microbatches whose activations the stage holds (1F1B)
  ParamCount params;
  double adapter_params = 0;  // LoRA adapters on the stage's layers
  // alive at the activation peak besides the static bytes: gradients are not there yet when
  // they are allocated in backward (grads_allocated_in_backward); autocast's bf16 weight casts are
  double grads_absent_bytes = 0, autocast_cast_bytes = 0;
  StaticBytes static_bytes;
  double head_transient_bytes = 0;  // LM head, logits and loss (last stage; MTP's heads too)
  // of those, what the loss's forward holds (the layers' LayerCost::forward_held_bytes sit beside it);
  // 0: not told apart
  double head_forward_bytes = 0;
  // where gradients are absent before the backward: the head's (allocated by its backward, so
  // alive under every layer's)
  double head_grads_bytes = 0;
  // of autocast_cast_bytes, the LM head's weight copy (last stage): its backward frees it, before
  // any layer's backward
  double head_cast_bytes = 0;
  double mtp_saved_bytes = 0;  // MTP modules' eh_proj inputs (last stage, one microbatch)
  double runtime_bytes = 0;    // framework buffers alive all iteration (score buffer, workspaces)
  // per in-flight microbatch: the stage output, when the pipeline keeps it; on the first stage also
  // Gemma 4's per-layer inputs (per_layer_inputs_bytes)
  double stage_output_bytes = 0;
  // per in-flight microbatch, where a layer of the stage is checkpointed: what the checkpoints'
  // arguments keep alive until their backward (transformers' eager attention masks)
  double checkpoint_args_bytes = 0;
  double optimizer_step_bytes = 0;  // the optimizer step's temporary, on top of the static bytes
  // the end of the backward, on top of the static bytes: the tied embedding's backward (first and
  // last stage at once) beside the LM head's gradient (TrainingSpec::tied_grads_summed_out_of_place)
  double tied_embedding_backward_bytes = 0;
  bool ordered_backward = false;                              // TrainingSpec::ordered_backward
  double fixed_fwd_s = 0, fixed_bwd_s = 0, fixed_comm_s = 0;  // head and p2p
  // the policy's forward and the objective's no-grad passes (no_grad_forwards): each runs the
  // stage's layers, head and send once more, saves nothing and replays nothing
  double forward_passes = 1;
  double fixed_fwd_flops = 0, fixed_bwd_flops = 0;
  double copy_bytes_per_s = 0;  // host link for offload
  bool link_shared = false;     // tp collectives also cross the host link
};

// Under LoRA the embedding and the base weights are frozen: autograd records nothing until the
// first adapter. The layers before the first one with an adapter (first_adapted_layer; -1 without
// LoRA) save nothing and run no backward; in that layer, the blocks before its first adapted block
// do the same, and that block's input norm saves nothing (the fp32 upcast and 1/rms).
int64_t first_adapted_layer(const ModelSpec& m, const TrainingSpec& t);
// `layer` as it runs at global index g <= first_adapted_layer, kept (no recompute).
LayerDef frozen_prefix_layer(const LayerDef& layer, bool whole_layer, const TrainingSpec& t);

// The parameters of a range of layers on one rank.
struct LayerRangeParams {
  ParamCount params;          // untrained: also DeepSeek sparse attention's indexers under transformers
  double layers_total = 0;    // sum of layer_params(...).total()
  double largest_layer = 0;   // the largest layer_params(...).total()
  double adapter_params = 0;  // LoRA's adapters on these layers
};
LayerRangeParams layer_range_params(const ModelSpec& m, const TrainingSpec& t, std::pair<int64_t, int64_t> layers);

// layer_range_params from sums over the layers before each one: a range's sums are two lookups
// (the split search prices thousands of ranges of one model).
class LayerParamTable {
 public:
  LayerParamTable(const ModelSpec& m, const TrainingSpec& t);
  LayerRangeParams range(std::pair<int64_t, int64_t> layers) const;
  int64_t layers() const { return int64_t(layer_total_.size()); }

 private:
  std::vector<LayerRangeParams> before_;  // [g]: layers [0, g), largest_layer unused
  std::vector<double> layer_total_;
};

// `table`, where given, holds the layers' parameters (layer_range_params otherwise).
StageBase stage_base(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, const RankShape& r,
                     int64_t index, std::pair<int64_t, int64_t> layers, const LayerParamTable* table = nullptr);

// The weight gradients layer g's backward allocates where gradients are absent before the
// backward (hf with one microbatch: zero_grad sets them to None); 0 otherwise.
double layer_gradient_bytes(const ModelSpec& m, const TrainingSpec& t, int64_t g);
// PEFT's adapters that layers [first_layer, last_layer) hold untrained (and, on the first stage, those
// on the tower's modules): --framework hf; 0 elsewhere or without LoRA.
double held_adapter_params(const ModelSpec& m, const TrainingSpec& t, int64_t first_layer, int64_t last_layer,
                           bool first_stage);

// Sums over a stage's layers (transient: the largest; staging: the largest
// layer's offloaded bytes, the second buffer that lets copies overlap compute).
struct LayerSums {
  double kept_bytes = 0, transient_bytes = 0, offload_bytes = 0, offload_staging_bytes = 0;
  double forward_held_bytes = 0;  // LayerCost::forward_held_bytes, summed
  // the largest of a kept layer's forward peak (LayerCost::forward_peak_bytes) beside what the
  // layers before it kept
  double forward_peak_bytes = 0;
  // Under ordered backward: a layer's working set less what the later layers
  // of the stage kept (their backward ran first and freed it).
  double ordered_transient_bytes = 0;
  int64_t offloaded_layers = 0;
  double fwd_s = 0, bwd_s = 0, recompute_s = 0, comm_s = 0;
  double fwd_comm_s = 0, bwd_comm_s = 0;  // forward and backward collectives over PCIe (not recompute)
  double fwd_flops = 0, bwd_flops = 0, recompute_flops = 0;
  double open_chunk_bytes = 0;  // replayed bytes of the chunk's earlier layers (full recompute in chunks)
  void add(const LayerCost& c);
  void add(const LayerCost& c, int64_t copies);  // `copies` layers of cost c in a row (sums as added one by one)
};

struct StageTotals {
  double activations_bytes = 0, transient_bytes = 0, peak_bytes = 0;
  double optimizer_step_peak_bytes = 0;  // static, runtime and the step's temporary
  double fwd_s = 0, bwd_s = 0, recompute_s = 0, exposed_offload_s = 0, comm_s = 0;
  double microbatch_s = 0;  // one microbatch's forward, backward and recompute on this stage
};

StageTotals stage_totals(const StageBase& base, const LayerSums& layers);

}  // namespace remat
