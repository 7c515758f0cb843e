#include "remat/spec/plan.hpp"

#include <algorithm>

namespace remat {

const char* to_string(Strategy s) { return size_t(s) < kStrategyCount ? kStrategies[size_t(s)].name : "?"; }

std::vector<Strategy> all_strategies() {
  std::vector<Strategy> out;
  for (const StrategyInfo& i : kStrategies) out.push_back(i.strategy);
  return out;
}

std::vector<Strategy> searched_strategies() {
  std::vector<Strategy> out;
  for (const StrategyInfo& i : kStrategies)
    if (i.searched) out.push_back(i.strategy);
  return out;
}

std::string strategy_names(const std::vector<Strategy>& list, const char* separator) {
  std::string out;
  for (Strategy s : list) out += (out.empty() ? "" : separator) + std::string(to_string(s));
  return out;
}

const char* to_string(BlockMode m) {
  switch (m) {
    case BlockMode::keep:
      return "keep";
    case BlockMode::standard:
      return "standard";
    case BlockMode::eagle:
      return "eagle";
    case BlockMode::offload:
      return "offload";
  }
  return "?";
}

const char* to_string(LayerMode m) {
  switch (m) {
    case LayerMode::keep:
      return "keep";
    case LayerMode::full:
      return "full";
    case LayerMode::selective:
      return "selective";
    case LayerMode::blocks:
      return "blocks";
  }
  return "?";
}

bool parse_strategy(const std::string& text, Strategy& out) {
  for (const StrategyInfo& i : kStrategies)
    if (text == i.name) return out = i.strategy, true;
  return false;
}

namespace {
constexpr const char* kModuleNames[kMegatronModuleCount] = {
    "core_attn", "mlp", "layernorm", "moe_act", "moe", "shared_experts", "mla_up_proj"};
}

const char* to_string(MegatronModule m) { return kModuleNames[int(m)]; }

bool parse_megatron_module(const std::string& text, MegatronModule& out) {
  for (int i = 0; i < kMegatronModuleCount; ++i)
    if (text == kModuleNames[i]) return out = MegatronModule(i), true;
  return false;
}

std::string module_list(ModuleSet s, const char* separator) {
  std::string out;
  for (int i = 0; i < kMegatronModuleCount; ++i)
    if (s & module_bit(MegatronModule(i))) out += (out.empty() ? "" : separator) + std::string(kModuleNames[i]);
  return out;
}

std::string describe(const MegatronRecompute& r) {
  switch (r.granularity) {
    case MegatronGranularity::none:
      return "none";
    case MegatronGranularity::selective:
      return "selective " + module_list(r.modules, "+");
    case MegatronGranularity::full:
      break;
  }
  return std::string("full ") + (r.method == MegatronMethod::block ? "block " : "uniform ") +
         std::to_string(r.num_layers);
}

// Megatron-LM's TransformerBlock._checkpointed_forward (megatron/core/recompute.py):
// uniform checkpoints chunks of num_layers layers of the stage (the last chunk
// may be shorter), block checkpoints the first num_layers layers one by one.
LayerChoice megatron_layer_choice(const MegatronRecompute& r, int64_t local, int64_t layers) {
  LayerChoice c;
  switch (r.granularity) {
    case MegatronGranularity::none:
      return c;
    case MegatronGranularity::selective:
      c.mode = LayerMode::selective;
      c.modules = r.modules;
      return c;
    case MegatronGranularity::full:
      break;
  }
  if (r.method == MegatronMethod::block) {
    if (local < r.num_layers) c.mode = LayerMode::full;
    return c;
  }
  const int64_t n = std::max<int64_t>(1, r.num_layers);
  const int64_t start = local / n * n;
  c.mode = LayerMode::full;
  c.chunk_layers = std::min(n, layers - start);
  c.chunk_position = local - start;
  return c;
}

}  // namespace remat
