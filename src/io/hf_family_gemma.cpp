// The Gemma families' layers: Gemma 1-3 (transformers' models/gemma*/modeling_gemma*.py), and Gemma
// 4's language model (Gemma4TextConfig and Gemma4TextDecoderLayer, models/gemma4/, read at 5.17):
// Gemma 3's layer plus what its full-attention, KV-shared and MoE layers do differently.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

// Gemma: GemmaRMSNorm scales the fp32 normalized tensor by (1 + weight) before casting back.
void gemma_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  m.norm_scale_fp32 = true;
}

// Gemma 2: pre- and post-norms around attention and MLP (four per layer); its eager attention caps
// the scores by attn_logit_softcapping (Gemma2Config's 50; Gemma 3's none).
void gemma2_layer(HfJsonReader& r, ModelSpec& m) {
  gemma_layer(r, m);
  m.extra_norms_per_layer = 2;
  r.number("attn_logit_softcapping", m.attention_logit_softcap);
}

// VaultGemma: Gemma 2's attention (its score cap) without the post-attention and post-MLP norms;
// Gemma's norms.
void vaultgemma_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  m.norm_scale_fp32 = true;
  r.number("attn_logit_softcapping", m.attention_logit_softcap);
}

void gemma3_layer(HfJsonReader& r, ModelSpec& m) {
  gemma2_layer(r, m);
  m.qk_norm = QkNorm::shared;
}

// Muse-Glimmer's language model (MuseGlimmerTextDecoderLayer, models/muse_glimmer/, read at 5.17):
// Gemma's fp32 (1 + weight) norms before and after attention and MLP; a weightless RMSNorm on q and
// k over head_dim (q then scaled by qk_scale_factor); a sigmoid output gate, gate_proj of hidden to
// heads x head_dim, as AFMoE's; no rotary where layer_rope_theta is 0; a weightless norm on the
// embeddings; the logits times output_multiplier before the final softcap.
void muse_glimmer_text_layer(HfJsonReader& r, ModelSpec& m) {
  gemma2_layer(r, m);
  m.qk_norm = QkNorm::shared;
  m.qk_norm_weightless = true;
  m.attention_output_gate = m.attention_gate_proj = true;
  m.embedding_norm = m.embedding_norm_weightless = true;
  m.logits_multiplied = r.has("output_multiplier");
  const auto& thetas = r.object["layer_rope_theta"];
  if (thetas.is_array()) {
    for (const auto& theta : thetas) {
      if (!theta.is_number()) return r.fail("layer_rope_theta", theta.dump(), "must be a list of numbers");
      m.nope_layers.push_back(theta.get<double>() == 0);
    }
    r.mark_read("layer_rope_theta");
  }
  drop_nope_layers_if_none(m);
  for (const char* scalar : {"qk_scale_factor", "post_norm_eps", "output_multiplier"}) r.mark_read(scalar);
}

namespace {}  // namespace

// Gemma4TextConfig.__post_init__: without layer_types every 6th layer is full attention, and the
// last layer is full attention whatever layer_types says.
std::vector<bool> gemma4_windowed_layers(HfJsonReader& r, int64_t layers) {
  std::vector<bool> windowed;
  const std::vector<std::string> types = r.text_list("layer_types");
  const int64_t n = std::min(layers, limits::kLayers);
  for (int64_t i = 0; i < n; ++i)
    windowed.push_back(types.empty() ? (i + 1) % 6 != 0
                                     : size_t(i) < types.size() && types[size_t(i)] == "sliding_attention");
  if (!windowed.empty()) windowed.back() = false;
  return windowed;
}

namespace {

// transformers 5.17 saves the full-attention shape as per_layer_config {"05": {"head_dim": 512,
// "num_key_value_heads": 4}, ...}; remat builds one shape for every full-attention layer and one
// for the sliding ones, so each entry must be a full-attention layer and all entries alike.
void read_per_layer_config(HfJsonReader& r, ModelSpec& m, const std::vector<bool>& windowed) {
  const auto& entries = r.object["per_layer_config"];
  if (!entries.is_object()) return r.fail("per_layer_config", entries.dump(), "must be an object of layer overrides");
  int64_t head_dim = -1, kv_heads = -1;
  std::set<int64_t> overridden;
  for (const auto& [key, overrides] : entries.items()) {
    int64_t layer = -1;
    try {
      layer = std::stoll(key);
    } catch (...) {
    }
    const std::string where = "per_layer_config." + key;
    if (layer < 0 || layer >= int64_t(windowed.size()))
      return r.fail("per_layer_config", key, "must name layers 0 to num_hidden_layers - 1");
    if (windowed[size_t(layer)] || !overrides.is_object())
      return r.fail("per_layer_config", key,
                    "is not a model remat can build: overrides on a sliding-window layer; remat builds one shape "
                    "for the sliding layers and one for the full-attention layers");
    HfJsonReader o{overrides, r.file, r.path("per_layer_config.") + key + ".", r.problems};
    int64_t hd = m.head_dim, kv = m.num_key_value_heads;
    o.integer("head_dim", hd, false);
    o.integer("num_key_value_heads", kv, false);
    for (const auto& [name, value] : overrides.items())
      if (name != "head_dim" && name != "num_key_value_heads")
        return r.fail("per_layer_config", where + "." + name, "is not a layer override remat can build");
    if ((head_dim >= 0 && hd != head_dim) || (kv_heads >= 0 && kv != kv_heads))
      return r.fail("per_layer_config", key,
                    "is not a model remat can build: full-attention layers of different shapes; remat builds one");
    head_dim = hd, kv_heads = kv;
    overridden.insert(layer);
  }
  for (size_t i = 0; i < windowed.size(); ++i)
    if (!windowed[i] && head_dim >= 0 && !overridden.count(int64_t(i)))
      return r.fail("per_layer_config", "",
                    "is not a model remat can build: full-attention layer " + std::to_string(i) +
                        " without the others' override; remat builds one shape for them");
  if (head_dim > 0 && head_dim != m.head_dim) m.full_attention_head_dim = head_dim;
  if (kv_heads > 0 && kv_heads != m.num_key_value_heads) m.full_attention_kv_heads = kv_heads;
}

// enable_moe_block: each layer's dense MLP runs beside num_experts gated experts of
// moe_intermediate_size (top_k_experts of them a token), their outputs normed and summed
// (post_feedforward_layernorm_1 and _2, pre_feedforward_layernorm_2). The dense MLP counts as
// intermediate_size / moe_intermediate_size shared experts; the router (Gemma4TextRouter) has a
// weightless norm, a scale of the hidden width and one per expert beside its projection.
void read_gemma4_experts(HfJsonReader& r, ModelSpec& m) {
  bool moe = false;
  r.boolean("enable_moe_block", moe);
  if (!moe) {
    for (const char* key : {"num_experts", "top_k_experts", "moe_intermediate_size"})
      if (r.has(key)) m.notes.push_back(r.path(key) + " is set but enable_moe_block is false: no experts built");
    return;
  }
  r.integer("num_experts", m.n_routed_experts, true);
  r.integer("top_k_experts", m.num_experts_per_tok, true);
  r.integer("moe_intermediate_size", m.moe_intermediate_size, true);
  if (m.n_routed_experts < 1 || m.num_experts_per_tok < 1 || m.moe_intermediate_size < 1) return;
  shared_mlp_as_experts(r, "intermediate_size", m.intermediate_size, m.moe_intermediate_size, "moe_intermediate_size",
                        m);
  m.router_scales = true;
  m.extra_norms_per_layer += 3;
}

}  // namespace

