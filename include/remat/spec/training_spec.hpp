#pragma once
// Parallel layout, batch shape, precision and the implementation choices
// that real training code differs on.
#include <cstdint>
#include <string>
#include <vector>

namespace remat {

enum class Precision { mixed, bf16 };             // mixed: bf16 weights, fp32 grads and master weights
enum class Optimizer { adam, sgd, none };         // none: backprop only, no optimizer state
enum class RecomputeReplay { full, early_stop };  // Megatron / PyTorch non-reentrant checkpoint
enum class Objective { sft, grpo, dpo };          // StreamBP paper sec. 3.2.1
// The kernels behind a hybrid model's Mamba-2 and Gated DeltaNet mixers: the fused ones
// (mamba_ssm, causal_conv1d, fla) or transformers' plain-torch fallbacks, which run when those
// packages are absent and save far more (src/cost/exact_blocks_hybrid.cpp).
enum class MixerKernels { fused, torch };

// Matrices of each layer that carry a LoRA adapter (PEFT's target_modules, read against the
// model's modules by resolve_lora_targets in lora_placement.hpp).
struct LoraTargets {
  bool q = true, k = true, v = true, o = true, gate = true, up = true, down = true;
  // the model fuses q, k, v (and gate, up) into one projection with one adapter (Phi-3's qkv_proj)
  bool fused_qkv = false, fused_gate_up = false;
  bool router = false;  // an MoE layer's router (PEFT's all-linear adapts it)
  // DeepSeek's latent attention: q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj
  bool q_a = false, q_b = false, kv_a = false, kv_b = false;
  bool shared_expert_gate = false;  // Qwen2-MoE's and Qwen3-Next's h x 1 gate on the shared expert
  bool head_gate = false;           // Laguna's and Step 3.5's per-head attention gate g_proj (h x heads)
  // DSA's lightning indexer: wq_b, wk and weights_proj (transformers runs it under no_grad: never trained)
  bool indexer_q = false, indexer_k = false, indexer_weights = false;
  // a Gated DeltaNet's input projections: Qwen3-Next's in_proj_qkvz and in_proj_ba, Qwen3.5's
  // in_proj_qkv, in_proj_z, in_proj_b and in_proj_a
  bool gdn_qkvz = false, gdn_ba = false, gdn_qkv = false, gdn_z = false, gdn_b = false, gdn_a = false;
  // a linear mixer's own in_proj and out_proj (LFM2's short convolution, a Gated DeltaNet's out_proj)
  bool mixer_in = false, mixer_out = false;
  // a Mamba-1 mixer's x_proj and dt_proj (dt_proj's adapter never runs: the mixer multiplies by its
  // weight directly)
  bool mamba_x = false, mamba_dt = false;
  // a linear mixer's output gate (MiniMax-01's lightning attention output_gate)
  bool mixer_gate = false;
  // Kimi Delta Attention's low-rank forget gate (f_a_proj, f_b_proj) and output gate (g_a_proj, g_b_proj)
  bool kda_f_a = false, kda_f_b = false, kda_g_a = false, kda_g_b = false;
  // DeepSeek-V4's compressor (kv_proj, gate_proj) and its CSA indexer's pooling projections (kv_proj,
  // gate_proj; the indexer's adapters get no gradient: its top-k indices carry none)
  bool compress_kv = false, compress_gate = false, index_kv = false, index_gate = false;
  // sum of in + out over the tower's linear modules the target names reach (ModelSpec::
  // tower_linear_modules): PEFT adapts them too, and a text-only step never trains them
  double tower_adapter_width = 0;
  // given as PEFT's all-linear, which names each linear module by its whole path: a leaf name a tower
  // shares in a class PEFT cannot adapt (Gemma 4's Gemma4ClippableLinear) is then not matched
  bool by_all_linear = false;
  bool any_qkv() const { return q || k || v; }
  bool any_gate_up() const { return gate || up; }
  bool any_latent() const { return q_a || q_b || kv_a || kv_b; }
  bool any_mixer() const {
    return gdn_qkvz || gdn_ba || gdn_qkv || gdn_z || gdn_b || gdn_a || mixer_in || mixer_out || mamba_x || mamba_dt ||
           mixer_gate || kda_f_a || kda_f_b || kda_g_a || kda_g_b;
  }
  bool any() const {
    return any_qkv() || o || any_gate_up() || down || router || any_latent() || shared_expert_gate || head_gate ||
           any_mixer() || indexer_q || indexer_k || indexer_weights || compress_kv || compress_gate || index_kv ||
           index_gate;
  }
};

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
  int64_t zero_stage = 1;  // 0: replicated, 1: distributed optimizer, 2: + sharded grads, 3: + sharded weights

