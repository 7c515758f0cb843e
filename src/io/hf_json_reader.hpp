// Reading the keys of one JSON object (a config.json or its text_config) into
// ModelSpec fields; every wrong type is a problem naming the key path.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "remat/spec/problems.hpp"

namespace remat {

struct HfJsonReader {
  const nlohmann::json& object;
  std::string file;
  std::string prefix;  // "" or "text_config."
  std::vector<Problem>& problems;
  // where set, every key of `object` a reader asks for, under the name the file spells it
  std::vector<std::string>* consulted = nullptr;

  std::string path(const char* key) const { return prefix + spelled(key); }
  // The key as this file spells it: `key`, or where it is absent one of its other names (a
  // config class's attribute_map: transformers 5 saves Qwen3-MoE's num_experts as
  // num_local_experts, Hunyuan's num_local_experts as num_experts).
  const char* spelled(const char* key) const;
  bool has(const char* key) const {
    const char* k = spelled(key);
    return object.contains(k) && !object[k].is_null();
  }
  // Records `key` as asked for (no longer named among the unread keys) where the loader takes its
  // meaning another way, or knows it builds nothing from it.
  void mark_read(const char* key) const { (void)spelled(key); }
  void fail(const char* key, const std::string& value, const std::string& message) {
    problems.push_back({file, path(key), value, message});
  }
  // An integer key; absent and required is a problem, absent and optional leaves `out`.
  void integer(const char* key, int64_t& out, bool required);
  // A string key, "" when absent.
  std::string text(const char* key);
  void boolean(const char* key, bool& out);
  // A number key (partial_rotary_factor); absent leaves `out`.
  void number(const char* key, double& out);
  // A list of integers (mlp_only_layers, moe_layers); absent leaves `out`.
  void integer_list(const char* key, std::vector<int64_t>& out);
  // A list of strings (layer_types); absent gives an empty list.
  std::vector<std::string> text_list(const char* key);
};

}  // namespace remat
