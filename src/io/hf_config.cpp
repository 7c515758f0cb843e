// Hugging Face config.json: model_type (or, when remat does not know it, the
// architecture class the config names) picks a family from the table in
// hf_families.cpp, which says how that family spells its dimensions and
// experts and how its layer differs from LLaMA's; a multimodal wrapper's
// language model is its text_config (llm_config for InternVL). Absent
// dimensions take the family's transformers defaults. Anything that changes the
// model and that remat cannot represent is refused with the construct named;
// keys that do not change it (dropout, token ids) are ignored, but for the rotary base and
// scaling, norm epsilon and sliding windows, which the Megatron-LM flags need.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"
#include "hf_vision_towers.hpp"
#include "json_document.hpp"
#include "remat/io/spec_loader.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

using nlohmann::json;

void throw_if(std::vector<Problem>& problems) {
  if (!problems.empty()) throw InputError(std::move(problems));
}

[[noreturn]] void refuse(const std::string& file, const std::string& key, const std::string& value,
                         const std::string& why) {
  throw InputError({{file, key, value, "is not a model remat can build: " + why}});
}

// Constructs remat has no block for, named by the keys that declare them (in any family,
// known or not: the construct is what the user needs to hear).
// `layers` in a config whose model type is not one of remat's hybrids.
std::string outside_hybrids(const std::string& layers) {
  return layers +
         " in another model type (remat's hybrids: nemotron_h, bamba, granitemoehybrid, mamba2, falcon_h1, "
         "qwen3_next, lfm2, jamba)";
}

void refuse_layer_mixes(HfJsonReader& r, HfHybrid hybrid) {
  if (r.has("hybrid_override_pattern") && hybrid != HfHybrid::mamba2_pattern)
    refuse(r.file, r.path("hybrid_override_pattern"), "", outside_hybrids("Mamba-2/attention/MLP layers by pattern"));
  for (const std::string& kind :
       r.object.contains("layers_block_type") ? r.text_list("layers_block_type") : std::vector<std::string>{})
    if ((kind == "mamba" || kind == "mamba2" || kind == "hybrid") && hybrid != HfHybrid::mamba2_pattern)
      refuse(r.file, r.path("layers_block_type"), kind, outside_hybrids("Mamba layers beside attention layers"));
  if (r.has("block_configs") && hybrid != HfHybrid::block_configs)
    refuse(r.file, r.path("block_configs"), "",
           "layers of different shapes (block_configs) in another model type (remat reads them in nemotron-nas)");
  if (r.has("cross_attention_layers") && hybrid != HfHybrid::cross_attention)
    refuse(r.file, r.path("cross_attention_layers"), "",
           "cross-attention layers over another input; remat builds self-attention decoders only");
  for (const char* key : {"ssm_cfg", "mamba_d_state", "ssm_state_size", "mamba_expand"})
    if (r.has(key) && hybrid != HfHybrid::mamba2_pattern && hybrid != HfHybrid::mamba1)
      refuse(r.file, r.path(key), "", outside_hybrids("state-space (Mamba) layers"));
  bool encoder_decoder = false;
  r.boolean("is_encoder_decoder", encoder_decoder);
  if (encoder_decoder)
    refuse(r.file, r.path("is_encoder_decoder"), "true",
           "an encoder-decoder model (bidirectional attention); remat plans causal decoders");
  for (const std::string& kind : r.text_list("layer_types")) {
    if (kind == "full_attention" || kind == "sliding_attention" || kind == "chunked_attention") continue;
    if (kind == "deepseek_sparse_attention") continue;  // a DSA family's reader sets it, else it is refused
    if (kind == "linear_attention" && (hybrid == HfHybrid::gated_deltanet || hybrid == HfHybrid::lightning)) continue;
    if (kind == "conv" && hybrid == HfHybrid::short_conv) continue;
    if ((kind == "compressed_sparse_attention" || kind == "heavily_compressed_attention") &&
        hybrid == HfHybrid::compressed_attention)
      continue;
    const std::string current = current_layer_type(kind);
    if (hybrid == HfHybrid::mamba2_pattern && (current == "linear_attention" || current == "full_attention" ||
                                               kind == "mlp" || kind == "moe" || kind == "hybrid"))
      continue;  // its reader checks
    if (kind == "linear_attention")
      refuse(r.file, r.path("layer_types"), kind,
             "Gated DeltaNet (linear attention) layers in another model type (remat builds them in qwen3_next, "
             "qwen3_5, olmo_hybrid)");
    if (kind == "conv")
      refuse(r.file, r.path("layer_types"), kind,
             "short convolution layers in another model type (remat builds them in lfm2)");
    if (kind.find("mamba") != std::string::npos)
      refuse(r.file, r.path("layer_types"), kind, outside_hybrids("Mamba layers beside attention layers"));
    refuse(r.file, r.path("layer_types"), kind, "layers of kind " + kind + "; remat has no block for them");
  }
}

// DeepSeek sparse attention declared in a family whose reader did not build it.
void refuse_sparse_attention_keys(HfJsonReader& r, const ModelSpec& m) {
  if (m.sparse_attention() || !m.compressed_layers.empty()) return;  // DeepSeek-V4's CSA reads its own
  const std::vector<std::string> kinds = r.text_list("layer_types");
  const bool dsa_layers = std::find(kinds.begin(), kinds.end(), "deepseek_sparse_attention") != kinds.end();
  if (r.has("index_n_heads") || dsa_layers)
    refuse(r.file, r.path(dsa_layers ? "layer_types" : "index_n_heads"), dsa_layers ? "deepseek_sparse_attention" : "",
           "DeepSeek sparse attention (a lightning indexer) in a model type remat builds without one (remat's: "
           "deepseek_v32, glm_moe_dsa)");
}

