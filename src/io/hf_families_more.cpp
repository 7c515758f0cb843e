// Layer readers of more Hugging Face families (the table is hf_families.cpp): LLaMA-like
// dense models with their own biases and norms, the Granite variants with shared experts,
// windows and NoPE layers, the multi-head latent attention families, and MoE families whose
// experts are spelled or placed their own way. Each follows the family's transformers code.
#include <algorithm>
#include <string>
#include <vector>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

void drop_nope_layers_if_none(ModelSpec& m) {
  if (std::find(m.nope_layers.begin(), m.nope_layers.end(), true) == m.nope_layers.end()) m.nope_layers.clear();
}

// `field` from `key`, or where the config leaves it out the config class's default (said in a note).
void integer_or_default(HfJsonReader& r, ModelSpec& m, const char* key, int64_t& field, int64_t fallback) {
  field = fallback;
  if (!r.has(key))
    m.notes.push_back(r.path(key) + " is absent: transformers' default for " + r.text("model_type") + ", " +
                      std::to_string(fallback));
  r.integer(key, field, false);
}

// The routed experts a family's own reader sets: at least one.
void require_experts(HfJsonReader& r, const ModelSpec& m, const char* key) {
  if (m.n_routed_experts < 1)
    r.fail(key, std::to_string(m.n_routed_experts), "must be at least 1: a mixture-of-experts family");
}

// Routed experts under `key`, moe_intermediate_size and num_experts_per_tok, each with its config
// class's default where the config leaves it out.
void read_routed_experts(HfJsonReader& r, ModelSpec& m, const char* key, int64_t experts, int64_t width,
                         int64_t top_k) {
  integer_or_default(r, m, key, m.n_routed_experts, experts);
  require_experts(r, m, key);
  integer_or_default(r, m, "moe_intermediate_size", m.moe_intermediate_size, width);
  integer_or_default(r, m, "num_experts_per_tok", m.num_experts_per_tok, top_k);
}

namespace {

// An integer, or a list of one per layer (Hunyuan's num_experts, moe_topk) read where every layer
// has the same value.
void per_layer_integer(HfJsonReader& r, const char* key, int64_t& out, bool required) {
  if (!r.has(key) || !r.object[r.spelled(key)].is_array()) return r.integer(key, out, required);
  std::vector<int64_t> values;
  r.integer_list(key, values);
  if (values.empty()) return r.fail(key, "[]", "must be an integer or a list of one per layer");
  if (std::adjacent_find(values.begin(), values.end(), std::not_equal_to<>()) != values.end())
    return r.fail(key, r.object[r.spelled(key)].dump(),
                  "is not a model remat can build: a different value per layer; remat builds one layer shape");
  out = values.front();
}

// Granite's shared MLP beside the experts (shared_intermediate_size, 0: none), counted as that many
// intermediate_size-wide shared experts.
void granite_shared_mlp(HfJsonReader& r, ModelSpec& m) {
  int64_t shared = 0;
  r.integer("shared_intermediate_size", shared, false);
  if (shared < 0) return r.fail("shared_intermediate_size", std::to_string(shared), "must be 0 or more");
  if (shared > 0)
    shared_mlp_as_experts(r, "shared_intermediate_size", shared, m.intermediate_size, "the experts' intermediate_size",
                          m);
}

// Granite SWA's layer_rope_theta: a rotary base per layer, 0 for a layer without rotary (NoPE).
void read_layer_rope_theta(HfJsonReader& r, ModelSpec& m) {
  if (!r.has("layer_rope_theta")) return;
  const nlohmann::json& list = r.object["layer_rope_theta"];
  if (!list.is_array() || int64_t(list.size()) != m.num_hidden_layers)
    return r.fail(
        "layer_rope_theta", list.dump(),
        "must be a list of one number per layer (num_hidden_layers = " + std::to_string(m.num_hidden_layers) + ")");
  for (size_t i = 0; i < list.size() && int64_t(i) < limits::kLayers; ++i) {
    if (!list[i].is_number()) return r.fail("layer_rope_theta", list[i].dump(), "must hold only numbers");
    m.nope_layers.push_back(list[i].get<double>() == 0);
  }
  drop_nope_layers_if_none(m);
}

}  // namespace

void shared_mlp_as_experts(HfJsonReader& r, const char* key, int64_t shared, int64_t width,
                           const std::string& width_name, ModelSpec& m) {
  if (width < 1) return r.fail(key, std::to_string(shared), "needs " + width_name + " to be positive");
  if (shared % width == 0) {
    m.n_shared_experts = shared / width;
  } else {  // one shared expert of its own width
    m.n_shared_experts = 1;
    m.shared_expert_intermediate_size = shared;
  }
}

