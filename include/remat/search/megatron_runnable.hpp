#pragma once
// The best plan Megatron-LM runs as-is: one recompute setting for every
// stage (--recompute-granularity/-method/-num-layers/-modules), on a layer
// split Megatron can express, evaluated with the same stage model as any plan.
#include <optional>
#include <string>
#include <vector>

#include "remat/cost/estimate.hpp"

namespace remat {

// A split of the layers over the pipeline stages and the Megatron-LM flags that
// give it (none when even; --decoder-first/last-pipeline-num-layers; else
// --pipeline-model-parallel-layout).
struct MegatronSplit {
  std::vector<int64_t> layers_per_stage;
  int64_t first_stage_layers = 0, last_stage_layers = 0;  // 0: flag not given
  std::string layout;                                     // "": flag not given
};
MegatronSplit megatron_split_of(std::vector<int64_t> layers_per_stage, int64_t mtp_layers = 0);

// The split remat costs `t` with (t.layers_per_stage, or remat's even split
// with the remainder on the first stages) and its flags.
MegatronSplit megatron_split(const ModelSpec& m, const TrainingSpec& t);

struct RunnableOptions {
  double budget_bytes = 0;
  bool transformer_engine = false;  // --transformer-impl transformer_engine (default: local)
};

struct RunnableCandidate {
  MegatronRecompute setting;
  std::vector<int64_t> layers_per_stage;  // the best split for this setting
  double time_s = 0, peak_bytes = 0;
  int64_t worst_stage = 0;
  bool fits = false;
};

struct RunnablePlan {
  TrainingSpec training;                      // the layout with the best plan's split
  MegatronSplit split;                        // the best plan's split (searched with each setting)
  std::vector<RunnableCandidate> candidates;  // every setting evaluated
  std::optional<RunnableCandidate> best;      // fastest that fits (smaller peak on ties)
  std::string reason;                         // when none fits
};

// The settings Megatron-LM accepts for this model: none; full uniform and
// block with N in 1..one more than the even stage; selective with every module set the model
// has (dense: core_attn, mlp, layernorm; MoE: moe, moe_act, shared_experts;
// MLA: mla_up_proj), without sets where one module contains another.
std::vector<MegatronRecompute> megatron_settings(const ModelSpec& m, const TrainingSpec& t, bool transformer_engine);

// `t` validated.
RunnablePlan runnable_megatron_plan(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t,
                                    const RunnableOptions& o);

}  // namespace remat
