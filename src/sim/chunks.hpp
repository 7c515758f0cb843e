#pragma once
// The simulator's view of one virtual stage (a model chunk): its layers in
// forward order with their analytical costs, and the fixed pieces (LM head,
// p2p, static state) taken from stage_model.
#include <cstdint>
#include <vector>

#include "remat/cost/layer_cost.hpp"
#include "remat/cost/stage_model.hpp"
#include "remat/sim/simulate.hpp"

namespace remat::sim_detail {

struct ChunkLayer {
  int64_t layer = 0;  // global index
  LayerCost cost;
};

struct Chunk {
  int64_t stage = 0, chunk = 0, virtual_index = 0;
  std::vector<ChunkLayer> layers;  // forward order
  StaticBytes static_bytes;
  double runtime_bytes = 0;         // the framework's buffers alive all iteration (per GPU)
  double stage_output_bytes = 0;    // held per microbatch from its forward to its backward (--framework)
  bool ordered_backward = false;    // each layer's kept activations go after its backward, not the step's
  double optimizer_step_bytes = 0;  // the optimizer step's temporary for this chunk's parameters
  double grads_absent_bytes = 0;    // gradients allocated in backward (hf): each layer's after its backward
  double head_grads_bytes = 0;      // of those, the head's, after the head's backward
  double autocast_cast_bytes = 0;   // autocast's bf16 weight casts, alive until backward ends (hf)
  double head_cast_bytes = 0;       // of those, the head's (its chunk only): from its forward to its backward
  bool has_head = false;
  double head_bytes = 0, head_fwd_s = 0, head_bwd_s = 0;
  // of head_bytes, what the loss's forward holds beside the layers' cached autocast casts
  // (LayerCost::forward_held_bytes, freed as the forward leaves autocast); 0: not told apart
  double head_forward_bytes = 0;
  double forward_passes = 1;              // StageBase::forward_passes: each layer's forward runs this often
  double send_fwd_s = 0, send_bwd_s = 0;  // 0 where there is no neighbour
  double p2p_bytes = 0;
  double copy_bytes_per_s = 0;  // host link for offload, less the share tp collectives take
};

struct ChunkSet {
  std::vector<Chunk> chunks;  // by virtual index: chunk c of stage i at c * pp + i
  Estimate estimate;          // the analytical model of the plan (no interleaving)
  TrainingSpec training;      // as estimate costs the plan (costed_training: microbatches in sequences)
};

ChunkSet build_chunks(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, const Plan& plan,
                      int64_t virtual_stages);

}  // namespace remat::sim_detail