// Helium: GraniteAttention's attention_bias on q, k and v (its o_proj has none); LLaMA's MLP.
// HeliumRMSNorm multiplies its weight in fp32 before the cast back (modular_helium.py).
void helium_layer(HfJsonReader& r, ModelSpec& m) {
  r.boolean("attention_bias", m.qkv_bias);
  r.boolean("mlp_bias", m.mlp_bias);
  m.norm_scale_fp32 = true;
}

// CWM: Qwen2Attention with no bias on q, k, v or o (no attention_bias key); LLaMA's MLP and mlp_bias.
void cwm_layer(HfJsonReader& r, ModelSpec& m) { r.boolean("mlp_bias", m.mlp_bias); }

// Jais 2: LLaMA's attention with attention_bias (default true) on q, k, v and o; LayerNorms with
// bias; Nemotron's two-matrix relu^2 MLP with mlp_bias (default true).
void jais2_layer(HfJsonReader& r, ModelSpec& m) {
  bool bias = true;
  r.boolean("attention_bias", bias);
  m.qkv_bias = m.o_bias = bias;
  m.mlp_bias = true;
  r.boolean("mlp_bias", m.mlp_bias);
  m.norm_kind = NormKind::layer;
  m.norm_bias = true;
  two_matrix_mlp(m, "relu2");
  read_activation(r, m, "hidden_act");
}

// HyperCLOVA X: Granite's layer; use_post_norm (default true) adds norms after attention and MLP.
void hyperclovax_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  bool post = true;
  r.boolean("use_post_norm", post);
  if (post) m.extra_norms_per_layer = 2;
}

// Granite SWA: LLaMA's layer with a learned attention sink per head (not counted) and a rotary
// base per layer (layer_rope_theta; 0: no rotary).
void granite_swa_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  m.eager_attention_only = true;  // GraniteSWA(Moe)ForCausalLM: _supports_sdpa False (transformers 5.17)
  read_layer_rope_theta(r, m);
}

// GraniteMoeShared: GraniteMoE (every layer MoE, experts of intermediate_size) plus a shared MLP.
void granitemoeshared_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  granite_shared_mlp(r, m);
}

// GraniteMoE SWA: GraniteMoeShared's layer with Granite SWA's attention (sinks, layer_rope_theta).
void granitemoe_swa_layer(HfJsonReader& r, ModelSpec& m) {
  granite_swa_layer(r, m);
  granite_shared_mlp(r, m);
}

// NanoChat: RMSNorms without weights (also on q and k after rotary, and on the embeddings before the
// first layer); attention_bias on q, k, v and o; a two-matrix relu^2 MLP (fc1, fc2).
void nanochat_layer(HfJsonReader& r, ModelSpec& m) {
  bool bias = false;
  r.boolean("attention_bias", bias);
  m.qkv_bias = m.o_bias = bias;
  m.norm_affine = false;
  m.embedding_norm = true;
  m.qk_norm = QkNorm::shared;
  two_matrix_mlp(m, "relu2");
  read_activation(r, m, "hidden_act");
}

// MiniCPM3: v_head_dim defaults to hidden_size / num_attention_heads (MiniCPM3Config).
void minicpm3_spell(HfJsonReader& r, ModelSpec& m) {
  if (r.has("v_head_dim")) return;
  int64_t hidden = 2560, heads = 40;
  r.integer("hidden_size", hidden, false);
  r.integer("num_attention_heads", heads, false);
  if (heads > 0) m.v_head_dim = hidden / heads;
}

// MiniCPM3, Youtu, Mistral 4: DeepSeek's multi-head latent attention (kv_lora_rank required);
// attention_bias would add biases to its projections, which remat's latent attention does not have.
void mla_layer(HfJsonReader& r, ModelSpec& m) {
  if (m.kv_lora_rank < 1) r.fail("kv_lora_rank", "", "required key is missing (multi-head latent attention)");
  bool bias = false;
  r.boolean("attention_bias", bias);
  if (bias)
    r.fail("attention_bias", "true",
           "is not a model remat can build: biases on multi-head latent attention's projections");
}