namespace {

// Per-layer input embeddings (hidden_size_per_layer_input, default `per_layer_input`), layers reusing
// an earlier layer's keys and values (num_kv_shared_layers) with a double-wide MLP
// (use_double_wide_mlp); bidirectional attention over every token is refused.
void gemma4_common(HfJsonReader& r, ModelSpec& m, int64_t per_layer_input) {
  r.integer("hidden_size_per_layer_input", per_layer_input, false);
  if (per_layer_input < 0)
    r.fail("hidden_size_per_layer_input", std::to_string(per_layer_input), "must be 0 (none) or more");
  if (per_layer_input > 0) {
    m.per_layer_input_width = per_layer_input;
    m.per_layer_input_vocab = 262144;  // Gemma4TextConfig's default
    if (r.has("vocab_size_per_layer_input"))
      r.integer("vocab_size_per_layer_input", m.per_layer_input_vocab, true);
    else
      m.notes.push_back(r.path("vocab_size_per_layer_input") + " is absent: transformers' default, 262144");
    if (m.per_layer_input_vocab < 1)
      r.fail("vocab_size_per_layer_input", std::to_string(m.per_layer_input_vocab), "must be a positive integer");
  }
  r.integer("num_kv_shared_layers", m.kv_shared_layers, false);
  if (m.kv_shared_layers < 0) r.fail("num_kv_shared_layers", std::to_string(m.kv_shared_layers), "must be 0 or more");
  r.boolean("use_double_wide_mlp", m.kv_shared_wide_mlp);
  if (r.text("use_bidirectional_attention") == "all")
    r.fail("use_bidirectional_attention", "all",
           "is not a model remat can build: bidirectional attention over every token; remat plans causal decoders");
  gemma3_layer(r, m);  // Gemma4RMSNorm too multiplies the fp32 normalized tensor by its weight
  m.value_norm = true;
  m.stores_last_kv_per_kind = true;
  m.sliding_window_tokens = 512;  // Gemma4TextConfig's default; read_windowed_attention reads the file's
  m.windowed_layers = gemma4_windowed_layers(r, m.num_hidden_layers);
  m.last_layer_full_attention = true;
  bool keys_as_values = false;
  r.boolean("attention_k_eq_v", keys_as_values);
  m.full_attention_values_from_keys = keys_as_values;
  if (r.has("per_layer_config")) {
    read_per_layer_config(r, m, m.windowed_layers);
  } else {
    int64_t global_head_dim = 512, global_kv_heads = 0;
    r.integer("global_head_dim", global_head_dim, false);
    // the override applies only under attention_k_eq_v (Gemma4TextConfig.__post_init__)
    if (keys_as_values) r.integer("num_global_key_value_heads", global_kv_heads, false);
    if (global_head_dim != m.head_dim) m.full_attention_head_dim = global_head_dim;
    if (global_kv_heads > 0 && global_kv_heads != m.num_key_value_heads) m.full_attention_kv_heads = global_kv_heads;
  }
  read_gemma4_experts(r, m);
}

}  // namespace

// Gemma4TextConfig: per-layer input embeddings of 256 unless a config sets 0 (as Gemma 4 31B does).
void gemma4_layer(HfJsonReader& r, ModelSpec& m) { gemma4_common(r, m, 256); }

// Gemma4UnifiedTextConfig (transformers 5.17): Gemma 4's layer without per-layer input embeddings
// by default (the count of its defaults equals Gemma4TextConfig's with hidden_size_per_layer_input 0).
void gemma4_unified_layer(HfJsonReader& r, ModelSpec& m) { gemma4_common(r, m, 0); }

}  // namespace remat
