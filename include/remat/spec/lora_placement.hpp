#pragma once
// Where a LoRA step's adapters sit once PEFT has read the target names against the model.
#include <string>
#include <vector>

#include "remat/spec/model_spec.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

struct LoraPlacement {
  LoraTargets linear;  // adapters on nn.Linear projections (attention, dense MLPs, shared experts)
  // ranks of the adapters on the routed experts' stacked weights (PEFT's ParamWrapper); 0: none
  double experts_gate_up_rank = 0, experts_down_rank = 0;
  bool on_experts() const { return experts_gate_up_rank > 0 || experts_down_rank > 0; }
};

// PEFT 0.21 (utils/transformers_weight_conversion.py, _convert_peft_config_moe) on a model whose
// model_type transformers 5.17 converts as Qwen2-MoE (ModelSpec::experts_peft_converted): gate_proj
// and up_proj become one target, the experts' gate_up_proj at rank 2r (rank_pattern r x 2), and
// down_proj the experts' down_proj at rank r; all three leave target_modules, so no nn.Linear named
// so carries an adapter (dense MLPs and shared experts included). Elsewhere: `targets` on nn.Linear.
LoraPlacement lora_placement(const ModelSpec& m, const LoraTargets& targets, double rank, bool peft_moe_conversion);
LoraPlacement lora_placement(const ModelSpec& m, const TrainingSpec& t);

// Where layer g has the nn.Linear projections a target word reaches: q/k/v/o in an attention layer or
// in a Gated DeltaNet that names its own (OLMo Hybrid's); gate/up/down on a dense MLP or an MoE
// layer's shared experts (routed experts are stacked parameters: LoraPlacement::on_experts). A
// Mamba-2, Gated DeltaNet or short-convolution mixer has no q/k/v/o.
bool layer_has_attention_linears(const ModelSpec& m, int64_t g);
bool layer_has_mlp_linears(const ModelSpec& m, int64_t g);

// PEFT's target_modules (or remat's words for them) read against the model's linear modules.
// remat's words: q, k, v, o, gate, up, down, router, qkv and mlp (three each), all-linear (PEFT's:
// every nn.Linear of the layers); any other name is a module's, matched as PEFT matches it (the
// module path ends with it). A name no module of the model has is refused.
struct ResolvedLoraTargets {
  LoraTargets targets{false, false, false, false, false, false, false};
  std::string refusal;  // not empty: why these targets cannot be priced
};
ResolvedLoraTargets resolve_lora_targets(const ModelSpec& m, const std::vector<std::string>& names);
// PEFT's suffix match of a target_modules entry, both ways: the target names the module path's
// end (out_proj reaches self_attn.out_proj) or a longer path ending in the module (mlp.c_proj
// reaches c_proj).
bool peft_names_module(const std::string& target, const std::string& module);
// Whether `targets` adapt remat's matrix word (q, k, v, o, gate, up, down, router), and the words
// they adapt, comma-separated, as a message names them.
bool targets_matrix(const LoraTargets& targets, const std::string& matrix);
std::string target_words(const LoraTargets& targets);
// The model's modules as a message lists them: "q_proj (q), ..., kv_b_proj (no adapter priced)".
std::string linear_module_list(const ModelSpec& m);

}  // namespace remat
