#pragma once
// The `exact` formula set: recompute blocks (EAGLE Appendix C boundaries)
// built from a model's real shapes on one tensor-parallel rank.
#include <cstdint>
#include <string>
#include <vector>

#include "remat/cost/block.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

// Shapes of one microbatch on one rank.
struct RankShape {
  double b = 1;  // sequences
  double s = 1;  // sequence length
  int64_t tp = 1;
  int64_t ep = 1;
  bool sp = false;  // sequence parallel (tp > 1)
  bool causal = true;
  bool swiglu_fused = true;
  bool gqa_expand_kv = false;
  bool flash_attention = true;
  bool moe_probs_scale_outputs = false;  // the experts' outputs saved for the probabilities' gradient
  bool glu_linear_copy = false;          // unfused GLU saves a copy of its linear half
  bool layouts_from_model_code = false;  // TrainingSpec::layouts_from_model_code
  bool v_views_qkv = false;              // v is a view of the fused qkv projection's output
  bool ordered_backward = false;         // see LayerDef::ordered_backward
  // PyTorch eager stacks (TrainingSpec's flags of the same names, src/spec/profiles/hf.cpp)
  bool norm_fp32_upcast = false;
  bool rope_rotate_half = false;
  MixerKernels mixer_kernels = MixerKernels::fused;  // Mamba-2 and Gated DeltaNet
  // From the model (with_model): LayerNorm (mean and 1/std saved) instead of RMSNorm
  bool layer_norm = false;
  LayerNormCode layer_norm_code = LayerNormCode::native;  // ModelSpec's, on eager stacks only
  bool norm_scale_fp32 = false;                           // ModelSpec::norm_scale_fp32 (Gemma's norms)
  bool norm_affine = true;                                // ModelSpec::norm_affine (false: no weight, no product saved)
  bool softmax_fp32 = false;
  bool autocast = false;  // fp32 parameters and residual stream, bf16 casts for each GEMM
  // false under LoRA: a frozen matrix saves no input for its weight's gradient, and its
  // backward computes the input's gradient only
  bool weights_train = true;
  LoraTargets lora{false, false, false, false, false, false, false};
  double lora_rank = 0, lora_dropout = 0;
  bool peft_moe_conversion = false;  // TrainingSpec's; with_model applies it (lora_placement)
  // ranks of the adapters on the routed experts' stacked weights (with_model); 0: none
  double lora_experts_gate_up_rank = 0, lora_experts_down_rank = 0;
  double lora_bytes = 2;  // bytes per element of the adapters (and of their input's cast)
  // bytes per weight of the gradients each GEMM's backward allocates, where the step holds none
  // before its backward (hf, full model, one microbatch: zero_grad(set_to_none)); 0 otherwise
  double weight_grad_bytes = 0;
  double stream_bytes() const { return autocast ? 4 : 2; }  // bytes per element of the residual stream

  double tokens() const { return b * s; }                                // full sequence
  double seq_tokens() const { return sp ? b * s / double(tp) : b * s; }  // residual-stream rows
};

RankShape rank_shape(const TrainingSpec& t);
// `r` with the model's choices that change what the shared parts save (the norm kind).
RankShape with_model(RankShape r, const ModelSpec& m);

// Model-dependent sub-shapes, for the blocks and the paper's symbols.
int64_t gqa_head_dim(const ModelSpec& m);