// Keys some checkpoints add to a family's config (remote code under a known model_type: Kimi K3's
// kimi_linear) for constructs remat has no block for, refused in every family. A latent MoE is
// built as Nemotron-H writes it (moe_latent_size, read with its experts) and refused elsewhere:
// another family's projections and where they sit are not known.
void refuse_unbuilt_construct_keys(HfJsonReader& r, const ModelSpec& m, HfExperts experts) {
  for (const std::string key : {"routed_expert_hidden_size", "moe_latent_size"}) {
    const bool read_with_experts = experts == HfExperts::nemotron_h && key == "moe_latent_size";
    int64_t width = 0;
    r.integer(key.c_str(), width, false);
    if (width <= 0 || width == m.hidden_size || read_with_experts) continue;
    r.fail(key.c_str(), std::to_string(width),
           "is not a model remat can build: latent MoE (experts narrower than hidden_size = " +
               std::to_string(m.hidden_size) + ", between two projections) outside Nemotron-H's layout");
  }
  refuse_if_true(r, "mla_use_output_gate",
                 "a gate on the latent attention's output; remat gates softmax attention outputs only");
}

// The family a config's model_type names: itself, another name for one (kimi_k2), or,
// for a model_type remat does not know, the architecture class it names.
const HfFamily* resolve_family(HfJsonReader& r, const std::string& type, const std::vector<std::string>& archs,
                               ModelSpec& m) {
  note_head_of_architecture(r, archs, find_hf_family(type) != nullptr, m);
  if (const HfFamily* f = find_hf_family(type)) return f;
  std::string family = hf_family_alias(type), via;
  for (size_t i = 0; family.empty() && i < archs.size(); ++i)
    if (!(family = hf_family_of_architecture(archs[i])).empty()) via = archs[i];
  const HfFamily* f = family.empty() ? nullptr : find_hf_family(family);
  if (f)
    m.notes.push_back(
        r.path("model_type") + " " + type + " is read as " + family +
        (via.empty() ? std::string(" (the same layers under another name)") : " (architectures: " + via + ")"));
  return f;
}

[[noreturn]] void refuse_unknown(const std::string& file, const std::string& key, const std::string& type,
                                 const std::vector<std::string>& archs, bool remote_code) {
  const std::string arch = archs.empty() ? std::string("no architectures given") : archs[0];
  if (const std::string why = hf_architecture_refusal_reason(arch); !why.empty())
    refuse(file, key, type, why + "; remat has no block for it (architectures: " + arch + ")");
  if (remote_code)
    refuse(file, key, type,
           "remote code (auto_map) with its own layers (" + arch +
               ") that remat has no mapping for; if they are a known family's, set model_type to it");
  refuse(file, key, type,
         "an architecture remat has no mapping for (" + arch +
             "); if its layers are a known family's, set model_type to it");
}

// A family's transformers default for an absent expert count (MixtralConfig's 8 experts, top 2),
// with a note; false where it has none.
bool fill_expert_default(HfJsonReader& r, ModelSpec& m, const char* key, int64_t& field, int64_t fallback,
                         const std::string& type) {
  if (r.has(key) || fallback <= 0) return false;
  field = fallback;
  m.notes.push_back(r.path(key) + " is absent: transformers' default for " + type + ", " + std::to_string(fallback));
  return true;
}

void read_top_k(HfJsonReader& r, ModelSpec& m, const HfFamily& family) {
  if (m.n_routed_experts > 0 && !r.has("experts_per_token") &&
      fill_expert_default(r, m, "num_experts_per_tok", m.num_experts_per_tok, family.defaults.experts_per_token,
                          family.model_type))
    return;
  if (r.has("num_experts_per_tok") || !r.has("experts_per_token"))
    r.integer("num_experts_per_tok", m.num_experts_per_tok, m.n_routed_experts > 0);
  else
    r.integer("experts_per_token", m.num_experts_per_tok, true);  // gpt-oss's original spelling
}

// A list of layer indices (mlp_only_layers, moe_layers) with one outside 0..layers-1.
void refuse_layers_outside(HfJsonReader& r, const char* key, const std::vector<int64_t>& sorted, int64_t layers) {
  if (sorted.empty() || layers < 1) return;
  const int64_t bad = sorted.front() < 0 ? sorted.front() : sorted.back();
  if (bad < 0 || bad >= layers)
    r.fail(key, std::to_string(bad), "names a layer outside 0.." + std::to_string(layers - 1));
}

// A mixture-of-experts family's expert count given as 0 or less: not a dense model.
void refuse_no_experts(HfJsonReader& r, const char* key, const ModelSpec& m, const std::string& type) {
  if (r.has(key) && m.n_routed_experts < 1)
    r.fail(key, std::to_string(m.n_routed_experts),
           "must be at least 1: model_type " + type + " is a mixture-of-experts family");
}

// The Qwen MoE blocks that build a gated shared expert at any width (read_qwen_experts).
bool builds_gated_shared_expert(const std::string& family) {
  return family == "qwen2_moe" || family == "qwen3_next" || family == "qwen3_5_moe_text";
}

