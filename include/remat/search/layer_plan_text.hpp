#pragma once
// The text form of per-layer choices, for --layer-plan and for printing a
// found plan so that it can be pasted back:
//   "0-9:eagle;10:gqa=eagle,mlp=offload;11-19:full;20-79:keep"
// A range (inclusive) or one layer index, ':', then a layer mode (keep, full,
// selective, or selective(core_attn+mlp) with Megatron's --recompute-modules
// joined by '+'; plain selective is core_attn), one block mode for every recompute block (standard, eagle,
// offload), or block=mode pairs (blocks not named keep). Block names are the
// recompute blocks of the layer (gqa, mlp, mla.down, mla.up_attn,
// moe.shared, moe.routed) or the aliases attn and ffn.
#include <map>
#include <string>
#include <vector>

#include "remat/cost/exact_blocks.hpp"
#include "remat/spec/plan.hpp"

namespace remat {

// Recompute block names of a layer, in the order LayerChoice::blocks uses.
std::vector<std::string> recompute_block_names(const LayerDef& layer);

// Throws InputError naming --layer-plan and the bad entry.
std::map<int64_t, LayerChoice> parse_layer_plan(const std::string& text, const ModelSpec& m, const TrainingSpec& t);

std::string format_choice(const LayerChoice& c, const LayerDef& layer);
// Consecutive layers with the same choice become one range.
std::string format_layer_plan(const std::vector<LayerChoice>& per_layer, int64_t first_layer, const ModelSpec& m,
                              const TrainingSpec& t);

}  // namespace remat
