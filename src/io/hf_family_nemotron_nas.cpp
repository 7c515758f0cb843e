// Nemotron-NAS (model_type nemotron-nas: NVIDIA's Llama-3.1/3.3-Nemotron 51B, Super 49B and Ultra
// 253B, DeciLM's remote code modeling_decilm.py) and DeciLM-7B (model_type deci): LLaMA layers
// whose shapes differ layer by layer.
//
// Nemotron-NAS's block_configs give each layer its attention and its FFN (DeciLMDecoderLayer):
// - attention: no_op (no input norm, no attention), or n_heads_in_group query heads per key/value
//   head (num_key_value_heads = num_attention_heads / n_heads_in_group);
// - ffn: no_op (no post-attention norm, no MLP), or a SwiGLU MLP of ffn_mult, its width
//   _ffn_mult_to_intermediate_size: int(2 * ffn_mult * hidden_size / 3) rounded up to 256.
// Their linear replacements, sink or window attention, sparsified and Mamba/MoE blocks are refused
// by name. DeciLM-7B's num_key_value_heads_per_layer gives each layer its key/value heads.
#include <cmath>
#include <string>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

using nlohmann::json;

// DeciLM's _ffn_mult_to_intermediate_size, in Python's order of operations.
int64_t ffn_mult_width(double ffn_mult, int64_t hidden) {
  const auto width = int64_t(2 * ffn_mult * double(hidden) / 3);
  return width % 256 == 0 ? width : width + 256 - width % 256;
}

bool set(const json& object, const char* key) {
  return object.contains(key) && !object[key].is_null() && !(object[key].is_boolean() && !object[key].get<bool>());
}

// A block's key that asks for a construct remat has no block for: refused by name.
void refuse_variant(HfJsonReader& part, const char* key, const std::string& construct) {
  if (set(part.object, key)) part.fail(key, part.object[key].dump(), "is not a model remat can build: " + construct);
}

// Keys remat reads or refuses; any other key set in a block is refused (an unknown variant).
void refuse_unknown_keys(HfJsonReader& part, std::initializer_list<const char*> known) {
  for (const auto& [key, value] : part.object.items()) {
    bool listed = false;
    for (const char* k : known) listed = listed || key == k;
    if (!listed && set(part.object, key.c_str()))
      part.fail(key.c_str(), value.dump(), "is not a model remat can build: a block variant remat does not know");
  }
}

// One block's attention: its key/value heads, or 0 without attention (no_op).
int64_t block_kv_heads(HfJsonReader& a, const ModelSpec& m) {
  const size_t problems_before = a.problems.size();
  refuse_variant(a, "replace_with_linear", "attention replaced by one linear layer");
  refuse_variant(a, "window_length", "sliding-window attention in some layers of block_configs");
  refuse_variant(a, "num_sink_tokens", "attention sink tokens");
  refuse_variant(a, "sparsify", "sparsified attention weights");
  refuse_variant(a, "mamba", "Mamba layers in block_configs");
  refuse_variant(a, "llama4", "Llama 4 attention in block_configs");
  refuse_unknown_keys(a, {"no_op", "n_heads_in_group", "replace_with_linear", "window_length", "num_sink_tokens",
                          "sparsify", "mamba", "llama4", "unshifted_sink", "use_prefill_window_in_sink_attention"});
  bool no_op = false;
  a.boolean("no_op", no_op);
  if (no_op || a.problems.size() > problems_before) return 0;  // refused: nothing more to say
  int64_t group = 0;
  a.integer("n_heads_in_group", group, true);
  if (a.problems.size() > problems_before) return 0;  // missing or not an integer: said once
  if (group < 1 || m.num_attention_heads % group != 0) {
    if (a.has("n_heads_in_group"))
      a.fail("n_heads_in_group", std::to_string(group),
             "must be a positive divisor of num_attention_heads = " + std::to_string(m.num_attention_heads));
    return 0;
  }
  return m.num_attention_heads / group;
}

// One block's MLP width, or 0 without an MLP (no_op).
int64_t block_mlp_width(HfJsonReader& f, const ModelSpec& m) {
  const size_t problems_before = f.problems.size();
  refuse_variant(f, "replace_with_linear", "an MLP replaced by one linear layer");
  refuse_variant(f, "sparsify", "sparsified MLP weights");
  refuse_variant(f, "moe", "mixture-of-experts blocks in block_configs");
  refuse_unknown_keys(
      f, {"no_op", "ffn_mult", "intermediate_size", "replace_with_linear", "sparsify", "moe", "hidden_act"});
  if (const std::string act = f.text("hidden_act"); !act.empty() && act != m.hidden_act)
    f.fail("hidden_act", act,
           "is not a model remat can build: an MLP activation other than the model's " + m.hidden_act);
  bool no_op = false;
  f.boolean("no_op", no_op);
  if (no_op || f.problems.size() > problems_before) return 0;
  int64_t width = 0;
  if (f.has("intermediate_size")) {
    f.integer("intermediate_size", width, true);
  } else {
    double ffn_mult = 0;
    f.number("ffn_mult", ffn_mult);
    if (!f.has("ffn_mult")) f.fail("ffn_mult", "", "required key is missing (or intermediate_size)");
    if (ffn_mult > 0 && std::isfinite(ffn_mult) && ffn_mult < 1e6) width = ffn_mult_width(ffn_mult, m.hidden_size);
  }
  if (width < 1 && f.problems.size() == problems_before)
    f.fail(f.has("intermediate_size") ? "intermediate_size" : "ffn_mult", "", "must give a positive MLP width");
  return width;
}

