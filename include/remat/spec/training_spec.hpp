#pragma once
// Parallel layout, batch shape, precision and the implementation choices
// that real training code differs on.
#include <cstdint>
#include <vector>

namespace remat {

enum class Precision { mixed, bf16 };             // mixed: bf16 weights, fp32 grads and master weights
enum class Optimizer { adam, sgd, none };         // none: backprop only, no optimizer state
enum class RecomputeReplay { full, early_stop };  // Megatron / PyTorch non-reentrant checkpoint

struct TrainingSpec {
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t dp = 1;
  int64_t ep = 1;
  int64_t mbs = 1;  // sequences per microbatch
  int64_t gbs = 0;  // sequences per iteration; 0: 4 * pp microbatches per dp rank
  int64_t seq = 4096;
  int64_t num_layers_override = 0;        // 0: the model's num_hidden_layers
  std::vector<int64_t> layers_per_stage;  // empty: split evenly, earlier stages take the remainder
  bool sequence_parallel = true;          // only meaningful when tp > 1
  Precision precision = Precision::mixed;
  Optimizer optimizer = Optimizer::adam;
  int64_t zero_stage = 1;  // 0: replicated, 1: distributed optimizer, 2: + sharded grads

  // Implementation choices (the `exact` formulas follow them).
  bool swiglu_fused = true;      // fused kernel saves gate and up only, not silu(gate)
  bool gqa_expand_kv = false;    // keys/values repeated to all heads before attention
  bool loss_fp32_logits = true;  // the loss keeps an fp32 copy of the logits
  bool flash_attention = true;   // false: softmax probabilities are materialized
  RecomputeReplay replay = RecomputeReplay::full;

  int64_t microbatches() const { return gbs / (mbs * dp); }
  int64_t gpus() const { return tp * pp * dp; }
};

}  // namespace remat
