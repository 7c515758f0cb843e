#pragma once
// Built-in specs for tests.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "remat/io/spec_loader.hpp"
#include "remat/spec/validate.hpp"

namespace remat::test {

// A file's whole contents ("" when it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The first problem's line of a config.json (labelled t.json) the loader refuses; "" when it loads.
inline std::string rejection_of(const std::string& json) {
  try {
    parse_hf_config(json, "t.json");
  } catch (const InputError& e) {
    return e.problems().front().line();
  }
  return "";
}

// Every problem's line of a config.json (labelled `label`) the loader refuses, one per line; "" when it loads.
inline std::string hf_rejection(const std::string& text, const std::string& label) {
  try {
    parse_hf_config(text, label);
  } catch (const InputError& e) {
    std::string lines;
    for (const auto& p : e.problems()) lines += (lines.empty() ? "" : "\n") + p.line();
    return lines;
  }
  return "";
}

// The layers of a model that are MoE, in order.
inline std::vector<int64_t> moe_layers(const ModelSpec& m) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < m.num_hidden_layers; ++i)
    if (m.layer_is_moe(i)) out.push_back(i);
  return out;
}

inline ModelSpec model(const std::string& name) { return load_model(read_spec_source(name, "models")); }
inline HardwareSpec hardware(const std::string& name) { return load_hardware(read_spec_source(name, "hardware")); }

// A small dense model: h 1024, 8 heads of 128, 2 kv heads, SwiGLU 3584, vocab 32000.
inline ModelSpec small_dense(int64_t layers) {
  ModelSpec m;
  m.name = "small-dense";
  m.hidden_size = 1024, m.intermediate_size = 3584, m.num_attention_heads = 8, m.num_key_value_heads = 2;
  m.head_dim = 128, m.vocab_size = 32000, m.num_hidden_layers = layers;
  return m;
}

inline TrainingSpec layout(int64_t tp, int64_t pp, int64_t dp, int64_t ep, int64_t mbs, int64_t seq) {
  TrainingSpec t;
  t.tp = tp, t.pp = pp, t.dp = dp, t.ep = ep, t.mbs = mbs, t.seq = seq;
  return with_defaults(t);
}

}  // namespace remat::test