  // StreamBP (strategy `streambp`): sequence chunks per layer backward (D) and
  // per LM-head forward/backward (C). 1 and 1: layer checkpointing.
  int64_t streambp_chunks = 1;
  int64_t lm_head_chunks = 1;
  // Training objective: SFT, GRPO with `grpo_group` responses per prompt, DPO
  // with a chosen and a rejected sequence per example. mbs counts examples.
  Objective objective = Objective::sft;
  int64_t grpo_group = 8;
  // GRPO: prompt tokens of each sequence; > 0 computes logits for the completion only (TRL's
  // logits_to_keep), 0 for every position
  int64_t prompt_tokens = 0;
  // LoRA: rank 0 trains the full model; rank r > 0 freezes the bf16 base
  // weights and trains adapters on `lora_targets`.
  int64_t lora_rank = 0;
  LoraTargets lora_targets;
  double lora_dropout = 0;  // > 0: each adapted matrix saves its own dropped copy of the input and a mask
  // PEFT's MoE target conversion applies (the hf profile): on a model with experts_peft_converted,
  // gate/up/down adapt the routed experts' stacked weights and no nn.Linear (lora_placement)
  bool peft_moe_conversion = false;
  // bytes per adapter parameter: 2 (bf16) or 4 (PEFT's default autocast_adapter_dtype: fp32 adapters
  // on a bf16 base, each adapter casting its input to fp32); 0: the framework's default
  int64_t lora_adapter_bytes = 0;

  // Implementation choices (the `exact` formulas follow them).
  bool swiglu_fused = true;      // fused kernel saves gate and up only, not silu(gate)
  bool gqa_expand_kv = false;    // keys/values repeated to all heads before attention
  bool loss_fp32_logits = true;  // the loss keeps an fp32 copy of the logits
  bool flash_attention = true;   // false: softmax probabilities are materialized
  RecomputeReplay replay = RecomputeReplay::full;
  MixerKernels mixer_kernels = MixerKernels::fused;  // the profile's unless --mixer-kernels says

  // What a framework keeps beyond the blocks' tensors (set by apply_framework).
  // The registered profile that set these choices (src/spec/profiles/): generic
  // is remat's reference implementation.
  std::string framework = "generic";
  // router probabilities multiply the experts' outputs, which the multiply saves (transformers);
  // else they scale the rows inside the experts' activation
  bool moe_probs_scale_outputs = false;
  bool glu_linear_copy = false;  // unfused GLU multiplies a copy of its linear half (Megatron's offset add)
  // tensor layouts follow the model's own code (transformers): a fused q|k|v projection's views
  bool layouts_from_model_code = false;
  bool v_views_qkv = false;             // v is a view of the fused qkv output (kept whole by core_attn's checkpoint)
  bool attention_score_buffer = false;  // one persistent [b*heads, s, s] bf16 buffer for QK^T (Megatron local)
  bool keeps_stage_outputs = false;     // the pipeline holds each in-flight microbatch's stage output
  bool ordered_backward = false;        // a block's backward starts after the layer's later blocks freed theirs
  bool loss_grad_in_place = false;      // the loss writes the logits' gradient into its saved fp32 softmax
  // the optimizer step's temporary, bytes per trained parameter (torch's foreach Adam: one tensor of
  // all parameters, fp32 behind Megatron's master copy, the parameter dtype in plain PyTorch)
  double optimizer_temp_bytes_per_param = 0;
  bool grad_accumulation_pass = false;   // each microbatch adds bf16 weight gradients into fp32 main grads
  double optimizer_bytes_per_param = 0;  // HBM traffic of the step; 0: weights, grads and state read and written once
  // HBM traffic of the step per byte of gradient, where every tensor it touches has the gradient's
  // dtype (torch's foreach AdamW); 0: the line above
  double optimizer_bytes_per_grad_byte = 0;
  double runtime_bytes = 0;            // allocated besides weights and activations (library workspaces)
  double outside_allocator_bytes = 0;  // CUDA context and NCCL buffers: device memory the allocator never sees
  // PyTorch eager stacks (--framework hf):
  bool norm_fp32_upcast = false;  // RMSNorm upcasts its input to fp32 and saves that copy, then its
                                  // normalized tensor for the weight's gradient, before the output
  bool softmax_fp32 = false;      // unfused attention: fp32 softmax saved, its bf16 cast saved for PV
  // the framework runs the model's own class, which has no gradient checkpointing: no recompute
  bool model_runs_no_checkpointing = false;
  bool rope_rotate_half = false;  // rotary embedding as separate kernels: x*cos + rotate_half(x)*sin
  // GRPO/DPO log-probs as TRL computes them for bf16 logits: a log_softmax per row, its bf16
  // output saved; the reference and old-policy log-probs under no_grad (nothing kept)
  bool per_row_logps = false;
  bool loss_log_softmax_saved = false;       // the loss upcasts the logits, saves an fp32 log-softmax, and its
                                             // backward writes two fp32 gradients (cross_entropy as PyTorch runs it)
  bool grads_allocated_in_backward = false;  // gradients are set to None after the step (zero_grad's default)
  // a tied embedding's two gradients (the LM head's and the lookup's) meet in autograd's input
  // buffer, which sums them into a new tensor (bf16): three of them alive at the end of the backward
  bool tied_grads_summed_out_of_place = false;
  bool params_fp32_autocast = false;  // --precision mixed as autocast runs it: fp32 parameters, bf16 casts

  int64_t microbatches() const { return gbs / (mbs * dp); }
  int64_t gpus() const { return tp * pp * dp; }
};

}  // namespace remat
