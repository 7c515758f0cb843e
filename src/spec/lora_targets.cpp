#include <string>

#include "remat/spec/lora_placement.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

bool add_lora_target(LoraTargets& l, std::string name) {
  if (name == "qkv_proj") return l.fused_qkv = l.q = l.k = l.v = true;
  if (name == "gate_up_proj") return l.fused_gate_up = l.gate = l.up = true;
  if (name.size() > 5 && name.ends_with("_proj")) name.resize(name.size() - 5);
  bool* slot = name == "q"      ? &l.q
               : name == "k"    ? &l.k
               : name == "v"    ? &l.v
               : name == "o"    ? &l.o
               : name == "gate" ? &l.gate
               : name == "up"   ? &l.up
               : name == "down" ? &l.down
                                : nullptr;
  return slot && (*slot = true);
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

LoraPlacement lora_placement(const ModelSpec& m, const TrainingSpec& t) {
  return lora_placement(m, t.lora_targets, double(t.lora_rank), t.peft_moe_conversion);
}

}  // namespace remat
