#include "remat/search/layer_plan_text.hpp"

#include <charconv>

#include "remat/cost/stage_model.hpp"
#include "remat/spec/problems.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

[[noreturn]] void bad(const std::string& entry, const std::string& message) {
  throw InputError({{"command line", "--layer-plan", entry, message}});
}

int64_t parse_index(const std::string& s, const std::string& entry) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0)
    bad(entry, "layer indices must be integers >= 0");
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

bool parse_block_mode(const std::string& s, BlockMode& m) {
  for (BlockMode x : {BlockMode::keep, BlockMode::standard, BlockMode::eagle, BlockMode::offload})
    if (s == to_string(x)) return m = x, true;
  return false;
}

bool alias_matches(const std::string& alias, const std::string& block) {
  if (alias == block) return true;
  if (alias == "attn") return block == "gqa" || block.rfind("mla", 0) == 0;
  if (alias == "ffn") return block == "mlp" || block.rfind("moe", 0) == 0;
  return false;
}

// "selective(core_attn+mlp)": Megatron's --recompute-modules joined by '+'.
LayerChoice parse_selective(const std::string& spec, const std::string& entry) {
  const std::string inner = spec.substr(10, spec.size() - 11);
  LayerChoice c{LayerMode::selective, {}};
  c.modules = 0;
  for (const std::string& name : split(inner, '+')) {
    MegatronModule m;
    if (!parse_megatron_module(name, m))
      bad(entry, "unknown recompute module '" + name + "' (core_attn, mlp, layernorm, moe_act, moe, shared_experts, " +
                     "mla_up_proj)");
    c.modules |= module_bit(m);
  }
  return c;
}

LayerChoice parse_choice(const std::string& spec, const LayerDef& layer, const std::string& entry) {
  if (spec == "keep" || spec == "none") return {LayerMode::keep, {}};
  if (spec == "full") return {LayerMode::full, {}};
  if (spec == "selective") return {LayerMode::selective, {}};
  if (spec.rfind("selective(", 0) == 0 && spec.back() == ')') return parse_selective(spec, entry);
  const auto names = recompute_block_names(layer);
  BlockMode all;
  if (parse_block_mode(spec, all)) return {LayerMode::blocks, std::vector<BlockMode>(names.size(), all)};
  LayerChoice c{LayerMode::blocks, std::vector<BlockMode>(names.size(), BlockMode::keep)};
  for (const std::string& pair : split(spec, ',')) {
    const size_t eq = pair.find('=');
    BlockMode mode;
    if (eq == std::string::npos || !parse_block_mode(pair.substr(eq + 1), mode))
      bad(entry, "expected keep, full, selective, selective(MODULE+...), standard, eagle, offload or BLOCK=MODE pairs");
    bool matched = false;
    for (size_t i = 0; i < names.size(); ++i)
      if (alias_matches(pair.substr(0, eq), names[i])) c.blocks[i] = mode, matched = true;
    if (!matched) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      bad(entry, "no recompute block '" + pair.substr(0, eq) + "' in this layer (" + known + ", attn, ffn)");
    }
  }
  return c;
}

}  // namespace

std::vector<std::string> recompute_block_names(const LayerDef& layer) {
  std::vector<std::string> out;
  for (size_t i = 0; i < layer.blocks.size(); ++i)
    if (layer.recomputable[i]) out.push_back(layer.blocks[i].name);
  return out;
}

std::map<int64_t, LayerChoice> parse_layer_plan(const std::string& text, const ModelSpec& m, const TrainingSpec& t) {
  const LayerShapes shapes = build_shapes(m, rank_shape(t));
  const int64_t layers = effective_layers(m, t);
  std::map<int64_t, LayerChoice> out;
  std::vector<std::string> entries = split(text, ';');
  if (entries.size() > 1 && entries.back().empty()) entries.pop_back();  // one trailing ';' is harmless
  for (const std::string& entry : entries) {
    if (entry.empty()) bad(text, "empty entry between ';' (each entry is RANGE:CHOICE, e.g. 0-9:eagle)");
    const size_t colon = entry.find(':');
    if (colon == std::string::npos) bad(entry, "each entry is RANGE:CHOICE, e.g. 0-9:eagle");
    const std::string range = entry.substr(0, colon);
    const size_t dash = range.find('-');
    const int64_t first = parse_index(range.substr(0, dash), entry);
    const int64_t last = dash == std::string::npos ? first : parse_index(range.substr(dash + 1), entry);
    if (last < first || last >= layers) bad(entry, "layer range must lie within 0.." + std::to_string(layers - 1));
    for (int64_t g = first; g <= last; ++g) {
      if (out.count(g)) bad(entry, "layer " + std::to_string(g) + " is already given by an earlier range");
      out[g] = parse_choice(entry.substr(colon + 1), shapes.at(m, g), entry);
    }
  }
  return out;
}

std::string format_choice(const LayerChoice& c, const LayerDef& layer) {
  if (c.mode == LayerMode::selective && c.modules != kCoreAttn) return "selective(" + module_list(c.modules, "+") + ")";
  if (c.mode != LayerMode::blocks) return to_string(c.mode);
  const auto names = recompute_block_names(layer);
  bool same = !c.blocks.empty();
  for (BlockMode b : c.blocks) same = same && b == c.blocks.front();
  if (same) return to_string(c.blocks.front());
  std::string out;
  for (size_t i = 0; i < c.blocks.size() && i < names.size(); ++i)
    if (c.blocks[i] != BlockMode::keep) out += (out.empty() ? "" : ",") + names[i] + "=" + to_string(c.blocks[i]);
  return out.empty() ? "keep" : out;
}

std::string format_layer_plan(const std::vector<LayerChoice>& per_layer, int64_t first_layer, const ModelSpec& m,
                              const TrainingSpec& t) {
  const LayerShapes shapes = build_shapes(m, rank_shape(t));
  std::string out;
  size_t j = 0;
  while (j < per_layer.size()) {
    const int64_t g = first_layer + int64_t(j);
    const std::string text = format_choice(per_layer[j], shapes.at(m, g));
    size_t end = j + 1;
    while (end < per_layer.size() && format_choice(per_layer[end], shapes.at(m, first_layer + int64_t(end))) == text)
      ++end;
    const int64_t last = first_layer + int64_t(end) - 1;
    out += (out.empty() ? "" : ";") + (last == g ? std::to_string(g) : std::to_string(g) + "-" + std::to_string(last)) +
           ":" + text;
    j = end;
  }
  return out;
}

}  // namespace remat
