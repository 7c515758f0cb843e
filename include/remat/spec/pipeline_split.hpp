#pragma once
// Megatron-LM's ways of splitting the decoder layers over pipeline stages
// (megatron/training/arguments.py, transformer_config.py,
// pipeline_parallel_layer_layout.py at d98e8a64dd): an even split, a first
// and/or last stage of its own size (--decoder-first/last-pipeline-num-layers,
// the other stages even), or any split (--pipeline-model-parallel-layout,
// embedding "E" on the first stage and loss "L" on the last).
#include <cstdint>
#include <string>
#include <vector>

namespace remat {

// The three flags as typed on a command line or read from a log ("" when absent).
struct MegatronSplitText {
  std::string first_stage_layers, last_stage_layers, layout;
  bool empty() const { return first_stage_layers.empty() && last_stage_layers.empty() && layout.empty(); }
};

// Layers per stage as Megatron-LM builds them from the flags; throws InputError
// naming `source` (a file or "command line"), the flag and its value where
// Megatron-LM would refuse them.
// `mtp_layers`: the model's multi-token prediction modules, which a layout must place ("m")
// on the last stage.
std::vector<int64_t> megatron_layers_per_stage(const MegatronSplitText& text, int64_t layers, int64_t pp,
                                               const std::string& source = "command line", int64_t mtp_layers = 0);

// The flags that give `layers_per_stage`: none for an even split, the first
// and/or last stage's count where the other stages are even, else a layout.
struct MegatronSplitFlags {
  int64_t first_stage_layers = 0, last_stage_layers = 0;  // 0: flag not given
  std::string layout;                                     // "" : flag not given
};
MegatronSplitFlags megatron_split_flags(const std::vector<int64_t>& layers_per_stage, int64_t mtp_layers = 0);

// --pipeline-model-parallel-layout for a split, e.g. 6,8x14,7 -> "Et*6|(t*8|)*14t*7L".
std::string pipeline_layout_text(const std::vector<int64_t>& layers_per_stage, int64_t mtp_layers = 0);

// "6,8x14,7": runs of equal counts shortened.
std::string split_text(const std::vector<int64_t>& layers_per_stage);

}  // namespace remat
