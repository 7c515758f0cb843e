#include "hf_json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace remat {

namespace {

// The JSON value as an int64, or false (out of range, fractional, not a number).
bool as_integer(const nlohmann::json& v, int64_t& out) {
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) return false;
  if (v.is_number_integer()) {
    out = v.get<int64_t>();
    return true;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e18) {
      out = int64_t(d);
      return true;
    }
  }
  return false;
}

// Names of one setting across families and transformers versions (the config classes'
// attribute_map); a file that spells it one way is read under any of them.
const std::vector<std::vector<const char*>> kSpellings = {
    {"num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"},
    {"num_experts_per_tok", "moe_topk", "moe_k", "num_experts_per_token", "moe_top_k"},
    {"num_key_value_heads", "num_attention_groups"},  // Step 3.5
    {"partial_rotary_factor", "rope_pct"},            // StableLM's remote code
    {"layer_types", "layers_block_type"},
    {"n_shared_experts", "num_shared_experts"},     // EXAONE MoE, AFMoE, HY-V3
    {"first_k_dense_replace", "num_dense_layers"},  // AFMoE
    // Nemotron-H's older Mamba key names, which NemotronHConfig still reads
    {"n_groups", "mamba_n_groups"},
    {"conv_kernel", "mamba_d_conv"},
    {"chunk_size", "mamba_chunk_size"},
    {"use_conv_bias", "mamba_conv_bias"},
};

bool present(const nlohmann::json& object, const char* key) { return object.contains(key) && !object[key].is_null(); }

}  // namespace

const char* HfJsonReader::spelled(const char* key) const {
  const char* name = key;
  if (!present(object, key))
    for (const auto& names : kSpellings)
      if (std::find_if(names.begin(), names.end(), [&](const char* n) { return std::strcmp(n, key) == 0; }) !=
          names.end())
        for (const char* other : names)
          if (name == key && present(object, other)) name = other;
  if (consulted && object.contains(name)) consulted->push_back(name);
  return name;
}

void HfJsonReader::integer(const char* key_asked, int64_t& out, bool required) {
  const char* key = spelled(key_asked);
  if (!has(key)) {
    if (required && object.contains(key))
      fail(key, "null", "must be an integer (null leaves it unset: the model cannot be built without it)");
    else if (required)
      fail(key, "", "required key is missing");
    return;
  }
  const nlohmann::json& v = object[key];
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
    return fail(key, v.dump(), "is out of range for an integer");
  if (!as_integer(v, out)) fail(key, v.dump(), "must be an integer");
}

std::string HfJsonReader::text(const char* key_asked) {
  const char* key = spelled(key_asked);
  if (!has(key)) return "";
  if (object[key].is_string()) return object[key].get<std::string>();
  fail(key, object[key].dump(), "must be a string");
  return "";
}

void HfJsonReader::boolean(const char* key_asked, bool& out) {
  const char* key = spelled(key_asked);
  if (!has(key)) return;
  if (object[key].is_boolean())
    out = object[key].get<bool>();
  else
    fail(key, object[key].dump(), "must be true or false");
}

void HfJsonReader::number(const char* key_asked, double& out) {
  const char* key = spelled(key_asked);
  if (!has(key)) return;
  const nlohmann::json& v = object[key];
  if (v.is_number() && std::isfinite(v.get<double>()))
    out = v.get<double>();
  else
    fail(key, v.dump(), "must be a finite number");
}

void HfJsonReader::integer_list(const char* key_asked, std::vector<int64_t>& out) {
  const char* key = spelled(key_asked);
  if (!has(key)) return;
  const nlohmann::json& v = object[key];
  std::vector<int64_t> values;
  int64_t x = 0;
  for (size_t i = 0; v.is_array() && i < v.size(); ++i) {
    if (!as_integer(v[i], x)) return fail(key, v.dump(), "must be a list of integers");
    values.push_back(x);
  }
  if (!v.is_array()) return fail(key, v.dump(), "must be a list of integers");
  out = values;
}

std::vector<std::string> HfJsonReader::text_list(const char* key_asked) {
  const char* key = spelled(key_asked);
  std::vector<std::string> values;
  if (!has(key)) return values;
  const nlohmann::json& v = object[key];
  for (size_t i = 0; v.is_array() && i < v.size(); ++i) {
    if (!v[i].is_string()) {
      fail(key, v.dump(), "must be a list of strings");
      return {};
    }
    values.push_back(v[i].get<std::string>());
  }
  if (!v.is_array()) fail(key, v.dump(), "must be a list of strings");
  return values;
}

}  // namespace remat