// The layers as block_configs lists them: mixers, feed-forwards and variants.
void set_block_layers(ModelSpec& m, const std::vector<int64_t>& kv_heads, const std::vector<int64_t>& widths) {
  const size_t n = kv_heads.size();
  for (size_t i = 0; i < n; ++i) {
    if (kv_heads[i] > 0 && m.num_key_value_heads == 0) m.num_key_value_heads = kv_heads[i];
    if (widths[i] > 0 && m.intermediate_size == 0) m.intermediate_size = widths[i];
  }
  if (m.num_key_value_heads == 0) m.num_key_value_heads = m.num_attention_heads;  // no layer attends
  if (m.intermediate_size == 0) m.intermediate_size = m.hidden_size;              // no layer has an MLP: never read
  bool all_attend = true, all_ffn = true;
  std::vector<LayerVariant> variants(n);
  for (size_t i = 0; i < n; ++i) {
    all_attend = all_attend && kv_heads[i] > 0, all_ffn = all_ffn && widths[i] > 0;
    variants[i] = {widths[i], kv_heads[i]};
  }
  if (!all_attend || !all_ffn)
    for (size_t i = 0; i < n; ++i) {
      m.layer_mixers.push_back(kv_heads[i] > 0 ? Mixer::attention : Mixer::none);
      m.layer_has_ffn.push_back(widths[i] > 0);
    }
  m.set_layer_variants(variants);
  m.heterogeneous_block_configs = true;
}

}  // namespace

void nemotron_nas_spell(HfJsonReader& r, ModelSpec& m) {
  if (const std::string act = r.text("hidden_act"); !act.empty()) m.hidden_act = act;
  r.integer("hidden_size", m.hidden_size, true);
  r.integer("num_attention_heads", m.num_attention_heads, true);
  const char* key = "block_configs";
  if (!r.has(key) || !r.object[key].is_array() || r.object[key].empty())
    return r.fail(key, r.has(key) ? r.object[key].dump().substr(0, 80) : "",
                  "must be a list of one {attention, ffn} object per layer");
  const json& blocks = r.object[key];
  r.integer("num_hidden_layers", m.num_hidden_layers, false);
  if (m.num_hidden_layers == 0) m.num_hidden_layers = int64_t(blocks.size());
  if (int64_t(blocks.size()) != m.num_hidden_layers || m.num_hidden_layers > limits::kLayers)
    return r.fail(key, std::to_string(blocks.size()) + " entries",
                  "must list one block per layer (num_hidden_layers = " + std::to_string(m.num_hidden_layers) + ")");
  if (m.hidden_size < 1 || m.num_attention_heads < 1) return;  // refused by the common checks
  std::vector<int64_t> kv_heads, widths;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::string at = r.path(key) + "[" + std::to_string(i) + "].";
    const json& block = blocks[i];
    for (const char* part : {"attention", "ffn"})
      if (!block.is_object() || !block.contains(part) || !block[part].is_object())
        return r.fail(key, block.dump().substr(0, 80),
                      "entry " + std::to_string(i) + " must be an object with attention and ffn objects");
    HfJsonReader attention{block["attention"], r.file, at + "attention.", r.problems};
    HfJsonReader ffn{block["ffn"], r.file, at + "ffn.", r.problems};
    kv_heads.push_back(block_kv_heads(attention, m));
    widths.push_back(block_mlp_width(ffn, m));
  }
  if (!r.problems.empty()) return;
  set_block_layers(m, kv_heads, widths);
  // DeciLM builds every layer from its block; a top-level value (null in NVIDIA's configs) that
  // disagrees with the blocks would be read over the first block's by the common keys
  for (const auto& [top_key, value] :
       {std::pair{"num_key_value_heads", m.num_key_value_heads}, std::pair{"intermediate_size", m.intermediate_size}}) {
    int64_t given = value;
    r.integer(top_key, given, false);
    if (given != value)
      r.fail(top_key, std::to_string(given),
             "must be null where block_configs give each layer's (its first block's is " + std::to_string(value) + ")");
  }
}

void deci_spell(HfJsonReader& r, ModelSpec& m) {
  const char* key = "num_key_value_heads_per_layer";
  if (!r.has(key)) return;
  std::vector<int64_t> heads;
  const size_t problems_before = r.problems.size();
  r.integer_list(key, heads);
  if (r.problems.size() > problems_before) return;
  r.integer("num_hidden_layers", m.num_hidden_layers, true);
  r.integer("num_attention_heads", m.num_attention_heads, true);
  if (int64_t(heads.size()) != m.num_hidden_layers)
    return r.fail(key, std::to_string(heads.size()) + " entries",
                  "must list one count per layer (num_hidden_layers = " + std::to_string(m.num_hidden_layers) + ")");
  for (int64_t h : heads)
    if (h < 1 || m.num_attention_heads % h != 0)
      return r.fail(key, std::to_string(h),
                    "each must divide num_attention_heads = " + std::to_string(m.num_attention_heads));
  if (heads.empty()) return;
  m.num_key_value_heads = heads.front();
  r.integer("intermediate_size", m.intermediate_size, true);
  std::vector<LayerVariant> variants;
  for (int64_t h : heads) variants.push_back({0, h});
  m.set_layer_variants(variants);
}

}  // namespace remat
