#pragma once
// Parts shared by the dense (exact_blocks.cpp) and the MoE/MLA
// (exact_blocks_sparse.cpp) exact blocks: the input norm, the tp gather and
// reduction, SwiGLU and the residual add. Private to src/cost.
#include <string>
#include <vector>

#include "remat/cost/block.hpp"
#include "remat/cost/exact_blocks.hpp"
#include "remat/spec/plan.hpp"

namespace remat::parts {

// Megatron-LM recompute modules, as tags on the exact blocks' tensors and ops.
constexpr ModuleTags kCoreAttnTag = module_bit(MegatronModule::core_attn);
constexpr ModuleTags kMlpTag = module_bit(MegatronModule::mlp);
constexpr ModuleTags kLayernormTag = module_bit(MegatronModule::layernorm);
// The tensors an input norm (add_input_norm) adds besides the block input "x", by name.
inline const std::vector<std::string> kInputNormTensors = {"x32",      "mean",  "rstd", "centered", "centered_again",
                                                           "x_normed", "x_norm"};
constexpr ModuleTags kMoeActTag = module_bit(MegatronModule::moe_act);
constexpr ModuleTags kMoeTag = module_bit(MegatronModule::moe);
constexpr ModuleTags kSharedExpertsTag = module_bit(MegatronModule::shared_experts);
constexpr ModuleTags kMlaUpProjTag = module_bit(MegatronModule::mla_up_proj);

// The sequence-parallel all-gather of the normed input before the first
// column-parallel GEMM (with sp), or the backward all-reduce of its gradient
// (tp without sp). Backward under sp: reduce-scatter of dX plus the re-gather
// of the saved shard for dW.
OpDef input_gather(const RankShape& r, double hidden);
// The reduction after a row-parallel GEMM: reduce-scatter (sp) or all-reduce.
OpDef output_reduce(const RankShape& r, double hidden);
// Residual add on the sequence-sharded stream: reads two, writes one; its
// backward passes the gradient through (one read, one write).
OpDef residual_add(const RankShape& r, double hidden);
// Norm of the block input (x, rstd, x_norm saved), then, when `gather` and
// tp > 1, the tp gather: the common head of most blocks. The norm's saved
// tensors are tagged `layernorm` (Megatron discards the norm output and reruns
// the norm before the backward that reads it).
// `readers`: the GEMMs that read the norm's output (each saves its own bf16 cast under autocast).
void add_input_norm(Block& b, const RankShape& r, double hidden, bool gather = true, int readers = 1);
// A parallel layer's MLP or MoE branch: the layer input, and with one shared norm its tensors, are
// the attention block's (their bytes 0 here, the norm's traffic counted once).
void share_with_attention(Block& b, bool shared_norm);
// `count` norms on a block's output before its residual add (sandwich norms), as their framework runs them.
void add_output_norms(Block& b, const RankShape& r, double hidden, double count);
double normed_bytes(const RankShape& r);
double gemm_output_normed_bytes(const RankShape& r);
// An attention mask a kernel saves: no gradient flows to it, so its backward holds no copy of it
// (TensorDef::working_copies 0; torch's memory-efficient backward computes a bias gradient only
// where the bias requires one).
inline TensorDef mask_tensor(const std::string& name, double bytes) {
  return {.name = name, .bytes = bytes, .working_copies = 0};
}
// Whether a linear saves its input: its weight trains, or a LoRA adapter without dropout reads it.
bool saves_input(const RankShape& r, bool adapted);
// HBM bytes one LoRA adapter moves per row, per element of its input and of its output, in forward
// and backward, with adapters of `adapter_bytes` bytes (fp32 by PEFT's default) on a bf16 model.
struct LoraBytes {
  double fwd_in = 0, fwd_out = 0, bwd_in = 0, bwd_out = 0;
};
LoraBytes lora_bytes_per_row(double adapter_bytes, bool dropout);
// A linear layer on rows x in -> out reading `input`: it saves its input when its weight trains or a
// LoRA adapter without dropout reads it; under LoRA its backward computes the input's gradient only,
// and each adapted matrix of `matrices` adds its adapter's saved tensors and HBM traffic to `b`.
OpDef linear(Block& b, const RankShape& r, const std::string& name, double rows, double in, double out,
             const std::string& input, const std::vector<bool LoraTargets::*>& matrices, double count = 1);
// SwiGLU on rows x width, tensors named with prefix `p`: fused saves gate and
// up; unfused also saves silu(gate); with `linear_copy` the product reads a
// copy of up (Megatron's offset add) while gate's view keeps fc1's output; `clamped`: silu(gate) and
// up clamped before the product (ModelSpec::clamped_swiglu), which saves the clamped pair.
void add_swiglu(Block& b, double rows, double width, const std::string& p, bool fused, bool linear_copy = false,
                bool clamped = false);
// A two-matrix MLP's activation on rows x width (relu^2, GELU), tensors named with prefix `p`:
// it saves the up projection's output (pre_act) and makes the down projection's input (act).
void add_activation(Block& b, double rows, double width, const std::string& p);
// Attention through torch's math kernel for sdpa, in fp32 (exact_attention_math.cpp): nh query and
// g key/value heads of hd (values vd), `fwd_flops` for QK^T and PV over the whole square.
void add_math_sdpa(Block& b, const RankShape& r, double nh, double g, double hd, double vd, double fwd_flops);
// Attention as transformers' eager path runs it (exact_attention_math.cpp): nh heads of hd (values
// vd), keys and values named k and v, `fwd` its forward FLOPs under the causal mask; `sinks`: the
// layer has a learned sink logit per head (GPT-OSS, MiMo-V2-Flash).
void add_eager_attention(Block& b, const RankShape& r, const ModelSpec& m, double nh, double hd, double vd, double fwd,
                         const std::string& k, const std::string& v, bool sinks = false);

// transformers' Python activations (gelu_new, gelu_accurate, gelu_fast, quick_gelu, xielu): the
// intermediates their autograd saves beside x, on the block's last op (the activation), over `rows_f`
// intermediate-wide elements (exact_activations.cpp).
void add_python_activation_saves(Block& b, const RankShape& r, const std::string& act, double rows_f);

}  // namespace remat::parts
