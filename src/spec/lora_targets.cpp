#include <string>

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

}  // namespace remat
