#include "options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

#include "remat/cost/op_time.hpp"
#include "remat/io/sha256.hpp"
#include "remat/report/json_text.hpp"
#include "remat/spec/framework.hpp"
#include "remat/spec/lora_placement.hpp"
#include "remat/spec/text.hpp"
#include "remat/spec/validate.hpp"
#include "version.hpp"
#include "work_limits.hpp"

namespace remat::cli {

namespace {

// CLI11 saturates integers beyond int64 and rejects "2.5" with a generic
// message; this names the flag and the text as typed.
CLI::Validator integer_text() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        int64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec == std::errc::result_out_of_range) return "is out of range for an integer (got " + s + ")";
        if (ec != std::errc() || end != s.data() + s.size()) return "must be an integer (got " + s + ")";
        return std::string();
      },
      "");
}

// One line per registered profile (src/spec/profiles/).
std::string framework_help() {
  std::string text = "implementation profile, one of:";
  for (const FrameworkProfile* p : framework_profiles()) text += "\n  " + std::string(p->name) + ": " + p->summary;
  return text;
}

}  // namespace

void add_common_options(CLI::App& app, CommonOptions& o) {
  app.add_option("--model", o.model,
                 "model spec: YAML, Hugging Face config.json, or a built-in name (" + builtin_names("models") + ")")
      ->capture_default_str();
  app.add_option("--hardware", o.hardware, "hardware spec: YAML or a built-in name (" + builtin_names("hardware") + ")")
      ->capture_default_str();
  app.add_option("--tp", o.tp, "tensor-parallel size")
      ->capture_default_str()
      ->check(integer_text())
      ->each([&o](const std::string&) { o.layout_given.insert("--tp"); });
  app.add_option("--pp", o.pp, "pipeline-parallel size")
      ->capture_default_str()
      ->check(integer_text())
      ->each([&o](const std::string&) { o.layout_given.insert("--pp"); });
  app.add_option("--dp", o.dp, "data-parallel size")
      ->capture_default_str()
      ->check(integer_text())
      ->each([&o](const std::string&) { o.layout_given.insert("--dp"); });
  app.add_option("--ep", o.ep, "expert-parallel size")
      ->capture_default_str()
      ->check(integer_text())
      ->each([&o](const std::string&) { o.layout_given.insert("--ep"); });
  app.add_option("--mbs", o.mbs, "microbatch size (sequences)")
      ->capture_default_str()
      ->check(integer_text())
      ->each([&o](const std::string&) { o.layout_given.insert("--mbs"); });
  app.add_option("--gbs", o.gbs, "global batch size (sequences); 0: 4*pp microbatches per dp rank")
      ->capture_default_str()
      ->check(integer_text())
      ->each([&o](const std::string&) { o.layout_given.insert("--gbs"); });
  app.add_option("--seq", o.seq, "sequence length")
      ->capture_default_str()
      ->check(integer_text())
      ->each([&o](const std::string&) { o.layout_given.insert("--seq"); });
  app.add_option("--num-layers", o.num_layers, "override the model's layer count (the paper's 63 for DeepSeek)")
      ->check(integer_text());
  app.add_option("--layers-per-stage", o.layers_per_stage, "layers per pipeline stage, e.g. 21,20,20,19");
  app.add_option("--decoder-first-pipeline-num-layers", o.megatron_split.first_stage_layers,
                 "Megatron-LM's: layers on the first stage (the others even)");
  app.add_option("--decoder-last-pipeline-num-layers", o.megatron_split.last_stage_layers,
                 "Megatron-LM's: layers on the last stage (the others even)");
  app.add_option("--pipeline-model-parallel-layout", o.megatron_split.layout,
                 "Megatron-LM's layout, e.g. 'Et*6|(t*8|)*14t*7L' (E embedding, t a layer, L loss, | a stage)");
  app.add_flag("--no-sequence-parallel", o.no_sequence_parallel, "tp without sequence parallelism");
  app.add_option("--precision", o.precision, "mixed (bf16 + fp32 master) or bf16")
      ->check(CLI::IsMember({"mixed", "bf16"}))
      ->capture_default_str();
  app.add_option("--optimizer", o.optimizer, "adam, sgd or none (backprop only)")
      ->check(CLI::IsMember({"adam", "sgd", "none"}))
      ->capture_default_str();
  app.add_option("--zero-stage", o.zero_stage, "0 replicated, 1 distributed optimizer, 2 + sharded grads")
      ->capture_default_str()
      ->check(integer_text())
      ->each([&o](const std::string&) { o.zero_stage_given = true; });
  app.add_option("--framework", o.framework, framework_help())->capture_default_str();
  app.add_flag("--swiglu-unfused", o.swiglu_unfused, "SwiGLU as separate ops (saves silu(gate) too)");
  app.add_flag("--gqa-expand-kv", o.gqa_expand_kv, "keys/values repeated to all heads before attention");
  app.add_flag("--no-fp32-logits", o.no_fp32_logits, "the loss keeps no fp32 copy of the logits");
  app.add_flag("--no-flash", o.no_flash, "attention materializes the softmax");
  app.add_option("--replay", o.replay, "recompute replay: full (Megatron) or early-stop (PyTorch non-reentrant)")
      ->check(CLI::IsMember({"full", "early-stop"}))
      ->capture_default_str();
  app.add_option("--streambp-chunks", o.streambp_chunks, "StreamBP: sequence chunks per layer backward (D)")
      ->capture_default_str();
  app.add_option("--lm-head-chunks", o.lm_head_chunks, "StreamBP: sequence chunks of the LM head and loss (C)")
      ->capture_default_str();
  app.add_option("--objective", o.objective, "sft, grpo (group of --grpo-group responses) or dpo (chosen + rejected)")
      ->capture_default_str();
  app.add_option("--grpo-group", o.grpo_group, "GRPO responses per prompt (G)")->capture_default_str();
  app.add_option("--prompt-tokens", o.prompt_tokens,
                 "GRPO: prompt tokens per sequence; logits only for the completion (TRL's logits_to_keep)")
      ->check(integer_text());
  app.add_option("--lora-rank", o.lora_rank, "LoRA rank; 0 trains the full model")->capture_default_str();
  app.add_option("--lora-targets", o.lora_targets,
                 "matrices with adapters: any of q,k,v,o,gate,up,down,router, q_a,q_b,kv_a,kv_b (DeepSeek's latent "
                 "attention) (qkv and mlp name three each), "
                 "all-linear (PEFT's), or the model's own module names as PEFT's target_modules match them "
                 "(q_proj, query_key_value, c_attn, w1, in_proj_qkvz, in_proj, out_proj, shared_expert_gate, ...); "
                 "under --framework hf, gate/up/down on the MoE families PEFT converts adapt the routed experts")
      ->capture_default_str();
  app.add_option("--lora-dropout", o.lora_dropout, "LoRA dropout; > 0 saves a dropped copy of each adapted input")
      ->capture_default_str();
  app.add_option("--attention", o.attention,
                 "sdpa (a fused kernel that keeps softmax statistics) or eager (materialized scores; as --no-flash)")
      ->check(CLI::IsMember({"sdpa", "eager"}));
  app.add_option("--mixer-kernels", o.mixer_kernels,
                 "hybrid models' Mamba-2 / Gated DeltaNet mixers: fused (mamba_ssm, fla) or torch (transformers' "
                 "plain-PyTorch fallback); default: the framework's (torch under hf, fused otherwise)")
      ->check(CLI::IsMember({"fused", "torch"}));
  app.add_option("--json", o.json_path, "write the JSON report to FILE ('-' for stdout)");
  // flags that apply only with another: remembered when given, checked in load_inputs
  for (const char* flag : {"--num-layers", "--grpo-group", "--lora-targets", "--lora-dropout"})
    app.get_option(flag)->each([&o, flag](const std::string&) { o.given.insert(flag); });
  app.add_option("--format", o.format, "stdout format")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

void add_strategy_options(CLI::App& sub, StrategyOptions& o) {
  sub.add_option("--strategy", o.strategy, "none, full, selective, standard, eagle, offload or streambp")
      ->capture_default_str();
  sub.add_option("--recompute-layers", o.recompute_layers,
                 "R: layers per stage that use the strategy; one value or one per stage (9,9,8,4); default all");
  sub.add_option("--offload-layers", o.offload_layers, "layers per stage offloaded after the recomputed ones");
}

std::vector<Strategy> profile_strategies(const TrainingSpec& t, const std::vector<Strategy>& wanted, bool typed,
                                         const char* flag) {
  const FrameworkProfile* profile = find_framework(t.framework);
  if (!profile) return wanted;
  std::vector<Strategy> out;
  for (Strategy s : wanted) {
    if (t.model_runs_no_checkpointing && s != Strategy::none) {
      if (!typed) continue;
      throw InputError({{"command line", flag, to_string(s),
                         "recomputes layers, and this model's transformers class does not support gradient "
                         "checkpointing: the " +
                             std::string(profile->name) + " profile runs it with --strategy none only"}});
    }
    if (framework_runs(*profile, s)) {
      out.push_back(s);
    } else if (typed) {
      std::string runs;
      for (Strategy r : profile->strategies) runs += (runs.empty() ? "" : ", ") + std::string(to_string(r));
      throw InputError(
          {{"command line", flag, to_string(s), "the " + std::string(profile->name) + " profile runs only " + runs}});
    }
  }
  return out;
}

bool profile_runs_block_choices(const TrainingSpec& t) {
  return !profile_strategies(t, {Strategy::standard, Strategy::eagle}, false, "").empty();
}

Plan plan_from(const StrategyOptions& o) {
  Plan p;
  if (!parse_strategy(o.strategy, p.strategy))
    throw InputError({{"command line", "--strategy", o.strategy,
                       "must be one of none, full, selective, standard, eagle, offload, streambp"}});
  if (!o.recompute_layers.empty()) p.recompute_layers = parse_int_list("--recompute-layers", o.recompute_layers);
  if (!o.recompute_layers.empty() && p.strategy == Strategy::none)
    throw InputError({{"command line", "--recompute-layers", o.recompute_layers,
                       "applies only with a recompute strategy (--strategy none recomputes nothing)"}});
  if (!o.offload_layers.empty()) p.offload_layers = parse_int_list("--offload-layers", o.offload_layers);
  return p;
}

std::vector<int64_t> parse_int_list(const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size())
      throw InputError({{"command line", flag, text, "must be an integer or a comma-separated list of integers"}});
    out.push_back(v);
    start = comma + 1;
  }
  return out;
}

