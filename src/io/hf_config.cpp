// Hugging Face config.json: model_type picks a family from the table in
// hf_families.cpp, which says how that family spells its dimensions and
// experts; a multimodal wrapper's language model is its text_config. Anything
// that changes the model and that remat cannot represent is refused by name;
// keys that do not change it (dropout, rope scaling, token ids) are ignored.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <string>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"
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

// model_type refused by name, or not in the table: both end here.
void refuse_unless_known(const std::string& file, const std::string& key, const std::string& type) {
  const std::string why = hf_refusal_reason(type);
  if (!why.empty()) refuse(file, key, type, why);
  if (!find_hf_family(type) && !is_hf_text_config_wrapper(type))
    refuse(file, key, type, "model_type not in remat's table of families (src/io/hf_families.cpp)");
}

// Keys that give layers different structures: refused in any family.
void refuse_layer_mixes(HfJsonReader& r) {
  for (const char* key : {"block_configs", "hybrid_override_pattern"})
    if (r.has(key)) refuse(r.file, r.path(key), "", "layers of different kinds (" + std::string(key) + ")");
  bool encoder_decoder = false;
  r.boolean("is_encoder_decoder", encoder_decoder);
  if (encoder_decoder) refuse(r.file, r.path("is_encoder_decoder"), "true", "an encoder-decoder model");
  for (const std::string& kind : r.text_list("layer_types"))
    if (kind != "full_attention" && kind != "sliding_attention" && kind != "chunked_attention")
      refuse(r.file, r.path("layer_types"), kind,
             "layer_types has " + kind + " layers; remat models attention layers only");
}