namespace {

// DeepSeek sparse attention's indexer on DeepSeek-V3's layer (DeepseekV32Config, GlmMoeDsaConfig):
// index_n_heads (the config class's default `heads`), index_head_dim 128 and index_topk 2048 where
// absent. Its wq_b reads the query latent, so q_lora_rank must be set.
void read_dsa_indexer(HfJsonReader& r, ModelSpec& m, int64_t heads) {
  mla_layer(r, m);
  if (m.q_lora_rank < 1)
    r.fail("q_lora_rank", "", "must be set: DeepSeek sparse attention's indexer projects the query latent");
  m.index_n_heads = heads, m.index_head_dim = 128, m.index_topk = 2048;
  r.integer("index_n_heads", m.index_n_heads, false);
  r.integer("index_head_dim", m.index_head_dim, false);
  r.integer("index_topk", m.index_topk, false);
  if (m.index_n_heads < 1) r.fail("index_n_heads", std::to_string(m.index_n_heads), "must be a positive integer");
  if (m.index_head_dim < 1 || m.index_head_dim < m.qk_rope_head_dim)
    r.fail("index_head_dim", std::to_string(m.index_head_dim),
           "must be a positive integer of at least qk_rope_head_dim (the indexer rotates that many dims)");
  if (m.index_topk < 1) r.fail("index_topk", std::to_string(m.index_topk), "must be a positive integer");
}

// GLM-5's per-layer indexer modes (GlmMoeDsaConfig.__post_init__): indexer_types ("full" runs an
// indexer, "shared" reuses the previous layer's keys); else index_topk_pattern ("F"/"S" per layer);
// else "full" where max(i - index_skip_topk_offset + 1, 0) % index_topk_freq == 0 (1 and 2 by default).
std::vector<bool> glm_shared_indexer_layers(HfJsonReader& r, int64_t layers) {
  std::vector<std::string> kinds = r.text_list("indexer_types");
  const char* key = "indexer_types";
  if (kinds.empty() && r.has("index_topk_pattern")) {
    key = "index_topk_pattern";
    const auto& pattern = r.object[r.spelled(key)];
    if (pattern.is_string())
      for (char c : pattern.get<std::string>()) kinds.push_back(c == 'F' ? "full" : c == 'S' ? "shared" : "?");
    else
      kinds = r.text_list(key);
  }
  std::vector<bool> shared;
  if (kinds.empty()) {
    int64_t freq = 1, offset = 2;
    r.integer("index_topk_freq", freq, false);
    r.integer("index_skip_topk_offset", offset, false);
    freq = std::max<int64_t>(freq, 1);
    for (int64_t i = 0; i < std::min(layers, limits::kLayers); ++i)
      shared.push_back(std::max<int64_t>(i - offset + 1, 0) % freq != 0);
    return shared;
  }
  if (int64_t(kinds.size()) != layers)
    r.fail(key, std::to_string(kinds.size()) + " entries",
           "must name each of num_hidden_layers = " + std::to_string(layers) + " layers");
  for (const auto& kind : kinds) {
    if (kind != "full" && kind != "shared") r.fail(key, kind, "must hold only full and shared (F and S)");
    shared.push_back(kind == "shared");
  }
  if (!shared.empty() && shared.front()) r.fail(key, "shared", "its first layer has no earlier indexer to share");
  return shared;
}

}  // namespace

// DeepSeek-V2/V3's routers (DeepseekV2Moe, DeepseekV3TopkRouter) cast their input to fp32.
void fp32_router_layer(HfJsonReader&, ModelSpec& m) { m.router_fp32_input = true; }

void deepseek_v32_layer(HfJsonReader& r, ModelSpec& m) {
  read_dsa_indexer(r, m, 64);
  m.router_fp32_input = true;
}

void glm_moe_dsa_layer(HfJsonReader& r, ModelSpec& m) {
  read_dsa_indexer(r, m, 32);
  m.router_fp32_input = true;
  m.indexer_shared_layers = glm_shared_indexer_layers(r, m.num_hidden_layers);
  const auto shared = std::count(m.indexer_shared_layers.begin(), m.indexer_shared_layers.end(), true);
  if (shared > 0)
    m.notes.push_back(r.path("indexer_types") + ": " + std::to_string(shared) + " of " +
                      std::to_string(m.num_hidden_layers) +
                      " layers reuse an earlier layer's top-k (no indexer weights, counted exactly); their "
                      "activations and time are costed with an indexer of their own, an overestimate");
}

// Solar Open: LLaMA's attention with attention_bias on q, k and v (o_proj has none); GLM-4.5's MoE
// in every layer (first_k_dense_replace is not read): n_routed_experts of moe_intermediate_size and
// n_shared_experts (default 1) of it.
void solar_open_layer(HfJsonReader& r, ModelSpec& m) {
  r.boolean("attention_bias", m.qkv_bias);
  r.number("partial_rotary_factor", m.rotary_fraction);
  r.integer("n_routed_experts", m.n_routed_experts, true);
  require_experts(r, m, "n_routed_experts");
  r.integer("moe_intermediate_size", m.moe_intermediate_size, true);
  r.integer("num_experts_per_tok", m.num_experts_per_tok, true);
  integer_or_default(r, m, "n_shared_experts", m.n_shared_experts, 1);
}