namespace {

// --lora-targets read against the model's modules (resolve_lora_targets).
LoraTargets model_lora_targets(const std::string& text, const ModelSpec& m) {
  const std::vector<std::string> names = split_list(text);
  if (names.empty() || std::find(names.begin(), names.end(), "") != names.end())
    throw InputError({{"command line", "--lora-targets", text, "takes a comma-separated list of module names"}});
  const ResolvedLoraTargets resolved = resolve_lora_targets(m, names);
  if (!resolved.refusal.empty()) throw InputError({{"command line", "--lora-targets", text, resolved.refusal}});
  return resolved.targets;
}

// A flag given that another flag's value makes meaningless: refused, not ignored.
void refuse_unused_flags(const CommonOptions& o) {
  const auto refuse = [](const std::string& flag, const std::string& value, const std::string& why) {
    throw InputError({{"command line", flag, value, why}});
  };
  if (o.given.count("--num-layers") && o.num_layers == 0)
    refuse("--num-layers", "0", "must be at least 1 (leave it out for the model's layer count)");
  if (o.given.count("--grpo-group") && o.objective != "grpo")
    refuse("--grpo-group", std::to_string(o.grpo_group), "applies only with --objective grpo");
  if (o.lora_rank == 0 && o.given.count("--lora-targets"))
    refuse("--lora-targets", o.lora_targets, "applies only with --lora-rank > 0");
  if (o.lora_rank == 0 && o.given.count("--lora-dropout"))
    refuse("--lora-dropout", fmt::format("{}", o.lora_dropout), "applies only with --lora-rank > 0");
}

TrainingSpec training_from(const CommonOptions& o) {
  TrainingSpec t;
  t.tp = o.tp, t.pp = o.pp, t.dp = o.dp, t.ep = o.ep, t.mbs = o.mbs, t.gbs = o.gbs, t.seq = o.seq;
  if (!o.layers_per_stage.empty()) t.layers_per_stage = parse_int_list("--layers-per-stage", o.layers_per_stage);
  t.sequence_parallel = !o.no_sequence_parallel;
  t.precision = o.precision == "bf16" ? Precision::bf16 : Precision::mixed;
  t.optimizer = o.optimizer == "sgd" ? Optimizer::sgd : o.optimizer == "none" ? Optimizer::none : Optimizer::adam;
  t.zero_stage = o.zero_stage;
  t.swiglu_fused = !o.swiglu_unfused;
  t.gqa_expand_kv = o.gqa_expand_kv;
  t.loss_fp32_logits = !o.no_fp32_logits;
  t.flash_attention = o.attention.empty() ? !o.no_flash : o.attention == "sdpa";
  if (o.no_flash && o.attention == "sdpa")
    throw InputError({{"command line", "--attention", o.attention, "contradicts --no-flash"}});
  t.replay = o.replay == "early-stop" ? RecomputeReplay::early_stop : RecomputeReplay::full;
  const FrameworkProfile* profile = find_framework(o.framework);
  if (!profile) throw InputError({{"command line", "--framework", o.framework, "must be one of " + framework_names()}});
  t = apply_framework(t, profile->name);
  if (!o.mixer_kernels.empty())
    t.mixer_kernels = o.mixer_kernels == "torch" ? MixerKernels::torch : MixerKernels::fused;
  if (profile->default_zero_stage >= 0 && !o.zero_stage_given) t.zero_stage = profile->default_zero_stage;
  t.streambp_chunks = o.streambp_chunks, t.lm_head_chunks = o.lm_head_chunks;
  if (o.objective == "sft" || o.objective == "grpo" || o.objective == "dpo")
    t.objective = o.objective == "grpo" ? Objective::grpo : o.objective == "dpo" ? Objective::dpo : Objective::sft;
  else
    throw InputError({{"command line", "--objective", o.objective, "must be sft, grpo or dpo"}});
  t.grpo_group = o.grpo_group, t.lora_rank = o.lora_rank;
  if (o.prompt_tokens != 0 && (t.objective != Objective::grpo || o.prompt_tokens < 0 || o.prompt_tokens >= t.seq))
    throw InputError({{"command line", "--prompt-tokens", std::to_string(o.prompt_tokens),
                       "needs --objective grpo and 0 < prompt tokens < --seq = " + std::to_string(t.seq)}});
  t.prompt_tokens = o.prompt_tokens;
  t.lora_dropout = o.lora_dropout;
  return t;
}

// What validate_training says of `flag` at this layout ("" when nothing).
std::string layout_problem(const TrainingSpec& t, const ModelSpec& m, const std::string& flag) {
  for (const Problem& p : validate_training(t, m))
    if (p.key == flag) return p.message;
  return "";
}

// remat's default layout is LLaMA3-70B's (tp 8, pp 4). Where the model cannot take an untyped
// --tp, --pp or --ep (a head count 8 does not divide, fewer than 4 layers), it is halved until
// the model takes it, and a note says so; a typed value is never changed.
void fit_untyped_layout(const CommonOptions& o, const ModelSpec& m, TrainingSpec& t, std::vector<std::string>& notes) {
  const std::pair<std::string, int64_t TrainingSpec::*> sizes[] = {
      {"--tp", &TrainingSpec::tp}, {"--pp", &TrainingSpec::pp}, {"--ep", &TrainingSpec::ep}};
  for (const auto& [flag, size] : sizes) {
    if (o.layout_given.count(flag)) continue;
    const std::string why = layout_problem(t, m, flag);
    if (why.empty()) continue;
    const int64_t remat_default = t.*size;
    while (t.*size > 1 && !layout_problem(t, m, flag).empty()) t.*size /= 2;
    if (!layout_problem(t, m, flag).empty()) {  // no halving fits: the error names the default
      t.*size = remat_default;
      continue;
    }
    notes.push_back(flag + " not given: " + std::to_string(t.*size) + ", as remat's default " +
                    std::to_string(remat_default) + " fails \"" + why + "\"; give " + flag + " to choose");
  }
  // a model with a position table (GPT-2, GPT-J, MPT) takes no default sequence beyond it
  if (!o.layout_given.count("--seq") && m.max_sequence_tokens > 0 && t.seq > m.max_sequence_tokens) {
    notes.push_back("--seq not given: " + std::to_string(m.max_sequence_tokens) + ", the model's " +
                    m.max_sequence_key + ", as remat's default " + std::to_string(t.seq) +
                    " exceeds its position table; give --seq to choose");
    t.seq = m.max_sequence_tokens;
  }
}

// A stack that runs the model's own attention code runs a model without an sdpa path eager, as
// transformers falls back to it; asking it for sdpa raises there, so it is refused here.
CommonOptions eager_where_only_eager(const CommonOptions& o, const ModelSpec& m, std::vector<std::string>& notes) {
  const FrameworkProfile* profile = find_framework(o.framework);
  if (!profile || !profile->runs_model_code || !m.eager_attention_only) return o;
  if (o.attention == "sdpa")
    throw InputError({{"command line", "--attention", o.attention, sdpa_refusal(o.framework, m)}});
  CommonOptions eager = o;
  eager.attention = "eager";
  if (o.attention.empty() && !o.no_flash)
    notes.push_back("--attention eager: transformers runs this model with eager attention only");
  return eager;
}

// The longest of the model's per-layer lists (layer kinds, windows, rotary, shapes); 0: none.
size_t per_layer_list_length(const ModelSpec& m) {
  return std::max({m.layer_mixers.size(), m.layer_has_ffn.size(), m.windowed_layers.size(), m.nope_layers.size(),
                   m.compressed_layers.size(), m.layer_variant_ids.size(), m.skipped_cross_attention_layers.size(),
                   m.indexer_shared_layers.size()});
}

// A file that names each layer's kind cannot grow: the layers beyond its list would take the
// default kind silently, and transformers refuses a layer_types list of another length.
void refuse_extending_layer_list(const ModelSpec& m, int64_t layers, const std::string& file) {
  const size_t listed = per_layer_list_length(m);
  if (listed == 0 || layers <= int64_t(listed)) return;
  throw InputError({{"command line", "--num-layers", std::to_string(layers),
                     "must be at most " + std::to_string(listed) + ": " + file +
                         " lists each layer's kind (layer_types or its pattern) and remat does not extend that "
                         "list"}});
}

}  // namespace

