// Kimi Linear (transformers' modeling_kimi_linear.py; the checkpoints' remote code spells the linear
// attention under linear_attn_config): Kimi Delta Attention layers beside MLA layers, DeepSeek-V3's
// experts.
#include <algorithm>
#include <string>
#include <vector>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

// KimiLinearConfig's linear-attention keys, at the top (transformers) or under linear_attn_config
// (the remote code): heads, head dim, the short conv's kernel, and the 1-based lists of full-attention
// and KDA layers.
struct KdaKeys {
  int64_t heads = 32, head_dim = 128, conv_kernel = 4;
  std::vector<int64_t> full_layers, kda_layers;
};

KdaKeys read_kda_keys(HfJsonReader& r) {
  KdaKeys k;
  r.integer("linear_num_heads", k.heads, false);
  r.integer("linear_head_dim", k.head_dim, false);
  r.integer("linear_conv_kernel_dim", k.conv_kernel, false);
  if (!r.object.contains("linear_attn_config") || !r.object["linear_attn_config"].is_object()) return k;
  HfJsonReader nested{r.object["linear_attn_config"], r.file, r.path("linear_attn_config."), r.problems};
  nested.integer("num_heads", k.heads, false);
  nested.integer("head_dim", k.head_dim, false);
  nested.integer("short_conv_kernel_size", k.conv_kernel, false);
  nested.integer_list("full_attn_layers", k.full_layers);
  nested.integer_list("kda_layers", k.kda_layers);
  return k;
}

// Which layers run Kimi Delta Attention: layer_types; else the remote code's 1-based lists (the
// layers full_attn_layers leaves out, else those kda_layers names); else KimiLinearConfig's default
// (attention at layers 4, 8, ...; KDA elsewhere, layer 0 included).
std::vector<bool> kda_layers(HfJsonReader& r, const KdaKeys& k, int64_t layers) {
  if (r.has("layer_types") || (k.full_layers.empty() && k.kda_layers.empty()))
    return read_linear_layer_types(r, layers, [](int64_t i) { return !(i > 0 && i % 4 == 0); });
  const bool by_full = !k.full_layers.empty();
  const std::vector<int64_t>& listed = by_full ? k.full_layers : k.kda_layers;
  std::vector<bool> kda(size_t(layers), by_full);
  for (int64_t one_based : listed) {
    if (one_based < 1 || one_based > layers)
      r.fail(by_full ? "linear_attn_config.full_attn_layers" : "linear_attn_config.kda_layers",
             std::to_string(one_based),
             "must hold layer numbers from 1 to num_hidden_layers = " + std::to_string(layers));
    else
      kda[size_t(one_based - 1)] = !by_full;
  }
  return kda;
}

}  // namespace

// Kimi Linear: MLA without rotary positions on its full-attention layers (MLA's keys and widths;
// the rotary op is still costed on its rope width), Kimi Delta Attention elsewhere (its own q, k and
// v projections, which LoRA adapts as in attention, a short conv over them, low-rank forget and
// output gates, a per-head norm, o_proj), and DeepSeek-V3's experts: num_local_experts of
// moe_intermediate_size, n_shared_experts of them shared, dense layers by mlp_layer_types else the
// first first_k_dense_replace (default 1).
void kimi_linear_layer(HfJsonReader& r, ModelSpec& m) {
  if (!r.has("kv_lora_rank")) {  // KimiLinearConfig's MLA: no query latent, kv latent 512, nope 128, rope 64, v 128
    m.kv_lora_rank = 512, m.qk_nope_head_dim = 128, m.qk_rope_head_dim = 64, m.v_head_dim = 128, m.head_dim = 0;
    m.notes.push_back(r.path("kv_lora_rank") +
                      " is absent: transformers' default MLA for kimi_linear (kv_lora_rank "
                      "512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128)");
  }
  const KdaKeys k = read_kda_keys(r);
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"linear_num_heads", k.heads},
                                   {"linear_head_dim", k.head_dim},
                                   {"linear_conv_kernel_dim", k.conv_kernel}})
    if (value < 1) r.fail(key, std::to_string(value), "must be a positive integer");
  m.kimi_delta_attention = m.linear_attention_own_projections = true;
  m.linear_num_key_heads = m.linear_num_value_heads = k.heads;
  m.linear_key_head_dim = m.linear_value_head_dim = k.head_dim;
  m.linear_conv_kernel = k.conv_kernel;
  m.router_fp32_input = true;
  m.n_routed_experts = 256, m.moe_intermediate_size = 1024, m.num_experts_per_tok = 8, m.n_shared_experts = 1;
  r.integer("num_local_experts", m.n_routed_experts, false);
  r.integer("moe_intermediate_size", m.moe_intermediate_size, false);
  r.integer("num_experts_per_tok", m.num_experts_per_tok, false);
  r.integer("n_shared_experts", m.n_shared_experts, false);
  if (m.n_routed_experts < 1)
    r.fail("num_local_experts", std::to_string(m.n_routed_experts), "must be at least 1: a mixture-of-experts family");
  int64_t first_dense = 1;
  r.integer("first_k_dense_replace", first_dense, false);
  read_mlp_layer_types(r, m, first_dense);
  const int64_t layers = std::min(m.num_hidden_layers, limits::kLayers);
  for (bool kda : kda_layers(r, k, layers)) m.layer_mixers.push_back(kda ? Mixer::gated_deltanet : Mixer::attention);
}

}  // namespace remat
