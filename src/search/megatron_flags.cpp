// Megatron-LM flags (megatron/training/arguments.py at d98e8a64dd): model
// dims, layout, the uneven pipeline split (--decoder-first/last-pipeline-num-layers)
// and recompute (--recompute-granularity full|selective, --recompute-method
// uniform|block and --recompute-num-layers for full only, --recompute-modules
// for selective only).
#include "remat/search/megatron_flags.hpp"

#include <fmt/format.h>

#include <charconv>

#include "megatron_arch.hpp"
#include "remat/spec/pipeline_split.hpp"
#include "remat/spec/problems.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

std::string flag(const char* name, int64_t value) { return fmt::format("{} {}", name, value); }

// Megatron's --moe-layer-freq list expression: 0 dense, 1 MoE, per layer.
std::string moe_pattern(const ModelSpec& m, int64_t layers) {
  return megatron_layer_pattern(layers, [&m](int64_t i) { return m.layer_is_moe(i); });
}

std::vector<std::string> model_flags(const ModelSpec& m, const TrainingSpec& t, bool te) {
  const int64_t layers = effective_layers(m, t);
  std::vector<std::string> f = {
      flag("--num-layers", layers), flag("--hidden-size", m.hidden_size),
      flag("--ffn-hidden-size", m.intermediate_size > 0 ? m.intermediate_size : m.moe_intermediate_size),
      flag("--num-attention-heads", m.num_attention_heads)};
  if (m.num_nextn_predict_layers > 0) f.push_back(flag("--mtp-num-layers", m.num_nextn_predict_layers));
  if (m.attention() == AttentionKind::mla) {
    f.push_back("--multi-latent-attention");
    if (m.q_lora_rank > 0) f.push_back(flag("--q-lora-rank", m.q_lora_rank));
    f.push_back(flag("--kv-lora-rank", m.kv_lora_rank));
    f.push_back(flag("--qk-head-dim", m.qk_nope_head_dim));
    f.push_back(flag("--qk-pos-emb-head-dim", m.qk_rope_head_dim));
    f.push_back(flag("--v-head-dim", m.v_head_dim));
    f.push_back("--qk-layernorm");  // the latent norms of q and kv
  } else {
    if (m.num_key_value_heads != m.num_attention_heads) {
      f.push_back("--group-query-attention");
      f.push_back(flag("--num-query-groups", m.num_key_value_heads));
    }
    if (m.head_dim > 0 && m.head_dim * m.num_attention_heads != m.hidden_size)
      f.push_back(flag("--kv-channels", m.head_dim));
  }
  if (m.is_moe()) {
    f.push_back(flag("--num-experts", m.n_routed_experts));
    f.push_back(flag("--moe-router-topk", m.num_experts_per_tok));
    // TransformerConfig: "Please use --moe-router-pre-softmax when topk is 1" (Llama 4)
    if (m.num_experts_per_tok == 1) f.push_back("--moe-router-pre-softmax");
    f.push_back(flag("--moe-ffn-hidden-size", m.moe_intermediate_size));
    if (m.moe_latent_size > 0) f.push_back(flag("--moe-latent-size", m.moe_latent_size));
    if (m.n_shared_experts > 0) f.push_back(flag("--moe-shared-expert-intermediate-size", m.shared_mlp_width()));
    if (m.first_k_dense_replace > 0 || m.moe_layer_freq > 1) f.push_back("--moe-layer-freq " + moe_pattern(m, layers));
    f.push_back("--moe-token-dispatcher-type alltoall");
    if (te) f.push_back("--moe-grouped-gemm");
  }
  for (const auto& arch : megatron_architecture_flags(m)) f.push_back(arch);
  for (const auto& pattern : megatron_layer_pattern_flags(m, layers)) f.push_back(pattern);
  if (!m.tie_word_embeddings) f.push_back("--untie-embeddings-and-output-weights");
  if (te) {
    f.push_back("--transformer-impl transformer_engine");
    return f;
  }
  // the local implementation without Apex or Transformer Engine, unfused as
  // --framework megatron-local models it
  for (const char* local :
       {"--transformer-impl local", "--no-gradient-accumulation-fusion", "--no-masked-softmax-fusion",
        "--no-bias-swiglu-fusion", "--no-rope-fusion", "--no-persist-layer-norm"})
    f.push_back(local);
  return f;
}