Inputs load_inputs(const CommonOptions& o, const std::string& command) {
  check_pipeline_stages(o);
  const SpecSource model_src = read_spec_source(o.model, "models");
  const SpecSource hw_src = read_spec_source(o.hardware, "hardware");
  Inputs in;
  in.model = load_model(model_src);
  for (const auto& note : in.model.notes)
    std::cerr << "note: " << escape_text(model_src.label) << ": " << escape_text(note) << "\n";
  in.hardware = load_hardware(hw_src);
  if (o.num_layers < 0)
    throw InputError({{"command line", "--num-layers", std::to_string(o.num_layers), "must not be negative"}});
  if (o.num_layers > limits::kLayers)
    throw InputError({{"command line", "--num-layers", std::to_string(o.num_layers),
                       "must be at most " + std::to_string(limits::kLayers)}});
  if (o.num_layers > 0) {
    refuse_extending_layer_list(in.model, o.num_layers, model_src.label);
    in.model.set_layer_count(o.num_layers);
    if (in.model.first_k_dense_replace > o.num_layers)
      throw InputError(
          {{"command line", "--num-layers", std::to_string(o.num_layers),
            "is below the model's first_k_dense_replace = " + std::to_string(in.model.first_k_dense_replace)}});
  }
  refuse_unused_flags(o);
  in.training = training_from(eager_where_only_eager(o, in.model, in.notes));
  const FrameworkProfile* profile = find_framework(in.training.framework);
  if (profile) {
    const size_t known_notes = in.model.notes.size();
    in.model = model_as_built(std::move(in.model), profile->name);
    in.notes.insert(in.notes.end(), in.model.notes.begin() + std::ptrdiff_t(known_notes), in.model.notes.end());
  }
  in.training.model_runs_no_checkpointing =
      profile && profile->runs_model_code && in.model.gradient_checkpointing_unsupported;
  if (in.training.lora_rank > 0) in.training.lora_targets = model_lora_targets(o.lora_targets, in.model);
  if (!o.megatron_split.empty()) {
    if (!o.layers_per_stage.empty())
      throw InputError({{"command line", "--layers-per-stage", o.layers_per_stage,
                         "cannot be given with Megatron-LM's split flags (--decoder-first/last-pipeline-num-layers, "
                         "--pipeline-model-parallel-layout)"}});
    if (in.training.pp < 1 || in.training.pp > limits::kLayers)
      throw InputError({{"command line", "--pp", std::to_string(in.training.pp),
                         "must be between 1 and " + std::to_string(limits::kLayers)}});
    in.training.layers_per_stage =
        megatron_layers_per_stage(o.megatron_split, effective_layers(in.model, in.training), in.training.pp,
                                  "command line", in.model.num_nextn_predict_layers);
  }
  fit_untyped_layout(o, in.model, in.training, in.notes);
  auto problems = validate_training(in.training, in.model);
  // a layout value nobody typed is remat's default (LLaMA3-70B's tp 8 pp 4 mbs 4): say so
  for (Problem& p : problems)
    if (p.file == "command line" && p.key.rfind("--", 0) == 0 && !o.layout_given.count(p.key) &&
        std::set<std::string>{"--tp", "--pp", "--dp", "--ep", "--mbs", "--gbs", "--seq"}.count(p.key))
      p.value += ", remat's default: give " + p.key + " for this model";
  if (problems.empty()) problems = network_problems(in.training, in.hardware, hw_src.label);
  if (!problems.empty()) throw InputError(std::move(problems));
  in.training = with_defaults(in.training);
  for (const auto& gap : framework_time_gaps(in.hardware, in.training.framework, in.model, in.training))
    in.notes.push_back(hw_src.label + ": " + gap);
  in.hardware = apply_framework(in.hardware, in.training.framework);
  in.meta = {
      REMAT_VERSION,
      REMAT_GIT_COMMIT,
      command,
      {{"model", model_src.label, sha256_hex(model_src.text)}, {"hardware", hw_src.label, sha256_hex(hw_src.text)}}};
  return in;
}

