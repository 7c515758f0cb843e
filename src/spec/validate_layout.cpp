// Checks of the parallel layout and the plan against the model.
#include <algorithm>
#include <numeric>
#include <string>

#include "remat/spec/framework.hpp"
#include "remat/spec/lora_placement.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

const char* kCli = "command line";

std::string str(int64_t v) { return std::to_string(v); }

struct Flags {
  std::vector<Problem> problems;
  void fail(const std::string& flag, const std::string& value, const std::string& message) {
    problems.push_back({kCli, flag, value, message});
  }
  void at_least(const std::string& flag, int64_t v, int64_t low) {
    if (v < low) fail(flag, str(v), "must be at least " + str(low));
  }
  void between(const std::string& flag, int64_t v, int64_t low, int64_t high) {
    if (v < low) fail(flag, str(v), "must be at least " + str(low));
    if (v > high) fail(flag, str(v), "must be at most " + str(high));
  }
  void divides(const std::string& flag, int64_t v, const std::string& what, int64_t n) {
    if (v > 0 && n % v != 0) fail(flag, str(v), "must divide " + what + " = " + str(n));
  }
};

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + str(v[i]);
  return s;
}

void check_stage_list(Flags& f, const std::string& flag, const std::vector<int64_t>& v, int64_t pp) {
  if (!v.empty() && v.size() != 1 && int64_t(v.size()) != pp)
    f.fail(flag, join(v), "needs one value or one per pipeline stage (pp = " + str(pp) + ")");
  for (int64_t x : v)
    if (x < 0) return f.fail(flag, join(v), "values must not be negative");
  for (int64_t x : v)
    if (x > limits::kLayers) return f.fail(flag, join(v), "values must be at most " + str(limits::kLayers));
}

// Each flag within its bounds, and the products the layout code forms.
void check_ranges(Flags& f, const TrainingSpec& t) {
  using namespace limits;
  for (auto [flag, v] : {std::pair{"--tp", t.tp}, {"--pp", t.pp}, {"--dp", t.dp}, {"--ep", t.ep}})
    f.between(flag, v, 1, kParallel);
  f.between("--mbs", t.mbs, 1, kMbs);
  f.between("--seq", t.seq, 1, kSeq);
  f.between("--gbs", t.gbs, 0, kGbs);
  f.between("--num-layers", t.num_layers_override, 0, kLayers);
  if (t.zero_stage < 0 || t.zero_stage > 3) f.fail("--zero-stage", str(t.zero_stage), "must be 0, 1, 2 or 3");
  if (!f.problems.empty()) return;
  int64_t gpus = 0, tokens = 0;
  if (!checked_product(t.tp, t.pp, kParallel, gpus) || !checked_product(gpus, t.dp, kParallel, gpus))
    f.fail("--dp", str(t.dp), "makes tp * pp * dp more than " + str(kParallel) + " GPUs");
  if (!checked_product(t.mbs, t.seq, kTokens, tokens))
    f.fail("--seq", str(t.seq), "makes mbs * seq more than " + str(kTokens) + " tokens per microbatch");
}

void check_layers_per_stage(Flags& f, const std::vector<int64_t>& v, int64_t pp, int64_t layers) {
  for (int64_t n : v)
    if (n < 1 || n > layers)  // bounded first: the sum below cannot overflow
      return f.fail("--layers-per-stage", join(v), "every stage needs between 1 and " + str(layers) + " layers");
  const int64_t sum = std::accumulate(v.begin(), v.end(), int64_t{0});
  if (int64_t(v.size()) != pp)
    f.fail("--layers-per-stage", join(v), "needs one value per stage (pp = " + str(pp) + ")");
  else if (sum != layers)
    f.fail("--layers-per-stage", join(v), "must add up to the number of layers = " + str(layers));
}

// StreamBP partitions, the objective and LoRA (issue 6).
void check_streambp(Flags& f, const TrainingSpec& t) {
  const auto within = [&f](const char* flag, int64_t v, int64_t low, int64_t high) {
    if (v < low)
      f.fail(flag, str(v), "must be at least " + str(low));
    else if (v > high)
      f.fail(flag, str(v), "must be at most " + str(high));
  };
  within("--streambp-chunks", t.streambp_chunks, 1, std::max<int64_t>(t.seq, 1));
  within("--lm-head-chunks", t.lm_head_chunks, 1, std::max<int64_t>(t.seq, 1));
  if (t.objective == Objective::grpo) within("--grpo-group", t.grpo_group, 1, 1024);
  within("--lora-rank", t.lora_rank, 0, 65536);
  if (t.lora_rank > 0 && !t.lora_targets.any())
    f.fail("--lora-targets", "", "needs at least one of q, k, v, o, gate, up, down");
  if (!(t.lora_dropout >= 0 && t.lora_dropout < 1))
    f.fail("--lora-dropout", std::to_string(t.lora_dropout), "must be in [0, 1)");
}

