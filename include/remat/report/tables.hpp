#pragma once
// Plain-text tables for people; the columns come from one list per table.
#include <string>
#include <vector>

#include "remat/cost/estimate.hpp"
#include "remat/cost/modules.hpp"
#include "remat/spec/hardware_spec.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

// Right-aligned columns with a header rule.
std::string render_table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows);

std::string estimate_table(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, const Plan& p,
                           const Estimate& e);
std::string modules_table(const ModelSpec& m, const HardwareSpec& hw, const std::vector<ModuleRow>& rows);

}  // namespace remat
