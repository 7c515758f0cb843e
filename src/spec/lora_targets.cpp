#include <algorithm>
#include <string>
#include <vector>

#include "remat/spec/lora_placement.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

namespace {

bool has_matrix(const ModelSpec& m, const std::string& matrix) {
  return std::any_of(m.linear_modules.begin(), m.linear_modules.end(),
                     [&](const LinearModule& l) { return l.matrix == matrix; });
}

// remat's matrix words and the flag each sets
struct MatrixWord {
  const char* word;
  bool LoraTargets::*flag;
};
constexpr MatrixWord kMatrixWords[] = {
    {"q", &LoraTargets::q},
    {"k", &LoraTargets::k},
    {"v", &LoraTargets::v},
    {"o", &LoraTargets::o},
    {"gate", &LoraTargets::gate},
    {"up", &LoraTargets::up},
    {"down", &LoraTargets::down},
    {"router", &LoraTargets::router},
    {"q_a", &LoraTargets::q_a},
    {"q_b", &LoraTargets::q_b},
    {"kv_a", &LoraTargets::kv_a},
    {"kv_b", &LoraTargets::kv_b},
    {"shared_expert_gate", &LoraTargets::shared_expert_gate},
    {"head_gate", &LoraTargets::head_gate},
    {"wq_b", &LoraTargets::indexer_q},
    {"wk", &LoraTargets::indexer_k},
    {"weights_proj", &LoraTargets::indexer_weights},
    {"in_proj_qkvz", &LoraTargets::gdn_qkvz},
    {"in_proj_ba", &LoraTargets::gdn_ba},
    {"in_proj_qkv", &LoraTargets::gdn_qkv},
    {"in_proj_z", &LoraTargets::gdn_z},
    {"in_proj_b", &LoraTargets::gdn_b},
    {"in_proj_a", &LoraTargets::gdn_a},
    {"mixer_in", &LoraTargets::mixer_in},
    {"mixer_out", &LoraTargets::mixer_out},
    {"mamba_x", &LoraTargets::mamba_x},
    {"mamba_dt", &LoraTargets::mamba_dt},
    {"mixer_gate", &LoraTargets::mixer_gate},
    {"f_a", &LoraTargets::kda_f_a},
    {"f_b", &LoraTargets::kda_f_b},
    {"g_a", &LoraTargets::kda_g_a},
    {"g_b", &LoraTargets::kda_g_b},
    {"compress_kv", &LoraTargets::compress_kv},
    {"compress_gate", &LoraTargets::compress_gate},
    {"index_kv", &LoraTargets::index_kv},
    {"index_gate", &LoraTargets::index_gate},
};

// One matrix (or fused pair/triple) adapted. Where the model computes q, k and v in one module
// (Falcon's query_key_value), a word for any of them names that module: one adapter on it.
void add_matrix(const ModelSpec& m, const std::string& matrix, LoraTargets& l) {
  const bool separate = has_matrix(m, matrix);
  const bool in_qkv = matrix == "q" || matrix == "k" || matrix == "v";
  const bool in_gate_up = matrix == "gate" || matrix == "up";
  if (matrix == "qkv" || (in_qkv && !separate && has_matrix(m, "qkv"))) {
    l.q = l.k = l.v = l.fused_qkv = true;
    return;
  }
  if (matrix == "gate_up" || (in_gate_up && !separate && has_matrix(m, "gate_up"))) {
    l.gate = l.up = l.fused_gate_up = true;
    return;
  }
  for (const MatrixWord& w : kMatrixWords)
    if (matrix == w.word) l.*w.flag = true;
}

// remat's words for matrices; empty: not one of them
std::vector<std::string> matrices_of_word(const std::string& word) {
  if (word == "qkv") return {"q", "k", "v"};
  if (word == "mlp") return {"gate", "up", "down"};
  for (const MatrixWord& w : kMatrixWords)
    if (word == w.word) return {word};
  return {};
}

// Why PEFT's all-linear is not priced on this model ("" where it is): it adapts every nn.Linear of
// the layers, so remat must know each. PEFT 0.21 resolves it to those modules' names, then converts
// gate_proj, up_proj, down_proj and gate where the model_type's experts are converted: on DeepSeek-V3
// the attention, the router and the routed experts, none of the dense layers' or shared experts'
// linears (reports/hf/peft-all-linear-types-h200.jsonl, one model per model_type).
std::string all_linear_gap(const ModelSpec& m) {
  if (!m.linear_modules_complete) return "remat does not know every linear module of this model's layers";
  for (const LinearModule& l : m.linear_modules)
    if (l.matrix.empty()) return "it adapts " + l.name + " too, which remat prices no adapter on";
  // a counted tower lists every linear module it has or none (ModelSpec::tower_linear_modules)
  if ((m.idle_params > 0 && m.tower_linear_modules.empty()) || m.encoders_uncounted)
    return "it adapts the vision tower's linear modules too, which remat does not price";
  if (!m.is_moe()) return "";
  // transformers 5 stacks the routed experts' weights: PEFT converts them (its ParamWrapper) or leaves
  // them alone; the router is the module whose reading differs by family
  if (!m.router_reading_known)
    return "remat has not been held to what it adapts of this model's mixture-of-experts router";
  return "";
}

// Whether target `name` reaches tower module `l`: its path, or the path's end after a dot.
bool tower_name_reaches(const std::string& name, const TowerLinear& l) {
  return name == l.path || (l.path.ends_with(name) && l.path[l.path.size() - name.size() - 1] == '.');
}

// PEFT adapts a tower's module whose path ends in a target name (self_attn.q_proj by q_proj or
// self_attn.q_proj), and all-linear every one; a target naming a longer path (one layer's, the language
// model's) reaches none.
// remat's words (q, mlp) stand for the language model's module names they pick (q_proj), as the
// target_modules a PEFT user writes for them.
double tower_adapter_width(const ModelSpec& m, const std::vector<std::string>& targets, bool all_linear) {
  std::vector<std::string> names;
  for (const std::string& target : targets) {
    const std::vector<std::string> words = matrices_of_word(target);
    if (words.empty()) names.push_back(target);
    for (const LinearModule& l : m.linear_modules)
      if (std::find(words.begin(), words.end(), l.matrix) != words.end()) names.push_back(l.name);
  }
  double width = 0;
  for (const TowerLinear& l : m.tower_linear_modules) {
    const auto reaches = [&](const std::string& name) { return tower_name_reaches(name, l); };
    if (all_linear || std::any_of(names.begin(), names.end(), reaches)) width += l.count * (l.in + l.out);
  }
  return width;
}

// Whether gate/up/down name a module of the layers as transformers builds them: a dense MLP, a
// shared expert, per-expert linears, or routed experts PEFT converts (experts_peft_converted).
bool mlp_names_reach_a_module(const ModelSpec& m) {
  if (!m.is_moe() || m.experts_peft_converted || !m.experts_grouped_mm()) return true;
  if (m.n_shared_experts > 0 || m.shared_expert_gate) return true;
  for (int64_t i = 0; i < m.num_hidden_layers; ++i)
    if (m.has_ffn(i) && !m.layer_is_moe(i)) return true;
  return false;
}

}  // namespace