// Qwen2-MoE / Qwen3-MoE: layer i is MoE when (i + 1) % decoder_sparse_step == 0
// and i is not in mlp_only_layers (transformers' Qwen2MoeDecoderLayer).
// `gated_shared`: the MoE block builds its shared expert and that expert's gate whatever the width,
// a zero-wide expert included (Qwen2MoeSparseMoeBlock, Qwen3-Next's and Qwen3.5-MoE's); Qwen3-MoE's
// block has neither.
void read_qwen_experts(HfJsonReader& r, ModelSpec& m, const std::string& family) {
  const bool gated_shared = builds_gated_shared_expert(family);
  r.integer("num_experts", m.n_routed_experts, true);
  r.integer("moe_intermediate_size", m.moe_intermediate_size, true);
  m.moe_layer_rule = MoeLayerRule::every_step;
  r.integer("decoder_sparse_step", m.moe_layer_freq, false);
  if (m.moe_layer_freq < 1)
    r.fail("decoder_sparse_step", std::to_string(m.moe_layer_freq), "must be a positive integer");
  r.integer_list("mlp_only_layers", m.dense_mlp_layers);
  std::sort(m.dense_mlp_layers.begin(), m.dense_mlp_layers.end());
  refuse_layers_outside(r, "mlp_only_layers", m.dense_mlp_layers, m.num_hidden_layers);
  int64_t shared = 0;
  // Qwen3-Next's and Qwen3.5-MoE's config classes default it to 512 (a Qwen3.5-MoE config without
  // it counts so in transformers 5.17: param-counts-realcfg12-h200.jsonl); Qwen3-MoE's block builds
  // none whatever the file says (left unread, so the note names it)
  if (family == "qwen3_next" || family == "qwen3_5_moe_text")
    integer_or_default(r, m, "shared_expert_intermediate_size", shared, 512);
  else if (gated_shared)
    r.integer("shared_expert_intermediate_size", shared, false);
  if (shared > 0 && m.moe_intermediate_size > 0)
    shared_mlp_as_experts(r, "shared_expert_intermediate_size", shared, m.moe_intermediate_size,
                          "moe_intermediate_size", m);
  m.shared_expert_gate = gated_shared || shared > 0;  // shared_expert_gate, h x 1
}

// Llama 4: routed experts of intermediate_size plus one shared expert of the
// same size; the dense layers' MLP is intermediate_size_mlp; MoE every
// interleave_moe_layer_step-th layer ((i + 1) % step == 0) or the moe_layers list.
void read_llama4_experts(HfJsonReader& r, ModelSpec& m) {
  r.integer("num_local_experts", m.n_routed_experts, true);
  m.moe_intermediate_size = m.intermediate_size;
  r.integer("intermediate_size_mlp", m.intermediate_size, true);
  m.n_shared_experts = 1;
  m.experts_run_all_tokens = true;
  m.moe_layer_rule = MoeLayerRule::every_step;
  r.integer("interleave_moe_layer_step", m.moe_layer_freq, false);
  if (m.moe_layer_freq < 1)
    r.fail("interleave_moe_layer_step", std::to_string(m.moe_layer_freq), "must be a positive integer");
  std::vector<int64_t> moe_layers;
  r.integer_list("moe_layers", moe_layers);
  if (!r.has("moe_layers")) return;
  std::sort(moe_layers.begin(), moe_layers.end());
  refuse_layers_outside(r, "moe_layers", moe_layers, m.num_hidden_layers);
  std::vector<int64_t> dense;
  for (int64_t i = 0; i < std::min(m.num_hidden_layers, limits::kLayers); ++i)
    if (!std::binary_search(moe_layers.begin(), moe_layers.end(), i)) dense.push_back(i);
  set_dense_layers(m, dense);
}

// ERNIE 4.5 MoE (transformers' Ernie4_5_MoeDecoderLayer): layer i is MoE when (i + 1) %
// moe_layer_interval == 0 and moe_layer_start_index <= i <= moe_layer_end_index (-1: the last).
void read_ernie_experts(HfJsonReader& r, ModelSpec& m) {
  r.integer("moe_num_experts", m.n_routed_experts, true);
  r.integer("moe_k", m.num_experts_per_tok, true);
  r.integer("moe_intermediate_size", m.moe_intermediate_size, true);
  // absent keys take Ernie4_5_MoeConfig's defaults: 2 shared experts, MoE from layer 1
  m.n_shared_experts = 2;
  int64_t start = 1, end = -1;
  for (const auto& [key, value] :
       {std::pair<const char*, int64_t>{"moe_num_shared_experts", 2}, {"moe_layer_start_index", 1}})
    if (!r.has(key))
      m.notes.push_back(r.path(key) + " is absent: transformers' default for ernie4_5_moe, " + std::to_string(value));
  r.integer("moe_num_shared_experts", m.n_shared_experts, false);
  r.integer("moe_layer_start_index", start, false);
  r.integer("moe_layer_end_index", end, false);
  r.integer("moe_layer_interval", m.moe_layer_freq, false);
  if (m.moe_layer_freq < 1)
    r.fail("moe_layer_interval", std::to_string(m.moe_layer_freq), "must be a positive integer");
  m.moe_layer_rule = MoeLayerRule::every_step;
  const int64_t layers = std::min(m.num_hidden_layers, limits::kLayers);
  if (end < 0) end = layers - 1;
  for (int64_t i = 0; i < layers; ++i)
    if (i < start || i > end) m.dense_mlp_layers.push_back(i);
}

// Nemotron-H (Nemotron 3): the layers its pattern marks E (nemotron_h_layer) route to
// n_routed_experts two-matrix experts of moe_intermediate_size, beside one shared MLP of
// moe_shared_expert_intermediate_size (transformers' NemotronHMoE; n_shared_experts unused).
void read_nemotron_h_experts(HfJsonReader& r, ModelSpec& m) {
  if (m.moe_layer_rule != MoeLayerRule::every_step) return;  // no E layer: transformers builds no experts
  r.integer("n_routed_experts", m.n_routed_experts, true);
  r.integer("moe_intermediate_size", m.moe_intermediate_size, true);
  int64_t shared = 0;
  r.integer("moe_shared_expert_intermediate_size", shared, false);
  if (shared > 0 && m.moe_intermediate_size > 0)
    shared_mlp_as_experts(r, "moe_shared_expert_intermediate_size", shared, m.moe_intermediate_size,
                          "moe_intermediate_size", m);
  // NemotronHMoE: with moe_latent_size the experts read and write that width, between
  // fc1_latent_proj (hidden -> latent) and fc2_latent_proj (latent -> hidden)
  r.integer("moe_latent_size", m.moe_latent_size, false);
  if (m.moe_latent_size < 0 || m.moe_latent_size > m.hidden_size)
    r.fail("moe_latent_size", std::to_string(m.moe_latent_size),
           "must be between 1 and hidden_size = " + std::to_string(m.hidden_size) + " (null: no latent projection)");
  r.integer("num_experts_per_tok", m.num_experts_per_tok, true);
}

