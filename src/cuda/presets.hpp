// Block dims: LLaMA3-8B for rmsnorm_linear / mlp / gqa, DeepSeek-V2 (or the paper's E.2 toy)
// for moe / mla; small dims for the correctness checks.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "block.hpp"

namespace remat::cuda {

Dims preset_dims(const std::string& block, int64_t s, const std::string& moe_model);
Dims small_dims(const std::string& block);
// Eagle-over-standard recompute speedups, kernel efficiencies against the targets.
nlohmann::json summarize(const nlohmann::json& doc);

}  // namespace remat::cuda
