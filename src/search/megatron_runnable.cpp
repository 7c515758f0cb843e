// Megatron-LM's recompute settings (megatron/core/transformer/transformer_config.py,
// megatron/core/recompute.py, megatron/training/arguments.py at d98e8a64dd) as
// plans: one setting for every stage, each on its best pipeline split (any split:
// --pipeline-model-parallel-layout expresses every one).
#include "remat/search/megatron_runnable.hpp"

#include <fmt/format.h>

#include "remat/search/split_search.hpp"
#include "remat/spec/pipeline_split.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

bool has_dense_layer(const ModelSpec& m, int64_t layers) {
  for (int64_t i = 0; i < layers; ++i)
    if (!m.layer_is_moe(i)) return true;
  return false;
}

std::vector<MegatronModule> available_modules(const ModelSpec& m, const TrainingSpec& t, bool te) {
  std::vector<MegatronModule> out = {MegatronModule::core_attn};
  // never layernorm: under Transformer Engine the norms are fused into the next linear (IdentityOp),
  // nothing to recompute; without it Megatron's layernorm recompute fails at run time (seen on the
  // lent H200s with --transformer-impl local, issue 12)
  if (has_dense_layer(m, effective_layers(m, t))) out.push_back(MegatronModule::mlp);
  if (m.is_moe()) {
    out.push_back(MegatronModule::moe);
    if (m.n_shared_experts > 0) out.push_back(MegatronModule::shared_experts);
    if (te) out.push_back(MegatronModule::moe_act);  // needs --moe-grouped-gemm (TEGroupedMLP)
  }
  if (m.attention() == AttentionKind::mla) out.push_back(MegatronModule::mla_up_proj);
  return out;
}

// `moe` checkpoints the whole MoE layer: adding moe_act or shared_experts inside it changes nothing.
bool redundant(ModuleSet s) {
  const ModuleSet inside = module_bit(MegatronModule::moe_act) | module_bit(MegatronModule::shared_experts);
  return (s & module_bit(MegatronModule::moe)) && (s & inside);
}

}  // namespace

MegatronSplit megatron_split_of(std::vector<int64_t> layers_per_stage, int64_t mtp_layers) {
  const MegatronSplitFlags f = megatron_split_flags(layers_per_stage, mtp_layers);
  return {std::move(layers_per_stage), f.first_stage_layers, f.last_stage_layers, f.layout};
}

MegatronSplit megatron_split(const ModelSpec& m, const TrainingSpec& t) {
  std::vector<int64_t> v;
  for (const auto& [first, last] : stage_layer_ranges(m, t)) v.push_back(last - first);
  return megatron_split_of(std::move(v), m.num_nextn_predict_layers);
}

std::vector<MegatronRecompute> megatron_settings(const ModelSpec& m, const TrainingSpec& t, bool te) {
  std::vector<MegatronRecompute> out = {MegatronRecompute{}};
  const std::vector<MegatronModule> mods = available_modules(m, t, te);
  for (uint32_t code = 1; code < (1u << mods.size()); ++code) {
    ModuleSet s = 0;
    for (size_t i = 0; i < mods.size(); ++i)
      if (code & (1u << i)) s |= module_bit(mods[i]);
    if (!redundant(s)) out.push_back({MegatronGranularity::selective, MegatronMethod::uniform, 0, s});
  }
  // N beyond a stage's layers recomputes all of them, as N = the stage's count does
  const int64_t layers = effective_layers(m, t);
  const int64_t largest = std::min(layers - t.pp + 1, (layers + t.pp - 1) / t.pp + 1);
  for (MegatronMethod method : {MegatronMethod::block, MegatronMethod::uniform})
    for (int64_t n = 1; n <= largest; ++n) out.push_back({MegatronGranularity::full, method, n, 0});
  return out;
}

RunnablePlan runnable_megatron_plan(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t,
                                    const RunnableOptions& o) {
  RunnablePlan res;
  if (m.is_moe() && (m.o_bias || m.mlp_bias) && t.tp > 1) {  // the flags then leave --add-bias-linear on
    // Megatron-LM: "Bias in Moe is only supported when ETP==1" (its expert tensor parallelism
    // defaults to tp); remat splits experts over tp as that default does
    res.training = with_defaults(t);
    res.reason =
        "Megatron-LM runs MoE layers with biases only at --expert-tensor-parallel-size 1, which remat does "
        "not model with tp > 1: plan with --tp 1 for flags Megatron-LM accepts";
    return res;
  }
  TrainingSpec split_t = with_defaults(t);
  split_t.layers_per_stage.clear();
  for (const MegatronRecompute& setting : megatron_settings(m, t, o.transformer_engine)) {
    Plan plan;
    plan.megatron = setting;
    // a split the user gave is kept; else each setting gets its best one, searched only as far as
    // it could beat (or tie) the best setting so far: one that cannot is neither chosen nor, as a
    // fitting setting exists, the least-peak fallback
    const double wanted_below_s = res.best ? res.best->time_s : std::numeric_limits<double>::infinity();
    const SplitChoice split = t.layers_per_stage.empty()
                                  ? best_split(m, hw, split_t, plan, o.budget_bytes, wanted_below_s)
                                  : SplitChoice{t.layers_per_stage, true};
    split_t.layers_per_stage = split.layers_per_stage;
    const Estimate e = estimate(m, hw, split_t, plan, o.budget_bytes);
    RunnableCandidate c{setting, split.layers_per_stage, e.iteration.time_s, e.peak_memory_bytes, 0, e.fits};
    for (const auto& st : e.stages)
      if (st.memory_bytes.peak >= e.peak_memory_bytes) c.worst_stage = st.index;
    res.candidates.push_back(c);
    const bool better = !res.best || c.time_s < res.best->time_s ||
                        (c.time_s == res.best->time_s && c.peak_bytes < res.best->peak_bytes);
    if (c.fits && better) res.best = c;
  }
  const RunnableCandidate* low = &res.candidates.front();
  for (const auto& c : res.candidates)
    if (c.peak_bytes < low->peak_bytes) low = &c;
  const RunnableCandidate& chosen = res.best ? *res.best : *low;
  res.split = megatron_split_of(chosen.layers_per_stage, m.num_nextn_predict_layers);
  res.training = split_t;
  res.training.layers_per_stage = chosen.layers_per_stage;
  if (!res.best)
    res.reason = fmt::format(
        "no Megatron-LM recompute setting fits on any split: the smallest ({}, split {}) peaks at {:.2f} GiB on stage "
        "{}, over {:.2f} GiB",
        describe(low->setting), split_text(low->layers_per_stage), low->peak_bytes / kGiB, low->worst_stage,
        o.budget_bytes / kGiB);
  return res;
}

}  // namespace remat