void refuse_expert_keys(HfJsonReader& r, const std::string& type) {
  for (const char* key : {"num_local_experts", "num_experts", "n_routed_experts", "moe_intermediate_size"}) {
    int64_t n = 0;
    r.integer(key, n, false);
    if (n > 0)
      refuse(r.file, r.path(key), std::to_string(n),
             "experts in a model_type (" + type + ") that remat's table maps as dense");
  }
}

}  // namespace

// Where mlp_layer_types is absent: Glm4MoeLiteConfig, ExaoneMoeConfig and others keep
// first_k_dense_replace; Cohere2 MoE passes its first_k_dense_replace as `first_dense`.
void read_mlp_layer_types(HfJsonReader& r, ModelSpec& m, int64_t first_dense) {
  const std::vector<std::string> types = r.text_list("mlp_layer_types");
  if ((types.empty() && first_dense < 0) || !m.is_moe()) return;
  if (!types.empty() && int64_t(types.size()) != m.num_hidden_layers)
    return r.fail("mlp_layer_types", std::to_string(types.size()) + " entries",
                  "must name each of num_hidden_layers = " + std::to_string(m.num_hidden_layers) + " layers");
  std::vector<int64_t> dense;
  for (int64_t i = 0; i < std::min(m.num_hidden_layers, limits::kLayers); ++i) {
    const std::string kind = types.empty() ? (i < first_dense ? "dense" : "sparse") : types[size_t(i)];
    if (kind != "dense" && kind != "sparse")
      return r.fail("mlp_layer_types", kind, "must hold only \"dense\" and \"sparse\"");
    if (kind == "dense") dense.push_back(i);
  }
  set_dense_layers(m, dense);
}

void set_dense_layers(ModelSpec& m, std::vector<int64_t> dense_layers) {
  m.moe_layer_rule = MoeLayerRule::every_step;
  m.moe_layer_freq = 1;
  m.dense_mlp_layers = std::move(dense_layers);
}

std::vector<bool> read_linear_layer_types(HfJsonReader& r, int64_t layers,
                                          const std::function<bool(int64_t)>& default_linear) {
  const std::vector<std::string> types = r.text_list("layer_types");
  std::vector<bool> linear;
  if (!types.empty() && int64_t(types.size()) != layers) {
    r.fail("layer_types", std::to_string(types.size()) + " entries",
           "must name each of num_hidden_layers = " + std::to_string(layers) + " layers");
    return linear;
  }
  for (int64_t i = 0; i < layers; ++i) {
    if (types.empty()) {
      linear.push_back(default_linear(i));
      continue;
    }
    const std::string kind = current_layer_type(types[size_t(i)]);
    if (kind != "linear_attention" && kind != "full_attention") {
      r.fail("layer_types", kind, "must hold only linear_attention and full_attention");
      return {};
    }
    linear.push_back(kind == "linear_attention");
  }
  return linear;
}

size_t decoder_entries(HfJsonReader& r, size_t listed, int64_t layers) {
  int64_t mtp = 0;
  r.integer("num_nextn_predict_layers", mtp, false);
  return int64_t(listed) == layers + mtp ? size_t(layers) : listed;
}

