// Hugging Face config.json: the keys remat uses, per model_type; the rest is ignored.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <string>

#include "json_document.hpp"
#include "remat/io/spec_loader.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

using nlohmann::json;

struct JsonReader {
  const json& root;
  std::string file;
  std::vector<Problem> problems;

  bool has(const char* key) const { return root.contains(key) && !root[key].is_null(); }

  void integer(const char* key, int64_t& out, bool required) {
    if (!has(key)) {
      if (required) problems.push_back({file, key, "", "required key is missing"});
      return;
    }
    const json& v = root[key];
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) {
      problems.push_back({file, key, v.dump(), "is out of range for an integer"});
      return;
    }
    if (v.is_number_integer()) {
      out = v.get<int64_t>();
      return;
    }
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e18) {
        out = int64_t(d);
        return;
      }
    }
    problems.push_back({file, key, v.dump(), "must be an integer"});
  }
  // A string key, "" when absent; a key of another type is a problem
  // (json::value() would throw a type_error here).
  std::string text(const char* key) {
    if (!has(key)) return "";
    if (root[key].is_string()) return root[key].get<std::string>();
    problems.push_back({file, key, root[key].dump(), "must be a string"});
    return "";
  }
  void boolean(const char* key, bool& out) {
    if (!has(key)) return;
    if (root[key].is_boolean())
      out = root[key].get<bool>();
    else
      problems.push_back({file, key, root[key].dump(), "must be true or false"});
  }
};

void read_moe(JsonReader& r, ModelSpec& m, const std::string& type) {
  if (type == "mixtral") {  // every layer MoE; intermediate_size is the expert size
    r.integer("num_local_experts", m.n_routed_experts, true);
    m.moe_intermediate_size = m.intermediate_size;
  } else if (type == "qwen2_moe" || type == "qwen3_moe") {
    r.integer("num_experts", m.n_routed_experts, true);
    r.integer("moe_intermediate_size", m.moe_intermediate_size, true);
    r.integer("decoder_sparse_step", m.moe_layer_freq, false);
    int64_t shared = 0;
    r.integer("shared_expert_intermediate_size", shared, false);
    if (shared > 0 && m.moe_intermediate_size > 0) m.n_shared_experts = shared / m.moe_intermediate_size;
  } else {  // deepseek_v2 / deepseek_v3
    r.integer("n_routed_experts", m.n_routed_experts, false);
    r.integer("moe_intermediate_size", m.moe_intermediate_size, false);
    r.integer("n_shared_experts", m.n_shared_experts, false);
    r.integer("first_k_dense_replace", m.first_k_dense_replace, false);
    r.integer("moe_layer_freq", m.moe_layer_freq, false);
  }
  r.integer("num_experts_per_tok", m.num_experts_per_tok, m.n_routed_experts > 0);
}

}  // namespace

ModelSpec parse_hf_config(const std::string& text, const std::string& file) {
  const json root = parse_json_object(text, file);
  JsonReader r{root, file, {}};
  ModelSpec m;
  const std::string type = r.text("model_type");
  m.name = r.text("_name_or_path");
  if (m.name.empty()) m.name = type.empty() ? std::string("hf-model") : type;
  m.source = file;
  r.integer("hidden_size", m.hidden_size, true);
  r.integer("intermediate_size", m.intermediate_size, true);
  r.integer("num_attention_heads", m.num_attention_heads, true);
  r.integer("num_key_value_heads", m.num_key_value_heads, false);
  r.integer("head_dim", m.head_dim, false);
  r.integer("vocab_size", m.vocab_size, true);
  r.integer("num_hidden_layers", m.num_hidden_layers, true);
  r.boolean("tie_word_embeddings", m.tie_word_embeddings);
  if (r.has("kv_lora_rank")) {
    r.integer("q_lora_rank", m.q_lora_rank, false);  // null: no query compression
    r.integer("kv_lora_rank", m.kv_lora_rank, true);
    r.integer("qk_rope_head_dim", m.qk_rope_head_dim, true);
    r.integer("qk_nope_head_dim", m.qk_nope_head_dim, true);
    r.integer("v_head_dim", m.v_head_dim, true);
    m.head_dim = 0;
  }
  if (r.has("n_routed_experts") || r.has("num_local_experts") || r.has("num_experts")) read_moe(r, m, type);
  if (!r.problems.empty()) throw InputError(std::move(r.problems));
  if (m.num_key_value_heads == 0) m.num_key_value_heads = m.num_attention_heads;
  auto checks = validate_model(m, file);
  if (!checks.empty()) throw InputError(std::move(checks));
  return m;
}

}  // namespace remat