// Whether layer g holds a module the placement adapts, where lora_layer_params prices them: q/k/v/o
// and DeepSeek's latent projections on its attention linears, gate/up/down on its MLP linears, the
// router and the converted experts in an MoE layer.
bool layer_adapted(const ModelSpec& m, const LoraPlacement& p, int64_t g) {
  const LoraTargets& l = p.linear;
  if (layer_has_attention_linears(m, g) && (l.any_qkv() || l.o || l.any_latent())) return true;
  if (layer_has_mlp_linears(m, g) && (l.any_gate_up() || l.down)) return true;
  const Mixer mixer = m.mixer(g);
  if (mixer == Mixer::gated_deltanet || mixer == Mixer::short_conv || mixer == Mixer::mamba2 ||
      mixer == Mixer::attention_mamba2 || mixer == Mixer::lightning)
    if (l.any_mixer()) return true;
  if (mixer == Mixer::mamba1 && (l.mixer_in || l.mamba_x || l.mamba_dt || l.mixer_out)) return true;
  if (m.index_n_heads > 0 && m.layer_has_indexer(g) && (l.indexer_q || l.indexer_k || l.indexer_weights)) return true;
  if (mixer == Mixer::compressed_attention) {  // DeepSeek-V4: its attention's, compressor's and indexer's
    const CompressedAttention kind = m.compressed_layer(g);
    const bool sparse = kind == CompressedAttention::sparse;
    if (l.any_latent() || l.o || (kind != CompressedAttention::sliding && (l.compress_kv || l.compress_gate)) ||
        (sparse && (l.index_kv || l.index_gate || l.indexer_q || l.indexer_weights)))
      return true;
  }
  return m.layer_is_moe(g) && (l.router || l.shared_expert_gate || p.on_experts());
}

// PEFT raises NoMatchingPeftModuleError where the targets reach no module of the layers built: a
// model cut to layers without attention (Nemotron-H's first four) under q/v, or to dense layers
// where PEFT moved gate/up/down to the routed experts (DeepSeek-V3.2's first three).
void check_targets_reach_a_layer(Flags& f, const TrainingSpec& t, const ModelSpec& m) {
  if (t.lora_rank <= 0 || !t.peft_moe_conversion || m.linear_modules.empty()) return;
  const LoraPlacement placement = lora_placement(m, t);
  const int64_t layers = effective_layers(m, t);
  for (int64_t g = 0; g < layers; ++g)
    if (layer_adapted(m, placement, g)) return;
  f.fail("--lora-targets", target_words(t.lora_targets),
         "reach no module of the " + std::to_string(layers) +
             " layers built: PEFT finds nothing to adapt (NoMatchingPeftModuleError)");
}

// Gemma4TextAttention finds, for every layer, the last layer of its kind (sliding or full) before the
// last num_kv_shared_layers, whose keys and values the shared ones reuse; transformers raises where
// there is none (Gemma 4 E4B cut to 4 layers, 18 of them shared: blind set 20).
void check_kv_sharing_sources(Flags& f, const TrainingSpec& t, const ModelSpec& m) {
  if (m.kv_shared_layers <= 0) return;
  const int64_t layers = effective_layers(m, t), first_shared = layers - m.kv_shared_layers;
  bool windowed = false, full = false;
  for (int64_t g = 0; g < first_shared; ++g) (m.layer_is_windowed(g) ? windowed : full) = true;
  for (int64_t g = 0; g < layers; ++g)
    if (!(m.layer_is_windowed(g) ? windowed : full)) {
      f.fail("--num-layers", str(layers),
             "leaves no " + std::string(m.layer_is_windowed(g) ? "sliding" : "full") +
                 "-attention layer before the last " + str(m.kv_shared_layers) +
                 " (num_kv_shared_layers, which reuse keys and values) for layer " + str(g) +
                 " to share from; transformers' Gemma 4 raises on it");
      return;
    }
}

// What PEFT 0.21 raises on for a model whose MoE targets it converts (lora_placement).
void check_peft_moe_targets(Flags& f, const TrainingSpec& t, const ModelSpec& m) {
  if (t.lora_rank <= 0 || !t.peft_moe_conversion || !m.experts_peft_converted) return;
  const LoraTargets& l = t.lora_targets;
  if (l.gate != l.up && !l.fused_gate_up)
    f.fail("--lora-targets", l.gate ? "gate without up" : "up without gate",
           "PEFT fuses gate_proj and up_proj into this model's experts' gate_up_proj: target both or neither");
  if (t.lora_dropout > 0 && lora_placement(m, t).on_experts())
    f.fail("--lora-dropout", std::to_string(t.lora_dropout),
           "PEFT's adapters on the experts' stacked weights (ParamWrapper), where gate, up or down point on this "
           "model, refuse dropout: 0 or leave gate, up and down out of --lora-targets");
}