Block rmsnorm_linear_block(const RankShape& r, int64_t hidden, int64_t out_features, const char* name);
// The final norm and LM head as the model runs them (with DeepSeek-V4's hc_head collapsing the streams first)
Block lm_head_block(const RankShape& r, const ModelSpec& m);
// gated (SwiGLU); `norm_readers`: the GEMMs reading the normed input (1 for a fused gate_up_proj)
Block mlp_block(const RankShape& r, int64_t hidden, int64_t ffn, bool clamped = false, int norm_readers = 2);
// Up, activation, down: one f-wide pre-activation and the activation's output saved,
// whatever the activation (GELU and relu^2 save their input, the down GEMM its input).
Block two_matrix_mlp_block(const RankShape& r, int64_t hidden, int64_t ffn, const std::string& act);
// The model's dense MLP (gated or two-matrix; in a parallel block the layer input and,
// with one shared norm, the normed input are the attention block's: counted there).
Block dense_mlp_block(const RankShape& r, const ModelSpec& m, int64_t width = 0);  // 0: intermediate_size
Block per_layer_input_block(const RankShape& r, const ModelSpec& m);               // Gemma 4 E2B/E4B's branch
// `windowed`: a sliding-window layer (ModelSpec::layer_is_windowed)
// `shares_kv`: Gemma 4's KV-shared layers (queries only; keys and values an earlier layer's)
Block gqa_block(const RankShape& r, const ModelSpec& m, bool windowed = false, bool shares_kv = false);
Block mla_down_block(const RankShape& r, const ModelSpec& m);
Block mla_up_attn_block(const RankShape& r, const ModelSpec& m);
Block moe_shared_block(const RankShape& r, const ModelSpec& m);
Block moe_routed_block(const RankShape& r, const ModelSpec& m);
// Under transformers' DeepSeek MoE forward (ModelSpec::shared_experts_after_routed) the shared experts
// are their own block after the routed ones: their backward runs first and frees what they saved
// before the routed experts' backward (GLM-4.5's GRPO at 4 x 12k, peak-traces-h200/unseen11).
bool shared_experts_own_block(const RankShape& r, const ModelSpec& m);
Block moe_shared_experts_block(const RankShape& r, const ModelSpec& m);
// Hybrid models' mixers, norm to out_proj (src/cost/exact_blocks_hybrid.cpp), as r.mixer_kernels runs them.
Block mamba2_block(const RankShape& r, const ModelSpec& m);
// Falcon-H1's parallel hybrid: attention and a Mamba-2 mixer on one normed input (one block), and
// its glue (Wo, the branches summed, the reduction, the residual add).
Block attention_mamba2_block(const RankShape& r, const ModelSpec& m);
Block attention_mamba2_glue(const RankShape& r, const ModelSpec& m);
Block gated_deltanet_block(const RankShape& r, const ModelSpec& m);
Block kimi_delta_block(const RankShape& r, const ModelSpec& m);  // Kimi Linear's KDA (exact_blocks_kda.cpp)
Block short_conv_block(const RankShape& r, const ModelSpec& m);  // LFM2's gated short convolution
Block mamba1_block(const RankShape& r, const ModelSpec& m);      // Mamba-1 (its kernels: mixer_kernels)
Block lightning_block(const RankShape& r, const ModelSpec& m);   // MiniMax-01's lightning attention
// DeepSeek-V4 (exact_blocks_dsv4.cpp): its attention of one kind with the hyper-connection before it;
// the hyper-connection before the MoE; the mixing after either half (`name`: the glue block's name)
Block compressed_attention_block(const RankShape& r, const ModelSpec& m, CompressedAttention kind);
Block hyper_connection_block(const RankShape& r, const ModelSpec& m);
void add_hyper_head(Block& head, const RankShape& r, const ModelSpec& m);  // hc_head before the final norm
Block hyper_connection_out_glue(const RankShape& r, const ModelSpec& m, const char* name);
Block mixer_out_glue(const RankShape& r, int64_t hidden);  // reduce, residual

// Ops outside any recompute block (never recomputed at block granularity).
// Wo, reduce, residual; `windowed`: of a sliding-window layer (Gemma 4's full-attention layers are wider)
double feedforward_output_norms(const ModelSpec& m);  // sandwich norms after the feed-forward
Block attention_out_glue(const RankShape& r, const ModelSpec& m, bool windowed = false);
Block mlp_out_glue(const RankShape& r, const ModelSpec& m);       // reduce, (dropout,) residual
Block moe_dispatch_glue(const RankShape& r, const ModelSpec& m);  // permute, all-to-all
Block moe_combine_glue(const RankShape& r, const ModelSpec& m);   // all-to-all, unpermute (sum of the K copies)

// One transformer layer: blocks in forward order; `recomputable` marks the
// Appendix C blocks, the others are glue.
struct LayerDef {
  std::vector<Block> blocks;
  std::vector<bool> recomputable;
  double input_bytes = 0;  // the layer input (the full-recompute checkpoint)
  // A block's backward runs after the later blocks' backward freed what they
  // saved, so its working set sits on the earlier blocks' tensors only.
  bool ordered_backward = false;
  int64_t local_experts = 0;       // routed experts on this rank (MoE layers)
  bool parallel_branches = false;  // the MLP or MoE reads the layer's normed input beside the attention
  // PyTorch's autograd engine runs the backward (--framework hf). Two consequences:
  // - the gradient of the layer's output stays alive through the layer's backward (the residual's
  //   skip path holds it in the engine's input buffer until the branch's gradient joins it), and a
  //   reentrant checkpoint holds its replay's output while that backward runs
  //   (CheckpointFunction.backward);
  // - what a node saved is freed as soon as its backward ends: a block that ends with a linear runs
  //   that linear's backward first, so the block's inner gradients no longer sit on the input only
  //   that linear saved, and its weight gradient exists by then.
  bool pytorch_autograd = false;
  // Under autocast the residual stream is fp32 and a branch's output bf16: the residual add's
  // backward casts the output's gradient to bf16 for the branch (0 where the dtypes agree)
  double branch_grad_cast_bytes = 0;
  int recompute_block_count() const;
};

LayerDef build_layer(const ModelSpec& m, const RankShape& r, int64_t layer_index);

}  // namespace remat
