#pragma once
// Per recompute module and strategy: the paper's Tables 1 and 2, predicted.
#include <map>
#include <string>
#include <vector>

#include "remat/spec/hardware_spec.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

enum class Formulas { paper, exact };

struct ModuleRow {
  std::string block;     // rmsnorm_linear | mlp | moe | gqa | mla, or a sub-block (exact)
  std::string strategy;  // none | standard | eagle | offload
  std::string formulas;  // paper | exact
  std::map<std::string, double> dims;
  double kept_bytes = 0;
  double transient_bytes = 0;
  double offload_bytes = 0;
  double fwd_flops = 0, bwd_flops = 0, recompute_flops = 0;
  double fwd_s = 0, bwd_s = 0, recompute_s = 0;
  double total_flops() const { return fwd_flops + bwd_flops + recompute_flops; }
};

std::vector<ModuleRow> module_rows(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, Formulas f);

}  // namespace remat