// EXAONE MoE: EXAONE 4's attention (q/k norms of head_dim, no biases); DeepSeek-V3's MoE with
// num_experts, num_shared_experts (default 1) and mlp_layer_types (default: the first
// first_k_dense_replace = 1 layers dense).
void exaone_moe_layer(HfJsonReader& r, ModelSpec& m) {
  m.qk_norm = QkNorm::shared;
  m.router_fp32_input = true;  // ExaoneMoeTopkRouter keeps DeepseekV3TopkRouter's forward
  integer_or_default(r, m, "num_shared_experts", m.n_shared_experts, 1);
  integer_or_default(r, m, "first_k_dense_replace", m.first_k_dense_replace, 1);
}

// AFMoE: attention with q/k norms of head_dim and a sigmoid output gate (gate_proj, heads x head_dim),
// rotary on the sliding-window layers only; norms before and after attention and MLP; DeepSeek-style
// MoE after num_dense_layers (default 1) dense layers, num_shared_experts (default 2).
void afmoe_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  m.norm_scale_fp32 = true;  // AfmoeRMSNorm: the weight multiplied in fp32 before the cast back
  m.qk_norm = QkNorm::shared;
  m.attention_output_gate = m.attention_gate_proj = true;
  m.extra_norms_per_layer = 2;
  integer_or_default(r, m, "num_shared_experts", m.n_shared_experts, 2);
  integer_or_default(r, m, "num_dense_layers", m.first_k_dense_replace, 1);
  std::vector<std::string> types = r.text_list("layer_types");
  int64_t every = 4;
  r.integer("global_attn_every_n_layers", every, false);
  for (int64_t i = 0; i < std::min(m.num_hidden_layers, limits::kLayers); ++i)
    m.nope_layers.push_back(types.empty() ? every > 0 && (i + 1) % every == 0
                                          : size_t(i) < types.size() && types[size_t(i)] == "full_attention");
  drop_nope_layers_if_none(m);
}

// HY-V3: q/k norms of head_dim, attention_bias on q, k, v and o; DeepSeek-style MoE with
// num_experts, num_shared_experts (default 1) and mlp_layer_types (default: the first layer dense).
void hy_v3_layer(HfJsonReader& r, ModelSpec& m) {
  qwen3_layer(r, m);
  integer_or_default(r, m, "num_shared_experts", m.n_shared_experts, 1);
  m.first_k_dense_replace = 1;
}

// Hunyuan MoE (v1): q/k norms of head_dim; in every layer num_experts routed experts of
// intermediate_size (moe_topk per token) and one shared MLP of intermediate_size. num_experts and
// moe_topk may be lists of one per layer. The remote code's configs (model_type hunyuan, Hunyuan-A13B's
// first release: Tencent-Hunyuan/Hunyuan-A13B models/modeling_hunyuan.py) build the shared MLP only
// under use_mixed_mlp_moe, intermediate_size x num_shared_expert[0] wide.
void hunyuan_moe_layer(HfJsonReader& r, ModelSpec& m) {
  qwen3_layer(r, m);
  read_hunyuan_remote_keys(r, m);
  m.n_routed_experts = m.num_experts_per_tok = 1;  // HunYuanMoEV1Config's defaults
  per_layer_integer(r, "num_experts", m.n_routed_experts, false);
  per_layer_integer(r, "num_experts_per_tok", m.num_experts_per_tok, false);
  require_experts(r, m, "num_experts");
  m.moe_intermediate_size = m.intermediate_size;
  bool shared_mlp = true;
  r.boolean("use_mixed_mlp_moe", shared_mlp);
  int64_t shared_count = 1;  // HunYuanMLP(is_shared_mlp=True): intermediate_size x num_shared_expert[0]
  if (r.has("num_shared_expert") && r.object[r.spelled("num_shared_expert")].is_array()) {
    std::vector<int64_t> counts;
    r.integer_list("num_shared_expert", counts);
    if (!counts.empty()) shared_count = counts.front();
  } else {
    r.integer("num_shared_expert", shared_count, false);
  }
  m.n_shared_experts = 0;
  if (shared_mlp && shared_count > 0) m.set_shared_mlp_width(shared_count * m.intermediate_size);
}