// A Mamba-1 mixer (MambaMixer, FalconMambaMixer, JambaMambaMixer in transformers 5.17) multiplies by
// dt_proj.weight itself: an adapter there never runs, and where it is the only one nothing trains
// (PyTorch's backward raises: reports/hf/mamba1-adapters-h200.jsonl). remat prices the fused kernels
// as mamba_ssm's mamba_inner_fn, which reads x_proj's and out_proj's weights too.
void check_mamba1_adapters(Flags& f, const TrainingSpec& t, const ModelSpec& m) {
  const LoraTargets& l = t.lora_targets;
  if (t.lora_rank <= 0 || !(l.mamba_x || l.mamba_dt || l.mixer_out)) return;
  bool mamba1 = false;
  for (int64_t g = 0; g < effective_layers(m, t); ++g) mamba1 = mamba1 || m.mixer(g) == Mixer::mamba1;
  if (!mamba1) return;
  LoraTargets others = l;
  others.mamba_dt = false;
  if (l.mamba_dt && !others.any())
    f.fail("--lora-targets", "dt_proj",
           "the Mamba-1 mixer multiplies by dt_proj.weight itself, so its adapter never runs: with no other "
           "adapter nothing trains (PyTorch's backward raises); add another target");
  if (t.mixer_kernels == MixerKernels::fused && (l.mamba_x || l.mixer_out))
    f.fail("--lora-targets", l.mamba_x ? "x_proj" : "out_proj",
           "under fused kernels remat prices Mamba-1 as mamba_ssm's mamba_inner_fn, which reads x_proj's and "
           "out_proj's weights directly (an adapter there never runs); --mixer-kernels torch prices them");
}

// PEFT raises on a target whose name also reaches a tower module of a class it cannot adapt.
void check_peft_tower_targets(Flags& f, const TrainingSpec& t, const ModelSpec& m) {
  if (t.lora_rank <= 0 || !t.peft_moe_conversion || m.tower_modules_peft_refuses.empty() ||
      t.lora_targets.by_all_linear)
    return;
  std::string clashing;
  for (const LinearModule& l : m.linear_modules) {
    const auto& refused = m.tower_modules_peft_refuses;
    if (targets_matrix(t.lora_targets, l.matrix) && std::find(refused.begin(), refused.end(), l.name) != refused.end())
      clashing += (clashing.empty() ? "" : ",") + l.name;
  }
  if (!clashing.empty())
    f.fail("--lora-targets", clashing,
           "PEFT also matches these names in " + m.tower_peft_refuses + ", a class it cannot adapt (ValueError)");
}

}  // namespace

int64_t effective_layers(const ModelSpec& m, const TrainingSpec& t) {
  return t.num_layers_override > 0 ? t.num_layers_override : m.num_hidden_layers;
}

bool checked_product(int64_t a, int64_t b, int64_t limit, int64_t& out) {
  int64_t p = 0;
  if (__builtin_mul_overflow(a, b, &p) || p > limit || p < -limit) return false;
  out = p;
  return true;
}

TrainingSpec with_defaults(TrainingSpec t) {
  if (t.gbs != 0) return t;
  int64_t gbs = 0;
  if (!checked_product(t.mbs, t.dp, limits::kGbs, gbs) || !checked_product(gbs, 4, limits::kGbs, gbs) ||
      !checked_product(gbs, t.pp, limits::kGbs, gbs))
    throw InputError({{kCli, "--gbs", "0",
                       "the default 4 * pp * mbs * dp exceeds " + str(limits::kGbs) + " sequences; give --gbs"}});
  t.gbs = gbs;
  return t;
}

std::vector<std::pair<int64_t, int64_t>> stage_layer_ranges(const ModelSpec& m, const TrainingSpec& t) {
  const int64_t layers = effective_layers(m, t);
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t first = 0;
  for (int64_t i = 0; i < t.pp; ++i) {
    int64_t n = layers / t.pp + (i < layers % t.pp ? 1 : 0);
    if (!t.layers_per_stage.empty()) n = t.layers_per_stage[size_t(i)];
    out.emplace_back(first, first + n);
    first += n;
  }
  return out;
}