bool peft_names_module(const std::string& target, const std::string& module) {
  const auto ends_with_part = [](const std::string& path, const std::string& tail) {
    return path.size() > tail.size() && path.ends_with(tail) && path[path.size() - tail.size() - 1] == '.';
  };
  return target == module || ends_with_part(module, target) || ends_with_part(target, module);
}

bool targets_matrix(const LoraTargets& targets, const std::string& matrix) {
  for (const MatrixWord& w : kMatrixWords)
    if (matrix == w.word) return targets.*w.flag;
  return false;
}

std::string target_words(const LoraTargets& targets) {
  std::string out;
  for (const MatrixWord& w : kMatrixWords)
    if (targets.*w.flag) out += (out.empty() ? "" : ",") + std::string(w.word);
  return out;
}

std::string linear_module_list(const ModelSpec& m) {
  std::string out;
  for (const LinearModule& l : m.linear_modules)
    out += (out.empty() ? "" : ", ") + l.name + " (" + (l.matrix.empty() ? "no adapter priced" : l.matrix) + ")";
  return out;
}

ResolvedLoraTargets resolve_lora_targets(const ModelSpec& m, const std::vector<std::string>& names) {
  ResolvedLoraTargets r;
  const auto refuse = [&](std::string why) {
    r.targets = ResolvedLoraTargets{}.targets;
    r.refusal = std::move(why);
    return r;
  };
  // PEFT 0.21 on DeepSeek-V4 (reports/hf/dsv4-lora-probe-h200.jsonl): an adapter on o_a_proj (all-linear's
  // too) raises in the forward, its output not of the grouped projection's shape
  for (const std::string& name : names)
    if (!m.compressed_layers.empty() && (name == "all-linear" || peft_names_module(name, "self_attn.o_a_proj")))
      return refuse(name +
                    ": PEFT's adapter on DeepSeek-V4's grouped output projection (o_a_proj) raises in the forward "
                    "(its output is not the projection's per-group shape); name the modules to adapt without it");
  // a word none of whose matrices DeepSeek-V4 has (its attention has no q, k or v projection)
  for (const std::string& name : names)
    if (const std::vector<std::string> words = matrices_of_word(name);
        !m.compressed_layers.empty() && !words.empty() &&
        std::none_of(words.begin(), words.end(), [&](const std::string& w) { return has_matrix(m, w); }))
      return refuse(name + " names no linear module of this model: " + linear_module_list(m));
  for (const std::string& name : names) {
    const std::string leaf = name.substr(name.rfind('.') + 1);
    if (m.peft_refuses_out_proj && (name == "all-linear" || leaf == "out_proj" || leaf == "conv1d"))
      return refuse(name +
                    ": PEFT refuses LoRA on out_proj and conv1d of this Mamba-based model (its "
                    "incompatible modules; ValueError): name the modules to adapt without them");
    if (name == "all-linear") {
      if (const std::string gap = all_linear_gap(m); !gap.empty()) return refuse("PEFT's all-linear: " + gap);
      for (const LinearModule& l : m.linear_modules) add_matrix(m, l.matrix, r.targets);
      r.targets.by_all_linear = true;
      continue;
    }
    if (const std::vector<std::string> words = matrices_of_word(name); !words.empty()) {
      if (name == "router" && !m.is_moe()) return refuse("router: this model has no mixture-of-experts router");
      for (const std::string& w : words) add_matrix(m, w, r.targets);
      continue;
    }
    bool matched = false;
    for (const LinearModule& l : m.linear_modules) {
      if (!peft_names_module(name, l.name)) continue;
      if (l.matrix.empty()) return refuse(name + " reaches " + l.name + ", a module remat prices no adapter on");
      add_matrix(m, l.matrix, r.targets);
      matched = true;
    }
    if (matched) continue;
    // a name that reaches only a tower's modules (a SigLIP layer's fc1): PEFT adapts them, and a
    // text-only step holds those adapters untrained (tower_adapter_width)
    if (std::any_of(m.tower_linear_modules.begin(), m.tower_linear_modules.end(),
                    [&](const TowerLinear& t) { return tower_name_reaches(name, t); }))
      continue;
    // PEFT skips a name no module has where another matches; remat refuses it, so that a name meant
    // for another model (o_proj on OPT, whose is out_proj) is not priced as nothing
    return refuse(name +
                  (m.linear_modules_complete ? " names no linear module of this model: "
                                             : " is not a module remat knows in this model: ") +
                  linear_module_list(m));
  }
  if (r.targets.any() && !mlp_names_reach_a_module(m)) {
    // PEFT matches what a module is named; these names reach none here, and a target list that
    // reaches nothing at all is PEFT's NoMatchingPeftModuleError
    r.targets.gate = r.targets.up = r.targets.down = r.targets.fused_gate_up = false;
    if (!r.targets.any())
      return refuse(
          "gate/up/down reach no module of this model: its routed experts are stacked parameters PEFT does not "
          "convert, and no dense layer or shared expert has those names");
  }
  if (!r.targets.any()) return refuse("names no linear module of this model: " + linear_module_list(m));
  if (r.targets.router && m.router_adapter_raises)
    return refuse(
        "PEFT's adapter on this model's router (an nn.Linear whose forward returns a tuple) raises in "
        "the forward pass; name the modules to adapt, the router left out");
  r.targets.tower_adapter_width = tower_adapter_width(m, names, r.targets.by_all_linear);
  return r;
}

