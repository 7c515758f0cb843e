#pragma once
// The Megatron-LM launch flags that run a Megatron-runnable plan (model dims,
// layout, split and recompute), printed paste-safe, and what torchtitan and
// plain PyTorch take for the same setting.
#include <string>
#include <vector>

#include "remat/search/megatron_runnable.hpp"

namespace remat {

struct MegatronArgs {
  std::vector<std::string> model;      // dims and architecture: --num-layers 80, --swiglu, ...
  std::vector<std::string> layout;     // parallelism, batch, sequence, pipeline split
  std::vector<std::string> recompute;  // --recompute-* (empty: none)
  std::vector<std::string> notes;
  std::vector<std::string> all() const;  // model, layout, recompute
};

// Each entry is one flag with its values, quoted for a POSIX shell where needed.
MegatronArgs megatron_args(const ModelSpec& m, const TrainingSpec& t, const MegatronSplit& split,
                           const MegatronRecompute& r, bool transformer_engine);
// "pipeline split 4x15,3 layers per stage (Megatron-LM: --decoder-last-pipeline-num-layers 3)".
std::string split_note(const MegatronSplit& split);
// The split flags alone (empty for an even split).
std::vector<std::string> split_flags(const MegatronSplit& split);
// Only the recompute flags (what `remat estimate` takes back).
std::vector<std::string> recompute_flags(const MegatronRecompute& r);

// Megatron-LM's recompute flags as given on a command line, checked as Megatron
// checks them (transformer_config.py, arguments.py); throws InputError naming
// the flag and value. `num_layers` is text so that a per-stage list is refused.
struct MegatronRecomputeText {
  std::string granularity, method, num_layers;
  std::vector<std::string> modules;
};
MegatronRecompute parse_megatron_recompute(const MegatronRecomputeText& text, const ModelSpec& m);

// One flag per line, each line ending in " \": safe to paste anywhere inside a launch command.
std::string paste_safe(const std::vector<std::string>& flags, const std::string& indent = "  ");
std::string one_line(const std::vector<std::string>& flags);

// torchtitan's [activation_checkpoint] section, or why the setting has none.
std::string torchtitan_text(const MegatronRecompute& r, const MegatronSplit& split);
// Which layers or parts of layers to wrap in torch.utils.checkpoint.
std::string pytorch_text(const MegatronRecompute& r, const MegatronSplit& split);

}  // namespace remat