void read_top_k(HfJsonReader& r, ModelSpec& m) {
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

// Qwen2-MoE / Qwen3-MoE: layer i is MoE when (i + 1) % decoder_sparse_step == 0
// and i is not in mlp_only_layers (transformers' Qwen2MoeDecoderLayer).
void read_qwen_experts(HfJsonReader& r, ModelSpec& m) {
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
  r.integer("shared_expert_intermediate_size", shared, false);
  if (shared > 0 && m.moe_intermediate_size > 0) {
    if (shared % m.moe_intermediate_size != 0)
      r.fail("shared_expert_intermediate_size", std::to_string(shared),
             "must be a multiple of moe_intermediate_size = " + std::to_string(m.moe_intermediate_size));
    m.n_shared_experts = shared / m.moe_intermediate_size;
  }
}

// Llama 4: routed experts of intermediate_size plus one shared expert of the
// same size; the dense layers' MLP is intermediate_size_mlp; MoE every
// interleave_moe_layer_step-th layer ((i + 1) % step == 0) or the moe_layers list.
void read_llama4_experts(HfJsonReader& r, ModelSpec& m) {
  r.integer("num_local_experts", m.n_routed_experts, true);
  m.moe_intermediate_size = m.intermediate_size;
  r.integer("intermediate_size_mlp", m.intermediate_size, true);
  m.n_shared_experts = 1;
  m.moe_layer_rule = MoeLayerRule::every_step;
  r.integer("interleave_moe_layer_step", m.moe_layer_freq, false);
  if (m.moe_layer_freq < 1)
    r.fail("interleave_moe_layer_step", std::to_string(m.moe_layer_freq), "must be a positive integer");
  std::vector<int64_t> moe_layers;
  r.integer_list("moe_layers", moe_layers);
  if (!r.has("moe_layers")) return;
  m.moe_layer_freq = 1;
  std::sort(moe_layers.begin(), moe_layers.end());
  refuse_layers_outside(r, "moe_layers", moe_layers, m.num_hidden_layers);
  for (int64_t i = 0; i < std::min(m.num_hidden_layers, limits::kLayers); ++i)
    if (!std::binary_search(moe_layers.begin(), moe_layers.end(), i)) m.dense_mlp_layers.push_back(i);
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

void read_experts(HfJsonReader& r, ModelSpec& m, HfExperts kind, const std::string& type) {
  switch (kind) {
    case HfExperts::none:
      return refuse_expert_keys(r, type);
    case HfExperts::mixtral:
      r.integer("num_local_experts", m.n_routed_experts, true);
      refuse_no_experts(r, "num_local_experts", m, type);
      m.moe_intermediate_size = m.intermediate_size;
      break;
    case HfExperts::olmoe:
      r.integer("num_experts", m.n_routed_experts, true);
      refuse_no_experts(r, "num_experts", m, type);
      m.moe_intermediate_size = m.intermediate_size;
      break;
    case HfExperts::qwen:
      read_qwen_experts(r, m);
      refuse_no_experts(r, "num_experts", m, type);
      break;
    case HfExperts::deepseek:
      r.integer("n_routed_experts", m.n_routed_experts, false);
      refuse_no_experts(r, "n_routed_experts", m, type);
      r.integer("moe_intermediate_size", m.moe_intermediate_size, false);
      r.integer("n_shared_experts", m.n_shared_experts, false);
      r.integer("first_k_dense_replace", m.first_k_dense_replace, false);
      r.integer("moe_layer_freq", m.moe_layer_freq, false);
      r.integer("num_nextn_predict_layers", m.num_nextn_predict_layers, false);
      break;
    case HfExperts::llama4:
      read_llama4_experts(r, m);
      refuse_no_experts(r, "num_local_experts", m, type);
      break;
  }
  read_top_k(r, m);
}

void read_mla(HfJsonReader& r, ModelSpec& m) {
  r.integer("q_lora_rank", m.q_lora_rank, false);  // null: no query compression
  r.integer("kv_lora_rank", m.kv_lora_rank, true);
  r.integer("qk_rope_head_dim", m.qk_rope_head_dim, true);
  r.integer("qk_nope_head_dim", m.qk_nope_head_dim, true);
  r.integer("v_head_dim", m.v_head_dim, true);
  m.head_dim = 0;
}

// A window shorter than the context: flash attention's memory is the same, its
// FLOPs over the window are fewer; remat counts the full causal sequence.
void note_windowed_attention(HfJsonReader& r, ModelSpec& m, const std::vector<std::string>& layer_types) {
  int64_t window = 0, chunk = 0, context = 0;
  bool used = true;
  r.integer("sliding_window", window, false);
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
      "when --seq is longer); memory is unchanged under flash attention";
  const bool any_sliding =
      layer_types.empty() || std::count(layer_types.begin(), layer_types.end(), "sliding_attention");
  if (window > 0 && used && any_sliding && (context <= 0 || window < context))
    m.notes.push_back(r.path("sliding_window") + " = " + std::to_string(window) + " on " +
                      layers_of("sliding_attention") + cost);
  if (chunk > 0 && (context <= 0 || chunk < context))
    m.notes.push_back(r.path("attention_chunk_size") + " = " + std::to_string(chunk) + " on " +
                      layers_of("chunked_attention") + cost);
}

// Only DeepSeek's MTP modules are modelled.
void refuse_mtp(HfJsonReader& r) {
  int64_t mtp = 0;
  r.integer("num_nextn_predict_layers", mtp, false);
  if (mtp > 0)
    refuse(r.file, r.path("num_nextn_predict_layers"), std::to_string(mtp),
           "multi-token prediction layers outside the DeepSeek family");
}

void note_vision_tower(ModelSpec& m, const HfFamily& family, const std::string& type, bool nested) {
  if (nested) {
    m.name += " (language model: text_config)";
    m.notes.push_back("text_config is the language model (" + type +
                      "); the vision tower and projector are not counted");
  } else if (family.vision_tower_beside) {
    m.notes.push_back("the language model's keys are read (" + type +
                      "); the vision tower (vision_config) is not counted");
  }
}

void read_dimensions(HfJsonReader& r, ModelSpec& m) {
  r.integer("hidden_size", m.hidden_size, true);
  r.integer("intermediate_size", m.intermediate_size, true);
  r.integer("num_attention_heads", m.num_attention_heads, true);
  r.integer("num_key_value_heads", m.num_key_value_heads, false);
  if (r.has("num_key_value_heads") && m.num_key_value_heads < 1)
    r.fail("num_key_value_heads", std::to_string(m.num_key_value_heads),
           "must be a positive integer (leave it out, or null, for multi-head attention)");
  else if (r.object.contains("num_key_value_heads") && !r.has("num_key_value_heads"))
    m.notes.push_back(r.path("num_key_value_heads") +
                      " is null: read as num_attention_heads (multi-head attention), as transformers does");
  r.integer("head_dim", m.head_dim, false);
  r.integer("vocab_size", m.vocab_size, true);
  r.integer("num_hidden_layers", m.num_hidden_layers, true);
  if (r.has("kv_lora_rank")) read_mla(r, m);
}

}  // namespace

ModelSpec parse_hf_config(const std::string& text, const std::string& file) {
  const json root = parse_json_object(text, file, true);
  std::vector<Problem> problems;
  HfJsonReader top{root, file, "", problems};
  const std::string outer_type = top.text("model_type");
  throw_if(problems);
  if (outer_type.empty())
    throw InputError({{file, "model_type", "", "required key is missing (remat picks the architecture by it)"}});
  refuse_unless_known(file, "model_type", outer_type);

  const bool nested = is_hf_text_config_wrapper(outer_type);
  if (nested && !(root.contains("text_config") && root["text_config"].is_object()))
    throw InputError({{file, "text_config", root.contains("text_config") ? root["text_config"].dump() : "",
                       "must be the language model's configuration (an object) for model_type " + outer_type}});
  HfJsonReader r{nested ? root["text_config"] : root, file, nested ? "text_config." : "", problems};
  const std::string type = nested ? r.text("model_type") : outer_type;
  throw_if(problems);
  if (type.empty()) throw InputError({{file, r.path("model_type"), "", "required key is missing"}});
  if (nested) refuse_unless_known(file, r.path("model_type"), type);
  const HfFamily* family = find_hf_family(type);
  if (!family) refuse(file, r.path("model_type"), type, "a multimodal wrapper inside text_config");
  refuse_layer_mixes(r);
  if (nested) refuse_layer_mixes(top);

  ModelSpec m;
  m.name = top.text("_name_or_path");
  if (m.name.empty()) m.name = outer_type;
  m.source = file;
  read_dimensions(r, m);
  m.tie_word_embeddings = family->tie_word_embeddings;
  top.boolean("tie_word_embeddings", m.tie_word_embeddings);
  if (nested) r.boolean("tie_word_embeddings", m.tie_word_embeddings);
  read_experts(r, m, family->experts, type);
  if (family->experts != HfExperts::deepseek) refuse_mtp(r);
  note_windowed_attention(r, m, r.text_list("layer_types"));
  note_vision_tower(m, *family, type, nested);
  throw_if(problems);
  if (m.num_key_value_heads == 0) m.num_key_value_heads = m.num_attention_heads;
  auto checks = validate_model(m, file);
  throw_if(checks);
  return m;
}

}  // namespace remat