std::vector<std::string> layout_flags(const TrainingSpec& t, const MegatronSplit& split, bool moe) {
  std::vector<std::string> f = {flag("--tensor-model-parallel-size", t.tp),
                                flag("--pipeline-model-parallel-size", t.pp)};
  if (moe) f.push_back(flag("--expert-model-parallel-size", t.ep));
  if (t.tp > 1 && t.sequence_parallel) f.push_back("--sequence-parallel");
  for (const auto& s : split_flags(split)) f.push_back(s);
  for (auto* name : {"--seq-length", "--max-position-embeddings"}) f.push_back(flag(name, t.seq));
  f.push_back(flag("--micro-batch-size", t.mbs));
  f.push_back(flag("--global-batch-size", t.gbs));
  if (t.zero_stage >= 1 && t.dp > 1) f.push_back("--use-distributed-optimizer");
  return f;
}

[[noreturn]] void refuse(const std::string& key, const std::string& value, const std::string& message) {
  throw InputError({{"command line", key, value, message}});
}

ModuleSet parse_modules(const std::vector<std::string>& names, const ModelSpec& m) {
  ModuleSet s = 0;
  for (const auto& n : names) {
    MegatronModule mod;
    if (!parse_megatron_module(n, mod))
      refuse("--recompute-modules", n,
             "unknown module (core_attn, mlp, layernorm, moe_act, moe, shared_experts, mla_up_proj)");
    if (mod == MegatronModule::mla_up_proj && m.attention() != AttentionKind::mla)
      refuse("--recompute-modules", n, "mla_up_proj needs multi-latent attention; this model uses GQA");
    if (mod == MegatronModule::moe_act && !m.is_moe())
      refuse("--recompute-modules", n, "moe_act needs a mixture-of-experts model");
    s |= module_bit(mod);
  }
  return s == 0 ? kCoreAttn : s;
}

}  // namespace

std::vector<std::string> split_flags(const MegatronSplit& split) {
  std::vector<std::string> f;
  if (split.first_stage_layers > 0) f.push_back(flag("--decoder-first-pipeline-num-layers", split.first_stage_layers));
  if (split.last_stage_layers > 0) f.push_back(flag("--decoder-last-pipeline-num-layers", split.last_stage_layers));
  if (!split.layout.empty()) f.push_back("--pipeline-model-parallel-layout '" + split.layout + "'");
  return f;
}

std::string split_note(const MegatronSplit& split) {
  const std::vector<std::string> f = split_flags(split);
  return "pipeline split " + split_text(split.layers_per_stage) +
         " layers per stage (Megatron-LM: " + (f.empty() ? std::string("even, no split flag") : one_line(f)) + ")";
}

std::vector<std::string> MegatronArgs::all() const {
  std::vector<std::string> out = model;
  out.insert(out.end(), layout.begin(), layout.end());
  out.insert(out.end(), recompute.begin(), recompute.end());
  return out;
}

std::vector<std::string> recompute_flags(const MegatronRecompute& r) {
  switch (r.granularity) {
    case MegatronGranularity::none:
      return {};
    case MegatronGranularity::selective:
      return {"--recompute-granularity selective", "--recompute-modules " + module_list(r.modules)};
    case MegatronGranularity::full:
      break;
  }
  return {"--recompute-granularity full",
          r.method == MegatronMethod::block ? "--recompute-method block" : "--recompute-method uniform",
          flag("--recompute-num-layers", r.num_layers)};
}

MegatronArgs megatron_args(const ModelSpec& m, const TrainingSpec& t, const MegatronSplit& split,
                           const MegatronRecompute& r, bool te) {
  MegatronArgs a{model_flags(m, t, te), layout_flags(t, split, m.is_moe()), recompute_flags(r),
                 megatron_inexpressible(m)};
  if (split.layers_per_stage.size() > 1) a.notes.push_back(split_note(split));
  if (r.granularity == MegatronGranularity::full && r.method == MegatronMethod::uniform && r.num_layers > 1)
    a.notes.push_back(fmt::format("uniform {}: each stage's layers in chunks of {}, one input kept per chunk",
                                  r.num_layers, r.num_layers));
  return a;
}

