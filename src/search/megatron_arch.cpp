// Megatron-LM architecture flags (megatron/training/arguments.py): --swiglu,
// --squared-relu (relu^2), --openai-gelu (GELU's tanh form), GELU when none; --normalization RMSNorm|LayerNorm;
// --disable-bias-linear (no bias on any linear) and --add-qkv-bias (q, k, v only);
// --rotary-percent; --qk-layernorm; --position-embedding-type rope|yarn|learned_absolute; --norm-epsilon;
// --rotary-base (type=int), --use-rope-scaling with --rope-scaling-factor (llama3),
// --rotary-seq-len-interpolation-factor (linear, type=int), YaRN's --rotary-scaling-factor, --yarn-*,
// --mscale and --mscale-all-dim; --qk-l2-norm; --moe-shared-expert-gate; --window-size (left,right
// tuple) with --window-attn-skip-freq and --no-rope-freq (an integer or a list expression).
#include "megatron_arch.hpp"

#include <fmt/format.h>

#include <cmath>

namespace remat {

namespace {

bool gelu_tanh(const std::string& act) {
  return act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast" || act == "bloom_gelu";
}

bool every_layer(int64_t layers, const std::function<bool(int64_t)>& one, bool value) {
  for (int64_t i = 0; i < layers; ++i)
    if (one(i) != value) return false;
  return true;
}

// Megatron-LM's per-layer frequency: an integer N when layer i (from 0) is one exactly where
// (i + 1) % N != 0 (--window-attn-skip-freq) or == 0 (--no-rope-freq, which also needs N to
// divide the layers); else the list expression, 1 where `one` holds.
std::string frequency(int64_t layers, const std::function<bool(int64_t)>& one, bool one_at_multiples) {
  for (int64_t n = 2; n <= layers; ++n) {
    bool fits = !one_at_multiples || layers % n == 0;
    for (int64_t i = 0; fits && i < layers; ++i) fits = one(i) == (((i + 1) % n == 0) == one_at_multiples);
    if (fits) return std::to_string(n);
  }
  return megatron_layer_pattern(layers, one);
}

// Megatron-LM's llama3 scaling fixes low_freq_factor 1, high_freq_factor 4 and an 8192-token
// original context (RotaryEmbedding._apply_scaling); only the factor is a flag.
bool llama3_expressible(const RopeScaling& s) {
  return s.low_freq_factor == 1 && s.high_freq_factor == 4 && s.original_context_tokens == 8192;
}

// YaRN's logit scale as transformers computes it: attention_factor when given, else
// mscale(factor, mscale) / mscale(factor, mscale_all_dim) when both are given, else
// mscale(factor, 1); Megatron-LM computes the middle form from --mscale and --mscale-all-dim.
double yarn_mscale(double factor, double mscale) { return factor <= 1 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0; }

// The --mscale and --mscale-all-dim that give transformers' logit scale, or false.
bool yarn_mscales(const RopeScaling& s, double& mscale, double& mscale_all_dim) {
  mscale = 1, mscale_all_dim = 0;
  if (s.mscale > 0 && s.mscale_all_dim > 0 && s.attention_factor == 0) {
    mscale = s.mscale, mscale_all_dim = s.mscale_all_dim;
    return true;
  }
  // transformers' own default written out (OLMo 3's 1.2079... = mscale(8, 1)): Megatron-LM's defaults
  if (s.attention_factor == 0 || std::fabs(s.attention_factor - yarn_mscale(s.factor, 1)) < 1e-12) return true;
  if (s.factor <= 1) return false;
  mscale = (s.attention_factor - 1) / (0.1 * std::log(s.factor));  // mscale(factor, m) = attention_factor
  return std::fabs(yarn_mscale(s.factor, mscale) - s.attention_factor) < 1e-12;
}

// For multi-latent attention Megatron-LM takes no flag for YaRN's original context and betas:
// MLATransformerConfig's 4096, 32 and 1 hold.
bool mla_yarn_expressible(const RopeScaling& s) {
  return s.original_context_tokens == 4096 && s.beta_fast == 32 && s.beta_slow == 1 && s.truncate;
}

bool integral(double v) { return v == std::floor(v) && std::fabs(v) < 9e18; }

// --rotary-base (an integer in Megatron-LM) and the scaling flags Megatron-LM has for the type.
std::vector<std::string> rotary_flags(const ModelSpec& m) {
  const RopeScaling& s = m.rope_scaling;
  const bool mla = m.attention() == AttentionKind::mla;
  std::vector<std::string> f;
  const bool yarn = s.type == "yarn" && !mla;
  f.push_back(yarn ? "--position-embedding-type yarn" : "--position-embedding-type rope");
  if (m.rotary_fraction > 0 && m.rotary_fraction < 1)
    f.push_back(fmt::format("--rotary-percent {}", m.rotary_fraction));
  f.push_back(fmt::format("--rotary-base {}", std::llround(m.rope_theta)));
  if (s.type == "llama3" && !mla && llama3_expressible(s)) {
    f.push_back("--use-rope-scaling");
    f.push_back(fmt::format("--rope-scaling-factor {}", s.factor));
  } else if (s.type == "linear" && !mla && integral(s.factor)) {
    f.push_back(fmt::format("--rotary-seq-len-interpolation-factor {}", std::llround(s.factor)));
  } else if (s.type == "yarn") {
    double mscale = 1, mscale_all_dim = 0;
    const bool scales = yarn_mscales(s, mscale, mscale_all_dim);
    f.push_back(fmt::format("--rotary-scaling-factor {}", s.factor));
    if (yarn && s.original_context_tokens > 0)
      f.push_back(fmt::format("--yarn-original-max-position-embeddings {}", s.original_context_tokens));
    if (yarn) {
      f.push_back(fmt::format("--yarn-beta-fast {}", s.beta_fast));
      f.push_back(fmt::format("--yarn-beta-slow {}", s.beta_slow));
      if (!s.truncate) f.push_back("--no-yarn-correction-range-round-to-int");
    }
    if (scales) {
      f.push_back(fmt::format("--mscale {}", mscale));
      f.push_back(fmt::format("--mscale-all-dim {}", mscale_all_dim));
    }
  }
  return f;
}

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
  f.push_back(fmt::format("--norm-epsilon {}", m.norm_eps));
  const bool linear_bias = m.o_bias || m.mlp_bias;
  if (!linear_bias) f.push_back("--disable-bias-linear");
  if (!linear_bias && m.qkv_bias) f.push_back("--add-qkv-bias");
  if (m.position_embeddings > 0) {
    f.push_back("--position-embedding-type learned_absolute");
  } else if (m.rotary_fraction <= 0) {
    f.push_back("--position-embedding-type none");  // ALiBi: a bias inside attention
  } else {
    for (const auto& r : rotary_flags(m)) f.push_back(r);
  }
  if (m.qk_norm != QkNorm::none) f.push_back("--qk-layernorm");
  if (m.qk_l2_norm) f.push_back("--qk-l2-norm");
  if (m.shared_expert_gate && m.is_moe() && m.n_shared_experts > 0) f.push_back("--moe-shared-expert-gate");
  // Megatron-LM's HeterogeneousTransformerConfig reads each layer's attention and MLP from the
  // config's own block_configs
  if (m.heterogeneous_block_configs) f.push_back("--heterogeneous-layers-config-path " + m.source);
  f.push_back("--bf16");
  return f;
}

std::vector<std::string> megatron_layer_pattern_flags(const ModelSpec& m, int64_t layers) {
  std::vector<std::string> f;
  if (m.sliding_window_tokens > 0 && m.attention() == AttentionKind::gqa) {
    const auto windowed = [&m](int64_t i) { return m.layer_is_windowed(i); };
    if (every_layer(layers, windowed, false)) return f;
    // HF's window of W keys, the query's own included: W - 1 to the left, none to the right
    f.push_back(fmt::format("--window-size {},0", m.sliding_window_tokens - 1));
    if (!every_layer(layers, windowed, true))
      f.push_back("--window-attn-skip-freq " + frequency(layers, windowed, false));
  }
  if (!m.nope_layers.empty() && m.rotary_fraction > 0 && m.position_embeddings == 0) {
    const auto nope = [&m](int64_t i) { return m.layer_is_nope(i); };
    if (!every_layer(layers, nope, false)) f.push_back("--no-rope-freq " + frequency(layers, nope, true));
  }
  return f;
}

std::string megatron_layer_pattern(int64_t layers, const std::function<bool(int64_t)>& one) {
  std::string out;
  int64_t i = 0;
  while (i < layers) {
    const bool bit = one(i);
    int64_t run = 0;
    while (i < layers && one(i) == bit) ++i, ++run;
    out += fmt::format("{}[{}]*{}", out.empty() ? "" : "+", bit ? 1 : 0, run);
  }
  return "'(" + out + ")'";
}

namespace {

// What of the rotary embedding the flags of rotary_flags() leave out, as cannot() lines.
template <typename Cannot>
void rotary_inexpressible(const ModelSpec& m, const Cannot& cannot, std::vector<std::string>& out) {
  const RopeScaling& s = m.rope_scaling;
  const bool mla = m.attention() == AttentionKind::mla;
  if (!integral(m.rope_theta))
    cannot(fmt::format("a rotary base of {} (--rotary-base takes an integer: {})", m.rope_theta,
                       std::llround(m.rope_theta)));
  if (m.rope_local_theta > 0 && m.rope_local_theta != m.rope_theta && m.sliding_window_tokens > 0)
    cannot(fmt::format("a rotary base of its own ({}) on the windowed layers", m.rope_local_theta));
  if (s.llama4_scaling_beta > 0)
    cannot(fmt::format("Llama 4's position-dependent query scaling (llama_4_scaling_beta {})", s.llama4_scaling_beta));
  double mscale = 0, mscale_all_dim = 0;
  if (s.type.empty() || (s.type == "llama3" && !mla && llama3_expressible(s)) ||
      (s.type == "linear" && !mla && integral(s.factor)))
    return;
  if (s.type == "llama3" && !mla)
    return cannot(
        fmt::format("llama3 rope scaling with low_freq_factor {}, high_freq_factor {} and "
                    "original_max_position_embeddings {} (--use-rope-scaling fixes 1, 4 and 8192)",
                    s.low_freq_factor, s.high_freq_factor, s.original_context_tokens));
  if (s.type == "yarn") {
    if (!yarn_mscales(s, mscale, mscale_all_dim))
      cannot(fmt::format("YaRN's attention_factor {} (--mscale gives 0.1 mscale ln(factor) + 1)", s.attention_factor));
    if (mla && !mla_yarn_expressible(s))
      cannot(
          fmt::format("YaRN with original_max_position_embeddings {}, beta_fast {}, beta_slow {}{} under "
                      "multi-latent attention (its flags fix 4096, 32, 1 and a rounded correction range)",
                      s.original_context_tokens, s.beta_fast, s.beta_slow, s.truncate ? "" : ", truncate false"));
    if (!mla && s.original_context_tokens == 0)
      cannot("YaRN without original_max_position_embeddings (Megatron-LM assumes 4096)");
    return;
  }
  if (s.type == "mrope") {
    out.push_back(
        "mrope (multimodal rotary sections) runs as plain rope: the same on text-only positions; Megatron-LM's "
        "--position-embedding-type mrope needs image positions from its multimodal data path");
    return;
  }
  cannot("rope scaling of type " + s.type + (mla ? " under multi-latent attention" : ""));
}

}  // namespace

std::vector<std::string> megatron_inexpressible(const ModelSpec& m) {
  std::vector<std::string> out;
  const auto cannot = [&out](const std::string& what) {
    out.push_back("Megatron-LM has no flag for " + what + ": the flags above build a different layer there");
  };
  if (m.parallel_attn_mlp) cannot("attention and MLP in parallel on one residual");
  if (m.sparse_attention())
    out.push_back(fmt::format(
        "remat prints no flags for DeepSeek sparse attention (Megatron-LM's experimental DSA: "
        "--experimental-attention-variant dsa, --dsa-indexer-n-heads {}, --dsa-indexer-head-dim {}, "
        "--dsa-indexer-topk {}) and does not model it under megatron-local: the flags above build dense MLA",
        m.index_n_heads, m.index_head_dim, m.index_topk));
  if (m.mlp_kind == MlpKind::two_matrix && m.hidden_act != "relu2" && m.hidden_act != "gelu" &&
      !gelu_tanh(m.hidden_act))
    cannot("the MLP activation " + m.hidden_act + " (its two-matrix MLP runs GELU)");
  if (m.mlp_kind == MlpKind::gated && m.hidden_act != "silu") cannot("a gated MLP with " + m.hidden_act);
  if (m.norm_kind == NormKind::layer && !m.norm_bias) cannot("a LayerNorm without bias");
  if (m.norm_kind == NormKind::rms && m.norm_bias) cannot("an RMSNorm with bias");
  if ((m.o_bias || m.mlp_bias || m.mlp_down_bias) && !(m.qkv_bias && m.o_bias && m.mlp_bias))
    cannot("biases on some linear layers only");
  if (m.extra_norms_per_layer > 0) cannot("norms after attention and MLP (sandwich norms)");
  if (m.lm_head_bias) cannot("a bias on the output layer");
  if (!m.norm_affine) cannot("norms without weights");
  if (m.embedding_norm) cannot("a norm on the embeddings");
  if (m.sinusoidal_positions)
    cannot("fixed sinusoidal position embeddings");
  else if (m.position_embeddings == 0 && m.rotary_fraction <= 0 && !m.is_hybrid())
    cannot("ALiBi attention biases");
  if (m.post_layer_norm) cannot("LayerNorms after the residual add (post-LN)");
  if (!m.layer_variants.empty() && !m.heterogeneous_block_configs)
    cannot("key/value heads or MLP widths that differ by layer outside block_configs");
  if (!m.skipped_cross_attention_layers.empty()) cannot("cross-attention layers (Llama 3.2 Vision)");
  if (!m.compressed_layers.empty())
    cannot("DeepSeek-V4's attention (pooled keys, a sparse indexer) and hyper-connections (its GPT model has none)");
  else if (m.is_hybrid() && !m.heterogeneous_block_configs && m.skipped_cross_attention_layers.empty())
    cannot(
        "Mamba-1, Mamba-2, Gated DeltaNet, Kimi Delta Attention, lightning attention or short-convolution "
        "layers (its GPT model has none; Mamba-2 hybrids run in its MambaModel)");
  if (m.attention_output_gate || m.attention_head_gate) cannot("a gate on the attention output");
  if (m.final_logit_softcap > 0) cannot("final logit softcapping");
  if (m.attention_shape_varies())
    cannot(
        "attention layers of two shapes (Gemma 4's full-attention layers with their own head dim, key/value heads "
        "or keys as values; Step 3.5's sliding-window layers with their own head count)");
  if (m.has_narrow_values())
    cannot(fmt::format("value heads of {} beside query and key heads of {}", m.value_head_dim,
                       m.attention_shape_of(true).head_dim));
  if (m.position_embeddings == 0 && m.rotary_fraction > 0) rotary_inexpressible(m, cannot, out);
  if (m.sliding_window_tokens > 0 && m.attention() == AttentionKind::mla)
    cannot(fmt::format("a sliding window ({} tokens) on multi-latent attention", m.sliding_window_tokens));
  if (m.attention_chunk_tokens > 0)
    cannot(fmt::format("chunked attention (attention_chunk_size {}: each query sees its chunk only)",
                       m.attention_chunk_tokens));
  if (m.qk_l2_norm && !m.nope_layers.empty())
    cannot("an L2 norm of q and k on the rotary layers only (--qk-l2-norm puts it on every layer)");
  if (m.nope_attention_temperature) cannot("attention temperature tuning on the layers without rotary");
  return out;
}

}  // namespace remat