std::vector<Problem> validate_training(const TrainingSpec& t, const ModelSpec& m) {
  Flags f;
  check_ranges(f, t);
  check_streambp(f, t);
  if (!f.problems.empty()) return f.problems;

  f.divides("--tp", t.tp, "num_attention_heads", m.num_attention_heads);
  if (m.windowed_attention_heads > 0)
    f.divides("--tp", t.tp, "the sliding-window layers' query heads", m.windowed_attention_heads);
  // where the full-attention layers have their own key/value heads (Gemma 4's
  // num_global_key_value_heads, MiMo-V2-Flash's num_key_value_heads beside its windowed layers' twice
  // as many), each count by what it is: the config keys differ between the families
  const bool two_kinds = m.full_attention_kv_heads > 0;
  if (m.attention() == AttentionKind::gqa)
    f.divides("--tp", t.tp, two_kinds ? "the sliding-window layers' key/value heads" : "num_key_value_heads",
              m.num_key_value_heads);
  for (const LayerVariant& v : m.layer_variants)  // layers with their own key/value heads
    if (v.kv_heads > 0) f.divides("--tp", t.tp, "a layer's own key/value heads", v.kv_heads);
  if (m.attention() == AttentionKind::gqa && two_kinds)
    f.divides("--tp", t.tp, "the full-attention layers' key/value heads", m.full_attention_kv_heads);
  const int64_t layers = effective_layers(m, t);
  if (t.pp > layers) f.fail("--pp", str(t.pp), "must not exceed the number of layers = " + str(layers));
  if (m.max_sequence_tokens > 0 && t.seq > m.max_sequence_tokens)
    f.fail("--seq", str(t.seq),
           "exceeds the model's " + m.max_sequence_key + " = " + str(m.max_sequence_tokens) +
               ": the model's position table (learned, sinusoidal or ALiBi) has no rows beyond it");
  if (m.is_moe()) {
    f.divides("--ep", t.ep, "n_routed_experts", m.n_routed_experts);
    if ((t.dp * t.tp) % t.ep != 0) f.fail("--ep", str(t.ep), "must divide dp * tp = " + str(t.dp * t.tp));
  } else if (t.ep > 1) {
    f.fail("--ep", str(t.ep), "needs a mixture-of-experts model");
  }
  if (const FrameworkProfile* profile = find_framework(t.framework); profile && profile->cannot_run)
    if (const std::string why = profile->cannot_run(m); !why.empty()) f.fail("--framework", t.framework, why);
  check_peft_moe_targets(f, t, m);
  check_peft_tower_targets(f, t, m);
  check_mamba1_adapters(f, t, m);
  check_targets_reach_a_layer(f, t, m);
  check_kv_sharing_sources(f, t, m);
  if (t.gbs > 0 && t.gbs % (t.mbs * t.dp) != 0)
    f.fail("--gbs", str(t.gbs), "must be a multiple of mbs * dp = " + str(t.mbs * t.dp));
  if (!t.layers_per_stage.empty()) check_layers_per_stage(f, t.layers_per_stage, t.pp, layers);
  return f.problems;
}

std::vector<Problem> validate_plan(const Plan& p, const TrainingSpec& t, const ModelSpec& m) {
  Flags f;
  check_stage_list(f, "--recompute-layers", p.recompute_layers, t.pp);
  check_stage_list(f, "--offload-layers", p.offload_layers, t.pp);
  if (!f.problems.empty()) return f.problems;
  const auto ranges = stage_layer_ranges(m, t);
  for (size_t i = 0; i < ranges.size(); ++i) {
    const int64_t n = ranges[i].second - ranges[i].first;
    const auto at = [i](const std::vector<int64_t>& v) -> int64_t {
      return v.empty() ? 0 : (v.size() == 1 ? v[0] : v[i]);
    };
    const int64_t r = p.recompute_layers.empty() ? 0 : at(p.recompute_layers), o = at(p.offload_layers);
    if (r + o > n) {  // each at most limits::kLayers: no overflow
      const bool both = !p.recompute_layers.empty() && !p.offload_layers.empty();
      const std::string flag = both                       ? "--recompute-layers + --offload-layers"
                               : p.offload_layers.empty() ? "--recompute-layers"
                                                          : "--offload-layers";
      const std::string value =
          both ? str(r) + " + " + str(o) : join(p.offload_layers.empty() ? p.recompute_layers : p.offload_layers);
      f.fail(flag, value, "stage " + str(int64_t(i)) + " has only " + str(n) + " layers (recomputed + offloaded)");
      break;
    }
  }
  const int64_t layers = effective_layers(m, t);
  for (const auto& [index, choice] : p.layer_overrides)
    if (index < 0 || index >= layers) f.fail("layer", str(index), "must be a layer index below " + str(layers));
  return f.problems;
}

}  // namespace remat