// Cohere2 MoE: Cohere 2's parallel layer (RMSNorms where rms_norm_eps is set, else LayerNorms
// without bias); num_experts of intermediate_size and num_shared_experts (default 0) of it; dense
// layers by mlp_layer_types (else the first first_k_dense_replace) of prefix_dense_intermediate_size
// (else intermediate_size).
void cohere2_moe_layer(HfJsonReader& r, ModelSpec& m) {
  cohere_layer(r, m);
  if (r.has("rms_norm_eps")) m.norm_kind = NormKind::rms;
  r.integer("num_experts", m.n_routed_experts, true);
  require_experts(r, m, "num_experts");
  r.integer("num_experts_per_tok", m.num_experts_per_tok, true);
  r.integer("num_shared_experts", m.n_shared_experts, false);
  m.moe_intermediate_size = m.intermediate_size;
  int64_t first_dense = 0;
  r.integer("first_k_dense_replace", first_dense, false);
  read_mlp_layer_types(r, m, first_dense);
  if (!m.dense_mlp_layers.empty()) r.integer("prefix_dense_intermediate_size", m.intermediate_size, false);
}

namespace {

// MiMo-V2-Flash's Hub config (its remote code) lists the MoE layers as moe_layer_freq, 1 for MoE
// and 0 for dense, where transformers writes mlp_layer_types.
void read_moe_layer_list(HfJsonReader& r, ModelSpec& m) {
  std::vector<int64_t> flags;
  r.integer_list("moe_layer_freq", flags);
  if (int64_t(flags.size()) != m.num_hidden_layers)
    return r.fail("moe_layer_freq", r.object[r.spelled("moe_layer_freq")].dump(),
                  "must hold one 0 (dense) or 1 (MoE) per layer (num_hidden_layers = " +
                      std::to_string(m.num_hidden_layers) + ")");
  std::vector<int64_t> dense;
  for (size_t i = 0; i < flags.size() && int64_t(i) < limits::kLayers; ++i) {
    if (flags[i] != 0 && flags[i] != 1)
      return r.fail("moe_layer_freq", std::to_string(flags[i]), "must hold only 0 (dense) and 1 (MoE)");
    if (flags[i] == 0) dense.push_back(int64_t(i));
  }
  set_dense_layers(m, dense);
}

// A key of the sliding-window layers (the Hub config's swa_ spelling) that must equal the model's.
void require_same_in_windowed_layers(HfJsonReader& r, const char* key, int64_t model_value, const char* what) {
  int64_t value = model_value;
  r.integer(key, value, false);
  if (value != model_value)
    r.fail(key, std::to_string(value),
           std::string("is not a model remat can build: sliding-window layers with their own ") + what + " (" +
               std::to_string(model_value) + " in the full-attention layers); remat builds one per model");
}

}  // namespace

// MiMo-V2-Flash (transformers' modeling_mimo_v2_flash.py): q and k heads of head_dim, value heads
// of v_head_dim (128) in every layer; its sliding-window layers have twice num_key_value_heads (the
// Hub config's swa_num_key_value_heads) and, where add_swa_attention_sink_bias (add_full_... for
// the others) says so, a learned sink logit per head; values scaled by attention_value_scale (no
// parameter). DeepSeek-V3's router, its input
// cast to fp32, over n_routed_experts without shared experts (MiMoV2FlashMoE builds none); dense
// layers by mlp_layer_types or the Hub's moe_layer_freq list, else the first layer alone.
void mimo_v2_flash_layer(HfJsonReader& r, ModelSpec& m) {
  r.boolean("attention_bias", m.qkv_bias);  // o_proj has none
  r.boolean("add_swa_attention_sink_bias", m.windowed_layer_sinks);
  r.boolean("add_full_attention_sink_bias", m.full_layer_sinks);
  m.rotary_fraction = 0.334;
  r.number("partial_rotary_factor", m.rotary_fraction);
  const int64_t full_kv_heads = m.num_key_value_heads, full_head_dim = m.head_dim;
  int64_t windowed_kv_heads = 2 * full_kv_heads, windowed_head_dim = full_head_dim;
  r.integer("swa_num_key_value_heads", windowed_kv_heads, false);
  r.integer("swa_head_dim", windowed_head_dim, false);
  require_same_in_windowed_layers(r, "swa_num_attention_heads", m.num_attention_heads, "number of query heads");
  int64_t value_dim = 128;
  r.integer("v_head_dim", value_dim, false);
  require_same_in_windowed_layers(r, "swa_v_head_dim", value_dim, "value head width");
  m.num_key_value_heads = windowed_kv_heads;
  if (windowed_kv_heads != full_kv_heads) m.full_attention_kv_heads = full_kv_heads;
  m.head_dim = windowed_head_dim;
  if (windowed_head_dim != full_head_dim) m.full_attention_head_dim = full_head_dim;
  if (value_dim != windowed_head_dim || value_dim != full_head_dim) m.value_head_dim = value_dim;

  read_routed_experts(r, m, "n_routed_experts", 256, 2048, 8);
  int64_t shared = 0;
  r.integer("n_shared_experts", shared, false);
  if (shared > 0)
    r.fail("n_shared_experts", std::to_string(shared),
           "is not a model remat can build as transformers does: MiMoV2FlashMoE builds no shared experts");
  m.router_fp32_input = true;
  m.eager_softmax_bf16 = m.eager_softmax_subtracts_max = true;
  m.eager_attention_only = true;
  if (!r.has("mlp_layer_types") && r.has("moe_layer_freq")) return read_moe_layer_list(r, m);
  read_mlp_layer_types(r, m, 1);
}

