#pragma once
// What each layer does with its activations between forward and backward.
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace remat {

enum class Strategy { none, full, selective, standard, eagle, offload, streambp };
// One past the last enumerator: a new strategy goes at the end of the enum,
// here and in kStrategies, whose size and order static_asserts check.
inline constexpr size_t kStrategyCount = size_t(Strategy::streambp) + 1;

// Every strategy in one table, in enum order: its name (the command line's
// and the reports' spelling) and whether the planner and sweep search it
// (one R per stage, per-layer choices). Names, parsing and every listing of
// the strategies come from here.
struct StrategyInfo {
  Strategy strategy;
  const char* name;
  bool searched;
};
inline constexpr StrategyInfo kStrategies[] = {
    {Strategy::none, "none", false},         {Strategy::full, "full", true},   {Strategy::selective, "selective", true},
    {Strategy::standard, "standard", true},  {Strategy::eagle, "eagle", true}, {Strategy::offload, "offload", false},
    {Strategy::streambp, "streambp", false},
};
static_assert(std::size(kStrategies) == kStrategyCount, "kStrategies needs one row per Strategy");
constexpr bool strategies_in_enum_order() {
  for (size_t i = 0; i < std::size(kStrategies); ++i)
    if (kStrategies[i].strategy != Strategy(i) || kStrategies[i].name == nullptr) return false;
  return true;
}
static_assert(strategies_in_enum_order(), "kStrategies rows follow the Strategy enum's order");

// Per recompute block: keep its activations, recompute them (standard replay
// or eagle), or offload them to host memory.
enum class BlockMode { keep, standard, eagle, offload };

// Per layer: full and selective act on the whole layer; `blocks` gives a mode
// per recompute block (Appendix C granularity).
enum class LayerMode { keep, full, selective, blocks };

// Megatron-LM's --recompute-modules (selective granularity). Each names a
// checkpoint region; the exact blocks tag their tensors and ops with the
// modules whose recompute frees and replays them.
enum class MegatronModule { core_attn, mlp, layernorm, moe_act, moe, shared_experts, mla_up_proj };
using ModuleSet = uint32_t;  // bit i: MegatronModule i
constexpr ModuleSet module_bit(MegatronModule m) { return ModuleSet(1) << unsigned(m); }
constexpr ModuleSet kCoreAttn = module_bit(MegatronModule::core_attn);
constexpr int kMegatronModuleCount = 7;

struct LayerChoice {
  LayerMode mode = LayerMode::keep;
  std::vector<BlockMode> blocks;  // one per recompute block of the layer when mode == blocks
  int64_t stream_chunks = 0;      // mode == full only: > 0 reruns the layer in this many sequence chunks (StreamBP)
  ModuleSet modules = kCoreAttn;  // mode == selective: the modules recomputed (Megatron's default: core_attn)
  // mode == full: the layer sits at `chunk_position` of a chunk of `chunk_layers`
  // layers replayed together (Megatron's uniform method); only position 0 keeps its input.
  int64_t chunk_layers = 1, chunk_position = 0;
  bool operator==(const LayerChoice&) const = default;
};

// Megatron-LM's recompute flags as they apply to every (pipeline) stage.
enum class MegatronGranularity { none, full, selective };
enum class MegatronMethod { uniform, block };
struct MegatronRecompute {
  MegatronGranularity granularity = MegatronGranularity::none;
  MegatronMethod method = MegatronMethod::uniform;  // full only
  int64_t num_layers = 0;                           // full only: chunk size (uniform) or layers (block)
  ModuleSet modules = kCoreAttn;                    // selective only
  bool operator==(const MegatronRecompute&) const = default;
};

struct Plan {
  Strategy strategy = Strategy::none;
  std::vector<int64_t> recompute_layers;           // R per stage; one value applies to all stages; empty: all layers
  std::vector<int64_t> offload_layers;             // per stage, layers after the recomputed ones; empty: none
  std::map<int64_t, LayerChoice> layer_overrides;  // global layer index -> choice, wins over the above
  std::optional<MegatronRecompute> megatron;       // set: every stage as Megatron-LM applies these flags
};

// The choice of the layer at `local` of a stage of `layers` layers under `r`.
LayerChoice megatron_layer_choice(const MegatronRecompute& r, int64_t local, int64_t layers);

const char* to_string(Strategy s);
// Every strategy in enum order; those the planner and sweep search.
std::vector<Strategy> all_strategies();
std::vector<Strategy> searched_strategies();
// "none, full, selective" for messages and help.
std::string strategy_names(const std::vector<Strategy>& list, const char* separator = ", ");
const char* to_string(BlockMode m);
const char* to_string(LayerMode m);
bool parse_strategy(const std::string& text, Strategy& out);
const char* to_string(MegatronModule m);
bool parse_megatron_module(const std::string& text, MegatronModule& out);
// "core_attn mlp" (Megatron's order), or "" for the empty set.
std::string module_list(ModuleSet s, const char* separator = " ");
// "selective core_attn+mlp", "full uniform 2", "full block 5", "none".
std::string describe(const MegatronRecompute& r);

}  // namespace remat