LoraPlacement lora_placement(const ModelSpec& m, const LoraTargets& targets, double rank, bool peft_moe_conversion) {
  LoraPlacement p;
  p.linear = targets;
  if (rank <= 0 || !peft_moe_conversion || !m.experts_peft_converted) return p;
  if (!targets.gate && !targets.up && !targets.down) return p;
  // a fused gate_up_proj target is no pre-fusion name: PEFT leaves it to match a module, which
  // these models do not have
  if (targets.gate && targets.up && !targets.fused_gate_up) p.experts_gate_up_rank = 2 * rank;
  if (targets.down) p.experts_down_rank = rank;
  p.linear.gate = p.linear.up = p.linear.down = p.linear.fused_gate_up = false;
  return p;
}

bool layer_has_attention_linears(const ModelSpec& m, int64_t g) {
  return m.layer_has_attention(g) || (m.mixer(g) == Mixer::gated_deltanet && m.linear_attention_own_projections);
}

bool layer_has_mlp_linears(const ModelSpec& m, int64_t g) {
  return m.has_ffn(g) && (!m.layer_is_moe(g) || m.n_shared_experts > 0 || m.shared_expert_gate);
}

LoraPlacement lora_placement(const ModelSpec& m, const TrainingSpec& t) {
  return lora_placement(m, t.lora_targets, double(t.lora_rank), t.peft_moe_conversion);
}

}  // namespace remat