// Where layer_types is absent: the Hub config's hybrid_layer_pattern (1 for a sliding-window layer),
// else MiMoV2FlashConfig's own: layer 0 and every 6th full, the others sliding.
std::vector<bool> mimo_v2_flash_windowed_layers(HfJsonReader& r, int64_t layers) {
  std::vector<bool> out;
  if (r.has("hybrid_layer_pattern")) {
    std::vector<int64_t> pattern;
    r.integer_list("hybrid_layer_pattern", pattern);
    if (int64_t(pattern.size()) != layers)
      r.fail("hybrid_layer_pattern", r.object[r.spelled("hybrid_layer_pattern")].dump(),
             "must hold one 0 (full attention) or 1 (sliding window) per layer (num_hidden_layers = " +
                 std::to_string(layers) + ")");
    for (int64_t flag : pattern) {
      if (flag != 0 && flag != 1)
        r.fail("hybrid_layer_pattern", std::to_string(flag),
               "must hold only 0 (full attention) and 1 (sliding window)");
      out.push_back(flag == 1);
    }
    return out;
  }
  for (int64_t i = 0; i < layers; ++i) out.push_back(i != 0 && (i + 1) % 6 != 0);
  return out;
}

namespace {

// Laguna's num_attention_heads_per_layer (LagunaDecoderLayer gives layer i that many query heads
// of head_dim, beside the model's key/value heads): one count in every layer, or one in the
// full-attention layers and another in the sliding ones (the Laguna-XS.2 and S-2.1 checkpoints:
// 48 and 64, 48 and 72), built as the windowed layers' own head count.
void read_heads_per_layer_type(HfJsonReader& r, ModelSpec& m) {
  const char* key = "num_attention_heads_per_layer";
  if (!r.has(key) || !r.object[r.spelled(key)].is_array())
    return per_layer_integer(r, key, m.num_attention_heads, false);
  std::vector<int64_t> heads;
  r.integer_list(key, heads);
  if (int64_t(heads.size()) != m.num_hidden_layers)
    return r.fail(
        key, std::to_string(heads.size()) + " entries",
        "must hold one head count per layer (num_hidden_layers = " + std::to_string(m.num_hidden_layers) + ")");
  const std::vector<std::string> types = r.text_list("layer_types");
  int64_t full = 0, sliding = 0;
  for (size_t i = 0; i < heads.size(); ++i) {
    int64_t& seen = i < types.size() && types[i] == "sliding_attention" ? sliding : full;
    if (seen == 0) seen = heads[i];
    if (seen != heads[i])
      return r.fail(key, r.object[r.spelled(key)].dump(),
                    "is not a model remat can build: head counts that differ within one layer type (layer_types); "
                    "remat builds one per type");
  }
  m.num_attention_heads = full > 0 ? full : sliding;
  if (full == 0 || sliding == 0 || sliding == full) return;
  int64_t window = 0;
  r.integer("sliding_window", window, false);
  if (window < 1)
    return r.fail("sliding_window", r.has("sliding_window") ? std::to_string(window) : "",
                  "must be a positive window: the sliding_attention layers have their own head count (" +
                      std::to_string(sliding) + ")");
  m.windowed_attention_heads = sliding;
}

}  // namespace

// Laguna (transformers' modeling_laguna.py): LLaMA's layer with attention_bias on q, k, v and o, q/k
// norms of head_dim and a softplus gate on the attention output from its own g_proj (no bias): one
// per head where gating is true or "per-head", else one per output element; the same head count in
// each layer type (read_heads_per_layer_type); a sigmoid router (its score-correction bias a
// parameter) over num_experts, one shared MLP of shared_expert_intermediate_size; dense layers by
// mlp_layer_types, else the first alone.
void laguna_layer(HfJsonReader& r, ModelSpec& m) {
  bool bias = false;
  r.boolean("attention_bias", bias);
  m.qkv_bias = m.o_bias = bias;
  m.qk_norm = QkNorm::shared;
  m.rotary_fraction = 0.5;  // LagunaConfig's full-attention layers
  const bool per_head =
      !r.has("gating") || (r.object[r.spelled("gating")].is_boolean() ? r.object[r.spelled("gating")].get<bool>()
                                                                      : r.text("gating") == "per-head");
  (per_head ? m.attention_head_gate : m.attention_output_gate) = true;
  read_heads_per_layer_type(r, m);
  read_routed_experts(r, m, "num_experts", 256, 512, 8);
  int64_t shared = 512;
  r.integer("shared_expert_intermediate_size", shared, false);
  if (shared > 0) m.set_shared_mlp_width(shared);
  read_mlp_layer_types(r, m, 1);
}

