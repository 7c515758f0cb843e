// Megatron-LM's recompute settings (megatron/core/transformer/transformer_config.py,
// megatron/core/recompute.py, megatron/training/arguments.py at d98e8a64dd) as
// plans: one setting for every stage, on a split Megatron can express.
#include "remat/search/megatron_runnable.hpp"

#include <fmt/format.h>

#include "remat/spec/validate.hpp"

namespace remat {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::vector<int64_t> remat_split(const ModelSpec& m, const TrainingSpec& t) {
  std::vector<int64_t> v;
  for (const auto& [first, last] : stage_layer_ranges(m, t)) v.push_back(last - first);
  return v;
}

// Megatron gives the first and the last stage their own count; the middle stages split the rest evenly.
bool expressible(const std::vector<int64_t>& v) {
  for (size_t i = 2; i + 1 < v.size(); ++i)
    if (v[i] != v[1]) return false;
  return true;
}

MegatronSplit split_flags(std::vector<int64_t> v, bool matches) {
  MegatronSplit s{std::move(v), 0, 0, matches};
  const auto& l = s.layers_per_stage;
  if (l.size() < 2) return s;
  const int64_t middle = l.size() > 2 ? l[1] : l.back();
  if (l.front() != middle) s.first_stage_layers = l.front();
  if (l.size() > 2 && l.back() != middle) s.last_stage_layers = l.back();
  return s;
}

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

MegatronSplit megatron_split(const ModelSpec& m, const TrainingSpec& t) {
  std::vector<int64_t> v = remat_split(m, t);
  if (expressible(v)) return split_flags(std::move(v), true);
  const int64_t layers = effective_layers(m, t), p = t.pp;
  const int64_t base = layers / p, rest = layers % p;
  std::vector<int64_t> even(size_t(p), base);
  even.front() += rest / 2;
  even.back() += rest - rest / 2;
  return split_flags(std::move(even), false);
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
  int64_t largest = 0;
  for (int64_t n : megatron_split(m, t).layers_per_stage) largest = std::max(largest, n);
  for (MegatronMethod method : {MegatronMethod::block, MegatronMethod::uniform})
    for (int64_t n = 1; n <= largest; ++n) out.push_back({MegatronGranularity::full, method, n, 0});
  return out;
}

RunnablePlan runnable_megatron_plan(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t,
                                    const RunnableOptions& o) {
  RunnablePlan res;
  res.split = megatron_split(m, t);
  res.training = with_defaults(t);
  res.training.layers_per_stage = res.split.layers_per_stage;
  for (const MegatronRecompute& setting : megatron_settings(m, t, o.transformer_engine)) {
    Plan plan;
    plan.megatron = setting;
    const Estimate e = estimate(m, hw, res.training, plan, o.budget_bytes);
    RunnableCandidate c{setting, e.iteration.time_s, e.peak_memory_bytes, 0, e.fits};
    for (const auto& st : e.stages)
      if (st.memory_bytes.peak >= e.peak_memory_bytes) c.worst_stage = st.index;
    res.candidates.push_back(c);
    const bool better = !res.best || c.time_s < res.best->time_s ||
                        (c.time_s == res.best->time_s && c.peak_bytes < res.best->peak_bytes);
    if (c.fits && better) res.best = c;
  }
  if (!res.best) {
    const RunnableCandidate* low = &res.candidates.front();
    for (const auto& c : res.candidates)
      if (c.peak_bytes < low->peak_bytes) low = &c;
    res.reason = fmt::format(
        "no Megatron-LM recompute setting fits: the smallest ({}) peaks at {:.2f} GiB on stage {}, over {:.2f} GiB",
        describe(low->setting), low->peak_bytes / kGiB, low->worst_stage, o.budget_bytes / kGiB);
  }
  return res;
}

}  // namespace remat