MegatronRecompute parse_megatron_recompute(const MegatronRecomputeText& t, const ModelSpec& m) {
  MegatronRecompute r;
  if (t.granularity.empty()) {
    if (!t.method.empty() || !t.num_layers.empty())
      refuse(t.method.empty() ? "--recompute-num-layers" : "--recompute-method",
             t.method.empty() ? t.num_layers : t.method, "needs --recompute-granularity full");
    return r;
  }
  if (t.granularity == "selective") {
    if (!t.method.empty())
      refuse("--recompute-method", t.method, "Megatron-LM takes no recompute method with selective granularity");
    if (!t.num_layers.empty())
      refuse("--recompute-num-layers", t.num_layers, "must be absent with selective granularity");
    r.granularity = MegatronGranularity::selective;
    r.modules = parse_modules(t.modules, m);
    return r;
  }
  if (t.granularity != "full") refuse("--recompute-granularity", t.granularity, "must be full or selective");
  r.granularity = MegatronGranularity::full;
  if (t.method != "uniform" && t.method != "block")
    refuse("--recompute-method", t.method, "full granularity needs --recompute-method uniform or block");
  r.method = t.method == "block" ? MegatronMethod::block : MegatronMethod::uniform;
  const char* end = t.num_layers.data() + t.num_layers.size();
  const auto [at, ec] = std::from_chars(t.num_layers.data(), end, r.num_layers);
  if (t.num_layers.empty() || ec != std::errc() || at != end || r.num_layers < 1)
    refuse("--recompute-num-layers", t.num_layers,
           "full granularity needs one integer >= 1 (Megatron-LM takes one value for every stage)");
  return r;
}

std::string paste_safe(const std::vector<std::string>& flags, const std::string& indent) {
  std::string out;
  for (const auto& f : flags) out += indent + f + " \\\n";
  return out;
}

std::string one_line(const std::vector<std::string>& flags) {
  std::string out;
  for (const auto& f : flags) out += (out.empty() ? "" : " ") + f;
  return out;
}

std::string torchtitan_text(const MegatronRecompute& r, const MegatronSplit& split) {
  int64_t largest = 0, layers = 0;
  for (int64_t n : split.layers_per_stage) largest = std::max(largest, n), layers += n;
  switch (r.granularity) {
    case MegatronGranularity::none:
      return "[activation_checkpoint] mode = \"none\"";
    case MegatronGranularity::selective:
      return "no torchtitan equivalent: its selective_ac_option = \"op\" saves matmul and attention outputs and "
             "recomputes the rest, not Megatron's modules";
    case MegatronGranularity::full:
      break;
  }
  const bool all_layers = (r.method == MegatronMethod::uniform && r.num_layers == 1) ||
                          (r.method == MegatronMethod::block && r.num_layers >= largest);
  if (all_layers) return "[activation_checkpoint] mode = \"full\"";
  if (r.method == MegatronMethod::block && layers % r.num_layers == 0 && largest % r.num_layers == 0 &&
      split.layers_per_stage.front() == largest) {
    const int64_t every = largest / r.num_layers;
    return fmt::format(
        "[activation_checkpoint] mode = \"selective\", selective_ac_option = \"{}\" (every {}th layer: as many "
        "layers per stage as Megatron's block {})",
        every, every, r.num_layers);
  }
  return "no torchtitan equivalent: torchtitan takes no layer count (full, selective every k-th layer or op, "
         "memory_budget)";
}

std::string pytorch_text(const MegatronRecompute& r, const MegatronSplit& split) {
  (void)split;  // the same wrapping on every stage
  switch (r.granularity) {
    case MegatronGranularity::none:
      return "no torch.utils.checkpoint";
    case MegatronGranularity::selective: {
      std::string parts;
      const auto add = [&](MegatronModule mod, const char* what) {
        if (r.modules & module_bit(mod)) parts += (parts.empty() ? "" : "; ") + std::string(what);
      };
      add(MegatronModule::layernorm, "both norms (drop their outputs, rerun before the backward that reads them)");
      add(MegatronModule::core_attn, "checkpoint(core attention: softmax(QK^T)V from q, k, v)");
      add(MegatronModule::mla_up_proj, "checkpoint(MLA q/kv up projections and rope, dropping q, k, v)");
      add(MegatronModule::mlp, "checkpoint(dense MLP: fc1, SwiGLU, fc2 from the normed input)");
      add(MegatronModule::moe, "checkpoint(whole MoE layer from the router on)");
      add(MegatronModule::shared_experts, "checkpoint(shared experts)");
      add(MegatronModule::moe_act, "checkpoint(experts' SwiGLU)");
      return "every layer: " + parts;
    }
    case MegatronGranularity::full:
      break;
  }
  if (r.method == MegatronMethod::block)
    return fmt::format(
        "in each stage, the first {} layers: checkpoint(layer, use_reentrant=True); the others unwrapped",
        r.num_layers);
  return fmt::format("in each stage, every run of {} consecutive layers as one checkpoint(use_reentrant=True)",
                     r.num_layers);
}

}  // namespace remat