// BitNet (transformers' modeling_bitnet.py): LLaMA's layer with an RMSNorm on the attention output
// before o_proj and one on the MLP's activation before down_proj (attn_sub_norm, ffn_sub_norm); its
// MLP gated by hidden_act (relu2). The checkpoints' ternary weights are a quantization_config, costed
// at --precision as every quantized checkpoint.
void bitnet_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  m.sub_norms = true;
}

// Aria's language model (transformers' modeling_aria.py, AriaTextMoELayer): LLaMA's attention; in
// every layer moe_num_experts SwiGLU experts of intermediate_size (fc1 holds the gate and up halves),
// moe_topk per token by a softmax over the top router logits (no bias), beside one shared SwiGLU MLP
// of intermediate_size x moe_num_shared_experts.
void aria_text_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  integer_or_default(r, m, "moe_num_experts", m.n_routed_experts, 8);  // AriaTextConfig's defaults
  require_experts(r, m, "moe_num_experts");
  integer_or_default(r, m, "moe_topk", m.num_experts_per_tok, 2);
  integer_or_default(r, m, "moe_num_shared_experts", m.n_shared_experts, 2);
  m.moe_intermediate_size = m.intermediate_size;
}

// Emu3's language model (transformers' modeling_emu3.py): LLaMA's layer whose decoder layer also
// drops each block's output by attention_dropout (Emu3TextConfig's default 0.1) before the residual
// add, beside the attention probabilities' dropout.
void emu3_text_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  m.attention_dropout = 0.1;
  read_probability(r, "attention_dropout", m.attention_dropout);
  m.residual_dropout = m.attention_dropout;
}

}  // namespace remat

namespace remat {

// Ling-lite / Ling-plus (bailing_moe, its remote modeling_bailing_moe.py): LLaMA's layer with q, k and
// v in one projection (query_key_value, bias by use_qkv_bias) and the output projection `dense`
// (bias by use_bias); head_dim hidden_size / heads. From first_k_dense_replace on, an MoE: a router
// without bias over num_experts SwiGLU experts of moe_intermediate_size, beside one shared MLP of
// moe_intermediate_size x num_shared_experts (the Ling-plus config spells the two counts as
// DeepSeek does). norm_head rescales the head's weight at run time: no parameter.
void bailing_moe_layer(HfJsonReader& r, ModelSpec& m) {
  r.boolean("use_qkv_bias", m.qkv_bias);
  bool bias = false;
  r.boolean("use_bias", bias);
  if (bias)
    return r.fail("use_bias", "true",
                  "is not a model remat can build: biases on the experts' matrices (remat's experts "
                  "have none)");
  m.fused_qkv_projection = true;
  const char* experts = r.has("num_experts") ? "num_experts" : "n_routed_experts";
  r.integer(experts, m.n_routed_experts, true);
  require_experts(r, m, experts);
  r.integer("moe_intermediate_size", m.moe_intermediate_size, true);
  r.integer("num_experts_per_tok", m.num_experts_per_tok, true);
  r.integer(r.has("num_shared_experts") ? "num_shared_experts" : "n_shared_experts", m.n_shared_experts, false);
  int64_t first_dense = 0;
  r.integer("first_k_dense_replace", first_dense, false);
  read_mlp_layer_types(r, m, first_dense);
  note_if_true(r, m, "norm_head", false,
               "the head's weight divided by its norm each step (a copy of the head, vocab x hidden) is not costed");
}

void refuse_if_true(HfJsonReader& r, const char* key, const std::string& construct) {
  bool value = false;
  r.boolean(key, value);
  if (value) r.fail(key, "true", "is not a model remat can build: " + construct);
}

void refuse_post_norm_residual(HfJsonReader& r) {
  refuse_if_true(r, "apply_residual_connection_post_layernorm", "the residual taken after each norm, not before it");
}

void note_if_true(HfJsonReader& r, ModelSpec& m, const char* key, bool fallback, const std::string& why) {
  bool value = fallback;
  r.boolean(key, value);
  if (value) m.notes.push_back(r.path(key) + " is true: " + why);
}

}  // namespace remat