void print_notes(const Inputs& in) {
  for (const auto& note : in.notes) std::cerr << "note: " << escape_text(note) << "\n";
}

double memory_budget_bytes(bool given, double gib, const HardwareSpec& hw) {
  if (!given) return hw.hbm_bytes - hw.memory_reserve_bytes;
  if (!std::isfinite(gib) || gib < 0)
    throw InputError({{"command line", "--memory-budget-GiB", fmt::format("{}", gib), "must be a finite number >= 0"}});
  if (gib > limits::kGiB)
    throw InputError({{"command line", "--memory-budget-GiB", fmt::format("{}", gib),
                       "must be at most " + fmt::format("{}", limits::kGiB)}});
  return gib * 1024.0 * 1024.0 * 1024.0;
}

int64_t worker_threads(int64_t requested) {
  if (requested < 0 || requested > 1024)
    throw InputError({{"command line", "--threads", std::to_string(requested), "must be 0 (one per core) to 1024"}});
  return requested > 0 ? requested : std::max<int64_t>(1, std::thread::hardware_concurrency());
}

namespace {

// The last guard before anything is printed: every number of the report is
// finite and every integer (byte counts) below 2^62 in magnitude, so that a
// layout beyond what remat models fails with exit code 2 instead of printing
// a wrapped or infinite figure.
void check_report_numbers(const Json& j, const std::string& path) {
  if (j.is_object()) {
    for (const auto& [key, v] : j.items()) check_report_numbers(v, path.empty() ? key : path + "." + key);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) check_report_numbers(j[i], path + "[" + std::to_string(i) + "]");
  } else if ((j.is_number_float() && !std::isfinite(j.get<double>())) ||
             (j.is_number_integer() &&
              (j.get<int64_t>() >= (int64_t{1} << 62) || j.get<int64_t>() <= -(int64_t{1} << 62))) ||
             (j.is_number_unsigned() && j.get<uint64_t>() >= (uint64_t{1} << 62))) {
    throw InputError({{"command line", "(result) " + path, j.dump(),
                       "is not finite or beyond 2^62: the inputs are beyond what remat can model"}});
  }
}

}  // namespace

void write_stdout(const std::string& text) {
  std::cout << text << std::flush;
  if (!std::cout)
    throw InputError({{"stdout", "(output)", "", std::string("cannot be written: ") + std::strerror(errno)}});
}

void write_text_file(const std::string& path, const std::string& flag, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();  // a full disk shows at the flush
  if (!out) throw InputError({{path, flag, path, "cannot be written"}});
}

std::string terminal_text(const std::string& table) { return escape_text(table, /*keep_newlines=*/true); }

void emit(const CommonOptions& o, const std::string& table, const Json& report) {
  check_report_numbers(report, "");
  const std::string json_text = dump_json_text(report, 2) + "\n";
  write_stdout(o.format == "json" || o.json_path == "-" ? json_text : terminal_text(table));
  if (!o.json_path.empty() && o.json_path != "-") write_text_file(o.json_path, "--json", json_text);
}

}  // namespace remat::cli
