// Megatron-LM architecture flags (megatron/training/arguments.py): --swiglu,
// --squared-relu (relu^2), --openai-gelu (GELU's tanh form), GELU when none; --normalization RMSNorm|LayerNorm;
// --disable-bias-linear (no bias on any linear) and --add-qkv-bias (q, k, v only);
// --rotary-percent; --qk-layernorm; --position-embedding-type rope|learned_absolute.
#include "megatron_arch.hpp"

#include <fmt/format.h>

namespace remat {

namespace {

bool gelu_tanh(const std::string& act) { return act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast"; }

}  // namespace

std::vector<std::string> megatron_architecture_flags(const ModelSpec& m) {
  std::vector<std::string> f;
  if (m.mlp_kind == MlpKind::gated)
    f.push_back("--swiglu");
  else if (m.hidden_act == "relu2")
    f.push_back("--squared-relu");
  else if (gelu_tanh(m.hidden_act))
    f.push_back("--openai-gelu");
  f.push_back(m.norm_kind == NormKind::layer ? "--normalization LayerNorm" : "--normalization RMSNorm");
  const bool linear_bias = m.o_bias || m.mlp_bias;
  if (!linear_bias) f.push_back("--disable-bias-linear");
  if (!linear_bias && m.qkv_bias) f.push_back("--add-qkv-bias");
  if (m.position_embeddings > 0) {
    f.push_back("--position-embedding-type learned_absolute");
  } else if (m.rotary_fraction <= 0) {
    f.push_back("--position-embedding-type none");  // ALiBi: a bias inside attention
  } else {
    f.push_back("--position-embedding-type rope");
    if (m.rotary_fraction > 0 && m.rotary_fraction < 1)
      f.push_back(fmt::format("--rotary-percent {}", m.rotary_fraction));
  }
  if (m.qk_norm != QkNorm::none) f.push_back("--qk-layernorm");
  f.push_back("--bf16");
  return f;
}

std::vector<std::string> megatron_inexpressible(const ModelSpec& m) {
  std::vector<std::string> out;
  const auto cannot = [&out](const std::string& what) {
    out.push_back("Megatron-LM has no flag for " + what + ": the flags above build a different layer there");
  };
  if (m.parallel_attn_mlp) cannot("attention and MLP in parallel on one residual");
  if (m.mlp_kind == MlpKind::two_matrix && m.hidden_act != "relu2" && m.hidden_act != "gelu" &&
      !gelu_tanh(m.hidden_act))
    cannot("the MLP activation " + m.hidden_act + " (its two-matrix MLP runs GELU)");
  if (m.mlp_kind == MlpKind::gated && m.hidden_act != "silu") cannot("a gated MLP with " + m.hidden_act);
  if (m.norm_kind == NormKind::layer && !m.norm_bias) cannot("a LayerNorm without bias");
  if (m.norm_kind == NormKind::rms && m.norm_bias) cannot("an RMSNorm with bias");
  if ((m.o_bias || m.mlp_bias) && !(m.qkv_bias && m.o_bias && m.mlp_bias)) cannot("biases on some linear layers only");
  if (m.extra_norms_per_layer > 0) cannot("norms after attention and MLP (sandwich norms)");
  if (m.lm_head_bias) cannot("a bias on the output layer");
  if (!m.norm_affine) cannot("norms without weights");
  if (m.embedding_norm) cannot("a norm on the embeddings");
  if (m.position_embeddings == 0 && m.rotary_fraction <= 0 && !m.is_hybrid()) cannot("ALiBi attention biases");
  if (m.is_hybrid())
    cannot("Mamba-2 or Gated DeltaNet layers (its GPT model has none; Mamba-2 hybrids run in its MambaModel)");
  if (m.attention_output_gate) cannot("a gate on the attention output");
  return out;
}

}  // namespace remat