namespace {

void read_experts(HfJsonReader& r, ModelSpec& m, const HfFamily& family, const std::string& type) {
  switch (family.experts) {
    case HfExperts::none:
      return refuse_expert_keys(r, type);
    case HfExperts::mixtral:
      if (!fill_expert_default(r, m, "num_local_experts", m.n_routed_experts, family.defaults.experts,
                               family.model_type))
        r.integer("num_local_experts", m.n_routed_experts, true);
      refuse_no_experts(r, "num_local_experts", m, type);
      m.moe_intermediate_size = m.intermediate_size;
      break;
    case HfExperts::olmoe:
      r.integer("num_experts", m.n_routed_experts, true);
      refuse_no_experts(r, "num_experts", m, type);
      m.moe_intermediate_size = m.intermediate_size;
      break;
    case HfExperts::optional_num_experts:
      r.integer("num_experts", m.n_routed_experts, false);
      if (m.n_routed_experts > 0) m.moe_intermediate_size = m.intermediate_size;
      break;
    case HfExperts::qwen:
      read_qwen_experts(r, m, family.model_type);
      refuse_no_experts(r, "num_experts", m, type);
      read_mlp_layer_types(r, m);  // Mellum's
      break;
    case HfExperts::deepseek: {
      const HfDefaults& d = family.defaults;
      const auto read = [&](const char* key, int64_t& field, int64_t fallback) {
        if (!fill_expert_default(r, m, key, field, fallback, family.model_type)) r.integer(key, field, false);
      };
      read("n_routed_experts", m.n_routed_experts, d.experts);
      refuse_no_experts(r, "n_routed_experts", m, type);
      read("moe_intermediate_size", m.moe_intermediate_size, d.moe_intermediate_size);
      read("n_shared_experts", m.n_shared_experts, d.shared_experts);
      read("first_k_dense_replace", m.first_k_dense_replace, d.first_dense_layers);
      r.integer("moe_layer_freq", m.moe_layer_freq, false);
      read_mlp_layer_types(r, m);
      break;
    }
    case HfExperts::llama4:
      read_llama4_experts(r, m);
      refuse_no_experts(r, "num_local_experts", m, type);
      break;
    case HfExperts::ernie:
      return read_ernie_experts(r, m);
    case HfExperts::dbrx:
      return read_dbrx_experts(r, m);
    case HfExperts::nemotron_h:
      return read_nemotron_h_experts(r, m);
    case HfExperts::own:
      return;
  }
  read_top_k(r, m, family);
}

void read_mla(HfJsonReader& r, ModelSpec& m) {
  r.integer("q_lora_rank", m.q_lora_rank, false);  // null: no query compression
  r.integer("kv_lora_rank", m.kv_lora_rank, true);
  r.integer("qk_rope_head_dim", m.qk_rope_head_dim, true);
  r.integer("qk_nope_head_dim", m.qk_nope_head_dim, true);
  r.integer("v_head_dim", m.v_head_dim, m.v_head_dim == 0);  // a family's spell may default it (MiniCPM3)
  m.head_dim = 0;
}

// Which layers a window applies to: layer_types; else sliding_window_pattern (Gemma 3's every
// N-th layer global, EXAONE 4's "LLLG"), the family's own (Gemma 2 alternates, Gemma 3 and
// Cohere 2 keep every 6th and 4th global); else Qwen2's layers from max_window_layers on;
// else every layer (empty).
std::vector<bool> windowed_layers(HfJsonReader& r, const std::string& type, const std::vector<std::string>& layer_types,
                                  int64_t layers) {
  if (type == "gemma4_text" || type == "gemma4_unified_text") return gemma4_windowed_layers(r, layers);
  std::vector<bool> out;
  for (const auto& kind : layer_types) out.push_back(kind == "sliding_attention");
  if (!layer_types.empty()) return out;
  const int64_t n = std::min(layers, limits::kLayers);
  // config classes that fill layer_types themselves: Mellum's every layer full, CWM's and Granite
  // SWA's first of every 4 full, AFMoE's every global_attn_every_n_layers-th
  if (type == "mellum") return std::vector<bool>(size_t(std::max<int64_t>(n, 0)), false);
  if (type == "mimo_v2_flash") return mimo_v2_flash_windowed_layers(r, n);
  if (type == "cwm" || type == "granite_swa" || type == "granitemoe_swa") {
    for (int64_t i = 0; i < n; ++i) out.push_back(i % 4 != 0);
    return out;
  }
  const bool every_4th = type == "cohere2" || type == "cohere2_moe" || type == "exaone_moe" || type == "afmoe";
  int64_t every = type == "gemma2" || type == "vaultgemma" ? 2 : type == "gemma3_text" ? 6 : every_4th ? 4 : 0;
  int64_t from = -1;
  if (type == "afmoe") r.integer("global_attn_every_n_layers", every, false);
  std::string letters;
  if (r.has("sliding_window_pattern") && r.object["sliding_window_pattern"].is_string())
    letters = r.text("sliding_window_pattern");
  else
    r.integer("sliding_window_pattern", every, false);
  if (r.has("max_window_layers") && type.rfind("qwen2", 0) == 0) r.integer("max_window_layers", from, false);
  if (every <= 0 && letters.empty() && from < 0) return out;
  for (int64_t i = 0; i < std::min(layers, limits::kLayers); ++i)
    out.push_back(!letters.empty() ? letters[size_t(i) % letters.size()] == 'L'
                  : every > 0      ? (i + 1) % every != 0
                                   : i >= from);
  return out;
}

// A window shorter than the context: flash attention's memory is the same, its
// FLOPs over the window are fewer; remat counts the full causal sequence. The window
// and its layers are kept for the Megatron-LM flags.
void read_windowed_attention(HfJsonReader& r, ModelSpec& m, const std::string& type,
                             std::vector<std::string> layer_types) {
  if (!m.compressed_layers.empty()) return;  // DeepSeek-V4's window: its reader's note
  layer_types.resize(decoder_entries(r, layer_types.size(), m.num_hidden_layers));
  if (!layer_types.empty() && int64_t(layer_types.size()) != m.num_hidden_layers)
    return r.fail("layer_types", std::to_string(layer_types.size()) + " entries",
                  "must name each of num_hidden_layers = " + std::to_string(m.num_hidden_layers) + " layers");
  int64_t window = 0, chunk = 0, context = 0;
  bool used = true;
  r.integer("sliding_window", window, false);
  if (type == "mimo_v2_flash" && !r.has("sliding_window"))
    r.integer("sliding_window_size", window, false);  // its Hub config's spelling
  r.boolean("use_sliding_window", used);
  r.integer("attention_chunk_size", chunk, false);
  std::vector<Problem> ignored;  // max_position_embeddings only bounds the note
  HfJsonReader quiet{r.object, r.file, r.prefix, ignored};
  quiet.integer("max_position_embeddings", context, false);
  const auto layers_of = [&](const char* kind) {
    const auto n = std::count(layer_types.begin(), layer_types.end(), kind);
    return layer_types.empty() ? std::string("its windowed layers")
                               : std::to_string(n) + " of " + std::to_string(layer_types.size()) + " layers";
  };
  const std::string cost =
      ": attention FLOPs and time are counted over the full causal sequence (an overestimate "
      "when --seq is longer; under --framework hf's sdpa such a layer computes the whole square and "
      "keeps its own s x s mask and repeated keys and values, which remat counts)";
  const bool any_sliding =
      layer_types.empty() || std::count(layer_types.begin(), layer_types.end(), "sliding_attention");
  // layers of their own head count stay apart however long their window (Step 3.5)
  const bool own_heads = m.windowed_attention_heads > 0;
  if (window > 0 && used && any_sliding && (context <= 0 || window < context || own_heads)) {
    m.notes.push_back(r.path("sliding_window") + " = " + std::to_string(window) + " on " +
                      layers_of("sliding_attention") + cost);
    m.windowed_layers = windowed_layers(r, type, layer_types, m.num_hidden_layers);
    const bool all = std::find(m.windowed_layers.begin(), m.windowed_layers.end(), false) == m.windowed_layers.end();
    if (all) m.windowed_layers.clear();
    if (all || std::find(m.windowed_layers.begin(), m.windowed_layers.end(), true) != m.windowed_layers.end())
      m.sliding_window_tokens = window;
  }
  if (chunk > 0 && (context <= 0 || chunk < context)) {
    m.notes.push_back(r.path("attention_chunk_size") + " = " + std::to_string(chunk) + " on " +
                      layers_of("chunked_attention") + cost);
    m.attention_chunk_tokens = chunk;
  }
}

// A positive finite number under the first of `keys` the config has; `out` keeps its
// default when none is there.
// The first of `keys` present, a number above 0 (or at least 0 where `zero_allowed`: YaRN's
// mscale and mscale_all_dim and Llama 4's scaling beta are off at 0).
void read_number_above(HfJsonReader& r, std::initializer_list<const char*> keys, double& out, bool zero_allowed) {
  for (const char* key : keys) {
    if (!r.has(key)) continue;
    double v = 0;
    const size_t before = r.problems.size();
    r.number(key, v);
    if (r.problems.size() > before) return;
    if (v > 0 || (zero_allowed && v == 0))
      out = v;
    else
      r.fail(key, r.object[key].dump(), zero_allowed ? "must be 0 or more" : "must be a positive number");
    return;
  }
}

void read_positive(HfJsonReader& r, std::initializer_list<const char*> keys, double& out) {
  read_number_above(r, keys, out, false);
}

// rope_scaling (or transformers 5's rope_parameters): its type and the numbers Megatron-LM's
// flags take; "default" is no scaling.
void read_rope_scaling(HfJsonReader& r, const char* key, RopeScaling& s) {
  HfJsonReader o{r.object[key], r.file, r.path(key) + ".", r.problems};
  s.type = o.has("rope_type") ? o.text("rope_type") : o.text("type");
  if (s.type == "default") s.type = "";
  read_number_above(o, {"llama_4_scaling_beta"}, s.llama4_scaling_beta, true);
  if (s.type.empty()) return;
  read_positive(o, {"factor"}, s.factor);
  o.integer("original_max_position_embeddings", s.original_context_tokens, false);
  read_positive(o, {"low_freq_factor"}, s.low_freq_factor);
  read_positive(o, {"high_freq_factor"}, s.high_freq_factor);
  read_positive(o, {"beta_fast"}, s.beta_fast);
  read_positive(o, {"beta_slow"}, s.beta_slow);
  read_number_above(o, {"mscale"}, s.mscale, true);
  read_number_above(o, {"mscale_all_dim"}, s.mscale_all_dim, true);
  read_positive(o, {"attention_factor"}, s.attention_factor);
  o.boolean("truncate", s.truncate);
}

// Rotary base and scaling, norm epsilon. Absent: transformers' LlamaConfig defaults (rope_theta
// 10000; rms_norm_eps 1e-6, or the family's config class's) and nn.LayerNorm's 1e-5 for
// LayerNorms. They change no figure, only Megatron-LM's flags.
void read_numerics(HfJsonReader& r, ModelSpec& m, const HfFamily& family) {
  m.norm_eps = m.norm_kind == NormKind::layer     ? 1e-5
               : family.defaults.rms_norm_eps > 0 ? family.defaults.rms_norm_eps
                                                  : 1e-6;
  read_positive(
      r, {"rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_epsilon", "norm_eps", "layernorm_epsilon"},
      m.norm_eps);
  const bool parameters = r.has("rope_parameters") && r.object["rope_parameters"].is_object();
  if (parameters) {
    HfJsonReader p{r.object["rope_parameters"], r.file, r.path("rope_parameters."), r.problems};
    read_positive(p, {"rope_theta"}, m.rope_theta);
  }
  if (r.has("rope_theta") && r.object["rope_theta"].is_array()) {  // one per layer (Step 3.5): the first
    const nlohmann::json& thetas = r.object["rope_theta"];
    for (const auto& theta : thetas)
      if (!theta.is_number() || !(theta.get<double>() > 0) || !std::isfinite(theta.get<double>()))
        return r.fail("rope_theta", theta.dump(), "must hold positive numbers, one per layer");
    if (!thetas.empty()) m.rope_theta = thetas.front().get<double>();
  } else {
    read_positive(r, {"rope_theta", "rotary_emb_base"}, m.rope_theta);
  }
  read_positive(r, {"rope_local_base_freq"}, m.rope_local_theta);
  if (r.has("rope_scaling") && r.object["rope_scaling"].is_object())
    read_rope_scaling(r, "rope_scaling", m.rope_scaling);
  else if (parameters)
    read_rope_scaling(r, "rope_parameters", m.rope_scaling);
}

// A key of another tool's or family's spelling that the file gives for a dimension it leaves out
// (llm-analysis's hidden_dim, num_layers, n_head, ffn_embed_dim), as "hidden_dim = 8192"; "" if none.
std::string other_spelling(const HfJsonReader& r, const std::string& key) {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> kSpellings = {
      {"hidden_size", {"hidden_dim", "d_model", "n_embd", "n_embed", "model_dim", "dim"}},
      {"num_hidden_layers", {"num_layers", "n_layer", "n_layers"}},
      {"num_attention_heads", {"n_head", "n_heads", "num_heads"}},
      {"intermediate_size", {"ffn_embed_dim", "ffn_dim", "ffn_hidden_size", "n_inner", "d_ff"}},
  };
  for (const auto& [dimension, spellings] : kSpellings)
    if (dimension == key)
      for (const std::string& s : spellings)
        if (r.object.contains(s) && r.object[s].is_number_integer()) return s + " = " + r.object[s].dump();
  return "";
}

// The family's spellings first (GPT-2's n_embd), then the common keys; a dimension
// still absent takes the family's transformers default (said in a note) or is missing.
// `type`: the config's own model_type. Where it names the family another way (remote code under a
// known architecture), transformers' defaults for the family are not that code's: an absent core
// dimension is refused rather than filled (Phi-2's first remote code spells them n_embd, n_layer).
void read_dimensions(HfJsonReader& r, ModelSpec& m, const HfFamily& family, const std::string& type) {
  if (family.spell) family.spell(r, m);
  r.integer("hidden_size", m.hidden_size, false);
  r.integer("intermediate_size", m.intermediate_size, false);
  r.integer("num_attention_heads", m.num_attention_heads, false);
  r.integer("num_key_value_heads", m.num_key_value_heads, false);
  if (r.has("num_key_value_heads") && m.num_key_value_heads < 1)
    r.fail("num_key_value_heads", std::to_string(m.num_key_value_heads),
           "must be a positive integer (leave it out, or null, for multi-head attention)");
  else if (r.object.contains("num_key_value_heads") && !r.has("num_key_value_heads") && m.num_key_value_heads == 0)
    m.notes.push_back(r.path("num_key_value_heads") +
                      " is null: read as num_attention_heads (multi-head attention), as transformers does");
  r.integer("head_dim", m.head_dim, false);
  r.integer("vocab_size", m.vocab_size, false);
  r.integer("num_hidden_layers", m.num_hidden_layers, false);
  if (r.has("kv_lora_rank")) read_mla(r, m);
  const HfDefaults& d = family.defaults;
  const bool own_defaults = type == family.model_type;
  const auto fill = [&](const char* key, int64_t& field, int64_t fallback) {
    if (field != 0 || fallback == 0) return;
    const std::string k = key;
    if (!own_defaults && (k == "hidden_size" || k == "num_hidden_layers" || k == "num_attention_heads"))
      return r.fail(key, "",
                    "required key is missing: model_type " + type + " is read as " + family.model_type +
                        ", whose defaults need not be this configuration's");
    field = fallback;
    const std::string other = other_spelling(r, key);
    m.notes.push_back(r.path(key) + " is absent: transformers' default for " + family.model_type + ", " +
                      std::to_string(fallback) +
                      (other.empty() ? "" : " (the file's " + other + " is not a key transformers reads for it)"));
  };
  fill("vocab_size", m.vocab_size, d.vocab_size);
  fill("hidden_size", m.hidden_size, d.hidden_size);
  fill("intermediate_size", m.intermediate_size, d.intermediate_size);
  fill("num_hidden_layers", m.num_hidden_layers, d.num_hidden_layers);
  fill("num_attention_heads", m.num_attention_heads, d.num_attention_heads);
  // a null num_key_value_heads is multi-head attention (noted above), not the class default
  if (!r.object.contains("num_key_value_heads"))
    fill("num_key_value_heads", m.num_key_value_heads, d.num_key_value_heads);
  if (m.attention() == AttentionKind::gqa) fill("head_dim", m.head_dim, d.head_dim);
  // transformers' attention takes hidden_size // num_attention_heads where head_dim is absent, even
  // where the heads do not divide hidden_size (GLM-4-MoE's config class defaults: 4096 / 96)
  if (m.attention() == AttentionKind::gqa && m.head_dim == 0 && m.num_attention_heads > 0 && m.hidden_size > 0 &&
      m.hidden_size % m.num_attention_heads != 0) {
    m.head_dim = m.hidden_size / m.num_attention_heads;
    m.notes.push_back(r.path("head_dim") +
                      " is absent and num_attention_heads does not divide hidden_size: " + std::to_string(m.head_dim) +
                      " = hidden_size // num_attention_heads, as transformers computes it");
  }
}

void require_dimensions(HfJsonReader& r, const ModelSpec& m) {
  const std::pair<const char*, int64_t> dims[] = {{"hidden_size", m.hidden_size},
                                                  {"num_attention_heads", m.num_attention_heads},
                                                  {"vocab_size", m.vocab_size},
                                                  {"num_hidden_layers", m.num_hidden_layers}};
  for (const auto& [key, value] : dims) {
    if (value != 0 || r.has(key)) continue;
    const std::string other = other_spelling(r, key);
    r.fail(key, "",
           "required key is missing" + (other.empty() ? "" : " (the file's " + other + " is another spelling)"));
  }
}

// The dense MLP's width, needed only where some layer has one (Qwen3.5-MoE's text config has
// no intermediate_size: every layer is MoE, and the experts' width stands in for it).
void require_dense_width(HfJsonReader& r, ModelSpec& m) {
  if (m.intermediate_size != 0 || r.has("intermediate_size")) return;
  const int64_t layers = std::min(m.num_hidden_layers, limits::kLayers);
  bool dense = false;
  for (int64_t i = 0; i < layers && !dense; ++i) dense = m.has_ffn(i) && !m.layer_is_moe(i);
  if (dense || m.moe_intermediate_size < 1) return r.fail("intermediate_size", "", "required key is missing");
  m.intermediate_size = m.moe_intermediate_size;
}

}  // namespace

