#pragma once
// StreamBP (Luo et al. 2025, "Memory-Efficient Exact Backpropagation for Long
// Sequence Training of LLMs", arXiv 2506.03077): the layer backward and the
// LM head run over sequence chunks; plus the objectives (SFT, GRPO, DPO) and
// LoRA, which set what the head and the static state hold.
#include <cstdint>
#include <functional>

#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/layer_cost.hpp"
#include "remat/cost/params.hpp"
#include "remat/spec/hardware_spec.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/plan.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

// Fraction of the unchunked attention kernel's score FLOPs that D chunks
// compute. A kernel that masks without skipping (the paper's standard BP,
// sec. 3.2.2: 2 T^2 d for S = QK^T) costs (1+D)/(2D) of it when chunk i
// multiplies Q(i) by K(:i) only; a causal tile-skipping kernel (flash) already
// skips the masked half, and the chunks sum to the same half: fraction 1.
double streambp_score_fraction(int64_t chunks, bool causal_tile_skip);

// Keys and values of the whole sequence that every chunk's attention reads
// (sec. 3.2.2, "K and V are only computed once and get cached").
double streambp_kv_bytes(const LayerDef& layer);

// Bytes of one layer whose backward runs over D = `chunks` sequence chunks
// (any D >= 1: the chunked algorithm, separate K/V pass and accumulators even
// at D = 1): kept from forward to backward, and the most alive besides them
// during its backward (sec. 3.2.2, eq. 14; the terms in streambp.cpp).
struct StreamBpBytes {
  double kept = 0, transient = 0;
};
StreamBpBytes streambp_chunked_bytes(const LayerDef& layer, int64_t chunks);

// One layer under StreamBP with D = `chunks` > 1: fills kept/transient bytes
// and the recompute FLOPs and time (layer_cost runs D = 1 as layer
// checkpointing, full recompute).
void streambp_layer(LayerCost& c, const LayerDef& layer, int64_t chunks, bool early_stop, const HardwareSpec& hw);

// Time of the extra weight traffic: each of the D - 1 extra chunks reads the
// layer's weights from HBM in its reforward and its backward and (full
// training) reads and writes the weight-gradient accumulator (sec. 3.2.2,
// "HBM overhead of StreamBP").
double streambp_weight_read_s(double weight_bytes, double grad_bytes, int64_t chunks, const HardwareSpec& hw);

// Sequences one example puts through the model: SFT 1, GRPO G, DPO 2.
int64_t sequences_per_example(const TrainingSpec& t);
// Forward passes per microbatch without gradient before the policy's own: GRPO's old-policy and
// reference log-probabilities (eq. 4), DPO's reference (eq. 7); 0 for SFT.
int64_t no_grad_forwards(const TrainingSpec& t);
// The spec the cost model runs: mbs and gbs in sequences, and the StreamBP
// partitions only where the plan's strategy is streambp.
TrainingSpec streambp_effective_training(const TrainingSpec& t, Strategy s);

// Bytes per logits element (token x vocabulary entry) alive at the loss:
// policy logits (bf16), the loss's fp32 copy and the fp32 gradient; GRPO adds
// old-policy logits, GRPO and DPO the reference logits (fp32 each, eqs. 4, 7),
// which LoRA does without (the reference is the base model with the adapter
// disabled, run before the loss; App. D). `logits`: how the model's forward hands them to the loss
// (ModelSpec::logits under --framework hf; standard elsewhere).
double head_logits_bytes_per_element(const TrainingSpec& t, ModelLogits logits);
// The loss's logits working set with C = lm_head_chunks (sec. 3.2.1, eq. 3:
// one chunk's logits and gradient at a time).
double head_logits_bytes(const TrainingSpec& t, double logits_elements, ModelLogits logits);
// Most bytes alive around the LM head's loss: what the head block saves, the
// logits working set, and the gradient of the head's normed input, which the
// chunks accumulate.
double head_peak_bytes(const Block& head, const TrainingSpec& t, double logits_elements, ModelLogits logits);
// Of those, what the loss's forward holds, before any gradient (--framework hf's losses); 0 where
// the forward and backward are not told apart.
double head_forward_bytes(const Block& head, const TrainingSpec& t, double logits_elements, ModelLogits logits);

// LoRA adapter parameters of one layer on one tp rank: r (in + out) per
// targeted matrix (q, k, v, o; gate, up, down).
double lora_layer_params(const ModelSpec& m, const TrainingSpec& t, int64_t tp, int64_t layer = 0);
// LoRA adapters PEFT builds that a step never trains, held in the adapters' dtype: DSA's indexer
// projections (wq_b, wk, weights_proj), which transformers runs under no_grad.
double lora_held_layer_params(const ModelSpec& m, const TrainingSpec& t, int64_t layer);
// Static bytes of a stage: LoRA (frozen bf16 base, adapters trained), the
// reference model of GRPO/DPO under full training, and ZeRO-3 (weights
// sharded over dp, one layer gathered; App. A.3 caches it for all D chunks).
StaticBytes streambp_static_bytes(const ParamCount& stage, double layer_params, double adapter_params,
                                  const TrainingSpec& t);

}  // namespace remat

namespace remat {

// `remat plan --maximize seq|mbs`: the largest value in [1, limit] for which
// `fits` holds, assuming memory only grows with it (binary search); 0 if even
// 1 does not fit.
int64_t largest_fitting(int64_t limit, const std::function<bool(int64_t)>& fits);

// StreamBP partitions for a sequence: chunks of `partition_tokens` tokens
// (the paper's setup, App. D: 500 per layer, 100 for the LM head).
int64_t chunks_for(int64_t seq, int64_t partition_tokens);

}  // namespace remat
