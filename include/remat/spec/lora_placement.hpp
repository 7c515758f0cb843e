#pragma once
// Where a LoRA step's adapters sit once PEFT has read the target names against the model.
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

}  // namespace remat
