#pragma once
// Cost of one layer under one choice, per microbatch on one rank.
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "remat/cost/exact_blocks.hpp"
#include "remat/spec/hardware_spec.hpp"
#include "remat/spec/plan.hpp"

namespace remat {

struct LayerCost {
  double kept_bytes = 0;       // alive from this layer's forward to its backward
  double transient_bytes = 0;  // extra while its backward runs (recomputed tensors, gradients)
  double offload_bytes = 0;    // to host and back, each direction
  // weight gradients its backward allocates, alive to the step's end, where gradients are absent
  // before the backward (StageBase::grads_absent_bytes; 0 otherwise)
  double grads_bytes = 0;
  // alive from this layer's forward until the forward leaves autocast, after the loss's forward:
  // autocast's cached bf16 casts of a reentrant-checkpointed layer's trained weights
  double forward_held_bytes = 0;
  // a kept layer run by PyTorch's autograd (LayerDef::pytorch_autograd): the most its forward holds at
  // once, its input included, beside what the earlier layers kept (0: not stated)
  double forward_peak_bytes = 0;
  double fwd_flops = 0, bwd_flops = 0, bwd_exec_flops = 0, recompute_flops = 0;
  double fwd_s = 0, bwd_s = 0, recompute_s = 0;
  double comm_s = 0;  // part of fwd_s + bwd_s + recompute_s spent in collectives
  // the GPU time of the blocks after attention (the MLP or MoE half) inside fwd_s, bwd_s, recompute_s
  double mlp_fwd_s = 0, mlp_bwd_s = 0, mlp_recompute_s = 0;
  double fwd_comm_s = 0, bwd_comm_s = 0;  // collectives in fwd_s and bwd_s that cross the PCIe link
  // Full recompute in a chunk of layers replayed together: the bytes this
  // layer's replay brings back, and whether it starts the chunk.
  double chunk_replay_bytes = 0;
  bool chunk_start = false;
  // the forward takes the framework's MoE host time, not the GPU's: a host-bound layer, whose
  // time (and the time of replaying it) is rougher than a GPU-bound one's (reports/megatron)
  bool host_bound = false;
};

// Block costs (block_cost) already computed, kept while many choices are costed on the same
// layers: a block costs the same in one mode whatever the other blocks do. The blocks must
// outlive it.
class BlockCostMemo {
 public:
  const BlockCost& cost(const Block& block, BlockMode mode, bool early_stop);

 private:
  std::map<std::tuple<const Block*, BlockMode, bool>, BlockCost> costs_;
};

LayerCost layer_cost(const LayerDef& layer, const LayerChoice& choice, bool early_stop, const HardwareSpec& hw);
// The same, with the block costs through `memo`. `autocast_cast_bytes`: autocast's bf16 copies of
// the layer's weights, which its GEMMs save; a fully recomputed layer's replay makes them again and
// its backward frees each block's with the block (shared by the blocks' GEMM weights).
LayerCost layer_cost(const LayerDef& layer, const LayerChoice& choice, bool early_stop, const HardwareSpec& hw,
                     BlockCostMemo& memo, double autocast_cast_bytes = 0);
// Reduces `choice` to what layer_cost reads of it: of its place in a chunk of full recompute,
// only whether the chunk has more than one layer and whether this layer starts it. Choices equal
// once reduced cost the same (LayerCostCache keys on it).
void reduce_to_cost_key(LayerChoice& choice);

// The forward ops a full-layer replay runs, each with its block; with early
// stop, up to the last op whose output the backward reads.
std::vector<std::pair<const Block*, const OpDef*>> replay_ops(const LayerDef& layer, bool early_stop);

// The per-layer choice a uniform strategy makes for a recomputed layer.
LayerChoice choice_for(Strategy s, const LayerDef& layer);
LayerChoice offload_choice(const LayerDef& layer);

}  // namespace remat