ModelSpec parse_hf_config(const std::string& text, const std::string& file) {
  const json root = parse_json_object(text, file, true);
  std::vector<Problem> problems;
  HfJsonReader top{root, file, "", problems};
  const std::string outer_type = top.text("model_type");
  const std::vector<std::string> archs = top.text_list("architectures");
  throw_if(problems);
  if (outer_type.empty() && archs.empty())
    throw InputError({{file, "model_type", "", "required key is missing (remat picks the architecture by it)"}});
  if (const std::string why = hf_refusal_reason(outer_type); !why.empty()) refuse(file, "model_type", outer_type, why);

  const std::string nest = nested_key(root, outer_type);
  const bool nested = !nest.empty();
  const std::string minicpmv_type = minicpmv_text_model_type(root, outer_type, file);
  const std::string flat_text_type = nested || !root.contains("hidden_size") ? std::string()
                                     : !minicpmv_type.empty()                ? minicpmv_type
                                                                             : flat_text_model_type(outer_type);
  if (is_hf_text_config_wrapper(outer_type) && !nested && flat_text_type.empty())
    throw InputError({{file, "text_config", root.contains("text_config") ? root["text_config"].dump() : "",
                       "must be the language model's configuration (an object) for model_type " + outer_type}});
  const std::string prefix = nested ? nest + "." : "";
  std::vector<std::string> consulted;  // the language model's keys some reader asked for
  HfJsonReader r{nested ? nested_object(root, nest) : root, file, prefix, problems, &consulted};
  if (!nested) top.consulted = &consulted;  // the same object
  std::string type = nested ? r.text("model_type") : flat_text_type.empty() ? outer_type : flat_text_type;
  throw_if(problems);
  if (nested && type.empty() && !r.object.contains("model_type")) type = wrapper_text_model_type(outer_type);
  if (nested && type.empty()) throw InputError({{file, r.path("model_type"), "", "required key is missing"}});
  if (const std::string why = hf_refusal_reason(type); !why.empty()) refuse(file, r.path("model_type"), type, why);
  ModelSpec m;
  if (nested && !r.object.contains("model_type"))
    m.notes.push_back(r.path("model_type") + " is absent: read as " + type + ", the text config transformers' " +
                      outer_type + " builds");
  const HfFamily* family = resolve_family(r, type, nested ? r.text_list("architectures") : archs, m);
  if (!minicpmv_type.empty()) top.mark_read("version");
  if (!minicpmv_type.empty()) note_minicpmv_language_model(minicpmv_type, m);
  if (const std::string ignoring = flat_text_ignoring_class(outer_type); !ignoring.empty() && !flat_text_type.empty())
    m.notes.push_back("model_type " + outer_type +
                      " without text_config: the language model's keys at the top are read as " + flat_text_type +
                      "; transformers 5.17's " + ignoring +
                      " reads text_config only, and from this file builds its default language model");
  refuse_layer_mixes(r, family ? family->hybrid : HfHybrid::none);
  if (nested) refuse_layer_mixes(top, HfHybrid::none);
  if (!family && nested && is_hf_text_config_wrapper(type))
    refuse(file, r.path("model_type"), type, "a multimodal wrapper inside " + nest);
  if (!family) refuse_unknown(file, r.path("model_type"), type, archs, root.contains("auto_map"));
  m.name = top.text("_name_or_path");
  if (m.name.empty()) m.name = name_from_file(file, outer_type.empty() ? type : outer_type);
  m.source = file;
  read_dimensions(r, m, *family, type);
  if (family->layer) family->layer(r, m);
  read_embedding_dropout(r, m, family->model_type);
  // transformers' eager_attention_forward drops the probabilities by config.attention_dropout in
  // training; families with their own key read it above
  if (m.attention_dropout == 0 && r.has("attention_dropout") && r.object[r.spelled("attention_dropout")].is_number())
    read_probability(r, "attention_dropout", m.attention_dropout);
  refuse_sparse_attention_keys(r, m);
  refuse_unbuilt_construct_keys(r, m, family->experts);
  throw_if(problems);  // a construct the family's reader refuses (Nemotron-H's MoE blocks) before its keys
  if (m.mlp_kind == MlpKind::gated)  // SwiGLU, GeGLU (Gemma's hidden_activation): for the Megatron-LM flags
    for (const char* key : {"hidden_act", "hidden_activation", "activation_function"})
      if (const std::string act = r.text(key); !act.empty()) m.hidden_act = act;
  require_dimensions(r, m);
  // A multimodal model ties its head by the outer config's flag (transformers 5's wrapper classes:
  // a tied top level over an untied text_config builds a tied head), else the class's default.
  m.tie_word_embeddings = family->tie_word_embeddings;
  if (nested) r.boolean("tie_word_embeddings", m.tie_word_embeddings);
  if (nested) m.tie_word_embeddings = wrapper_ties_head(outer_type, m.tie_word_embeddings);
  top.boolean("tie_word_embeddings", m.tie_word_embeddings);
  read_experts(r, m, *family, type);
  // PEFT reads model.config.model_type: the file's own, a wrapper's where the file is one
  m.experts_peft_converted = peft_converts_expert_targets(outer_type.empty() ? type : outer_type);
  require_dense_width(r, m);
  read_mtp(r, m, *family);
  read_windowed_attention(r, m, type, r.text_list("layer_types"));
  r.number("final_logit_softcapping", m.final_logit_softcap);  // Gemma 2 and 4: tanh on the logits
  read_numerics(r, m, *family);
  note_quantized(top, r, m);
  // a nested language model's wrapper, a flat one with its tower beside the keys (Qwen2.5-VL), or
  // a wrapper's flat file whose config class builds its tower all the same: LLaVA's original (LlavaConfig's
  // default tower), GLM-4.1V's (Glm4vConfig's, from vision_config)
  const bool flat_tower =
      !flat_text_type.empty() && (outer_type == "llava" || outer_type == "glm4v" || outer_type == "glm4v_moe");
  if (nested || family->vision_tower_beside || flat_tower) {
    m.idle_params = vision_tower_params(top, outer_type, m.hidden_size, m.tower_linear_modules);
    apply_wrapper_causal_lm(outer_type, m);
    note_peft_refused_tower_modules(top, outer_type, m);
  }
  note_vision_tower(m, *family, type, nest, root);
  if (!nested && !family->vision_tower_beside && minicpmv_type.empty()) note_flat_encoders(top, m);
  note_unread_keys(r, consulted, m);
  refuse_bidirectional(r);
  throw_if(problems);
  set_linear_modules(family->model_type, m);
  if (m.num_key_value_heads == 0) m.num_key_value_heads = m.num_attention_heads;
  auto checks = validate_model(m, file);
  throw_if(checks);
  return m;
}

}  // namespace remat