namespace remat {

// Llama 3.2 Vision's language model (transformers' MllamaTextModel): LLaMA's self-attention layers,
// and at cross_attention_layers (MllamaTextConfig's default [3, 8, ..., 38]) cross-attention layers
// over the image states. A text-only step has none and skips those layers, which hold their weights,
// run nothing and get no gradient. The input embedding has 8 rows beyond vocab_size.
void mllama_text_layer(HfJsonReader& r, ModelSpec& m) {
  std::vector<int64_t> cross = {3, 8, 13, 18, 23, 28, 33, 38};
  r.integer_list("cross_attention_layers", cross);
  const int64_t layers = std::min(m.num_hidden_layers, limits::kLayers);
  m.skipped_cross_attention_layers.assign(size_t(std::max<int64_t>(layers, 0)), false);
  int64_t count = 0;
  for (int64_t i : cross) {
    if (i < 0) return r.fail("cross_attention_layers", std::to_string(i), "must list layer indices (>= 0)");
    if (i < layers && !m.skipped_cross_attention_layers[size_t(i)]) ++count;
    if (i < layers) m.skipped_cross_attention_layers[size_t(i)] = true;
  }
  m.layer_mixers.assign(size_t(layers), Mixer::attention);
  m.layer_has_ffn.assign(size_t(layers), true);
  for (int64_t i = 0; i < layers; ++i)
    if (m.skipped_cross_attention_layers[size_t(i)])
      m.layer_mixers[size_t(i)] = Mixer::none, m.layer_has_ffn[size_t(i)] = false;
  m.extra_input_embedding_rows = 8;
  m.logits = ModelLogits::fp32_in_forward;  // MllamaForCausalLM.forward: lm_head(...).float()
  m.notes.push_back("Llama 3.2 Vision's " + std::to_string(count) + " cross-attention layers of " +
                    std::to_string(layers) +
                    " are costed as a text-only step runs them (transformers skips them without image states): "
                    "their weights held, no compute and no gradient; steps with images are not modelled");
}

// DBRX: the experts under ffn_config; kv heads and the clamp of q|k|v under attn_config.
void read_dbrx_experts(HfJsonReader& r, ModelSpec& m) {
  for (const char* key : {"ffn_config", "attn_config"}) {
    r.mark_read(key);
    if (!r.object.contains(key) || !r.object[key].is_object()) return r.fail(key, "", "must be an object");
  }
  HfJsonReader ffn{r.object["ffn_config"], r.file, r.path("ffn_config."), r.problems};
  HfJsonReader attn{r.object["attn_config"], r.file, r.path("attn_config."), r.problems};
  ffn.integer("moe_num_experts", m.n_routed_experts, true);
  ffn.integer("moe_top_k", m.num_experts_per_tok, true);
  ffn.integer("ffn_hidden_size", m.moe_intermediate_size, true);
  m.intermediate_size = m.moe_intermediate_size;
  attn.integer("kv_n_heads", m.num_key_value_heads, false);
  // DbrxAttention: Wqkv's output clamped to +-clip_qkv where it is set, then split into views
  double clip = 0;
  attn.number("clip_qkv", clip);
  m.qkv_clamp = clip > 0;
}

// The families whose model code drops the embeddings' output in training, with their config keys and
// their config classes' defaults: Starcoder2Model (nn.functional.dropout(inputs_embeds,
// embedding_dropout)), GPT2Model and GPTBigCodeModel (self.drop, embd_pdrop 0.1), PhiModel
// (embed_dropout from embd_pdrop), GPTJModel and CodeGenModel (self.drop, embd_pdrop), GPTNeoModel
// (self.drop, embed_dropout).
void read_embedding_dropout(HfJsonReader& r, ModelSpec& m, std::string_view model_type) {
  struct Key {
    const char* model_type;
    const char* key;
    double default_p;
  };
  static constexpr Key kKeys[] = {{"starcoder2", "embedding_dropout", 0},
                                  {"gpt2", "embd_pdrop", 0.1},
                                  {"gpt_bigcode", "embd_pdrop", 0.1},
                                  {"phi", "embd_pdrop", 0},
                                  {"gptj", "embd_pdrop", 0},
                                  {"codegen", "embd_pdrop", 0},
                                  {"gpt_neo", "embed_dropout", 0}};
  for (const Key& k : kKeys) {
    if (model_type != k.model_type) continue;
    m.embedding_dropout = k.default_p;
    read_probability(r, k.key, m.embedding_dropout);
  }
}

}  // namespace remat
