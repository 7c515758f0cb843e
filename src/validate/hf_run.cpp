#include "remat/validate/hf_run.hpp"

#include "remat/report/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "remat/cost/params.hpp"
#include "remat/cost/stage_model.hpp"
#include "remat/spec/framework.hpp"
#include "remat/spec/lora_placement.hpp"
#include "remat/spec/problems.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

[[noreturn]] void refuse(const std::string& file, const HfStep& s, const std::string& key, const std::string& value,
                         const std::string& why) {
  throw InputError({{file, s.case_name + "." + key, value, why}});
}

// The names the harness handed PEFT, read as estimate reads --lora-targets; a skipped name (one
// the model lacks) was left out by PEFT too.
LoraTargets lora_targets(const HfStep& s, const ModelSpec& m, const std::string& file) {
  // the names are PEFT's: "gate" is the MoE router's module where transformers names it so (remat's
  // word gate, the MLP's gate projection, is gate_proj there)
  std::vector<std::string> names = s.lora_targets;
  const bool router_named_gate =
      std::any_of(m.linear_modules.begin(), m.linear_modules.end(),
                  [](const LinearModule& l) { return l.name == "gate" && l.matrix == "router"; });
  if (router_named_gate) std::replace(names.begin(), names.end(), std::string("gate"), std::string("router"));
  const ResolvedLoraTargets resolved = resolve_lora_targets(m, names);
  if (!resolved.refusal.empty()) {
    std::string names;
    for (const std::string& name : s.lora_targets) names += (names.empty() ? "" : ",") + name;
    refuse(file, s, "lora_targets", names, resolved.refusal);
  }
  return resolved.targets;
}

Objective objective(const HfStep& s, const std::string& file) {
  if (s.objective == "sft") return Objective::sft;
  if (s.objective == "grpo") return Objective::grpo;
  if (s.objective == "dpo") return Objective::dpo;
  refuse(file, s, "objective", s.objective, "must be sft, grpo or dpo");
}

}  // namespace

HfSetup hf_setup(const HfStep& s, const ModelSpec& model, const std::string& file) {
  TrainingSpec t;
  t.tp = t.pp = t.dp = t.ep = 1;
  t.mbs = s.mbs, t.gbs = s.mbs, t.seq = s.seq;
  if (s.precision != "bf16" && s.precision != "mixed")
    refuse(file, s, "precision", s.precision, "must be bf16 or mixed");
  t.precision = s.precision == "bf16" ? Precision::bf16 : Precision::mixed;
  if (s.attention != "sdpa" && s.attention != "eager")
    refuse(file, s, "attention", s.attention, "must be sdpa or eager");
  t.flash_attention = s.attention == "sdpa";
  t.objective = objective(s, file);
  if (s.grpo_group > 0) t.grpo_group = s.grpo_group;
  // examples/hf/hf_step.py's GRPO: a prompt of a quarter of the sequence, logits for the completion
  if (t.objective == Objective::grpo) t.prompt_tokens = s.seq / 4;
  if (s.mode == "lora") {
    t.lora_rank = s.lora_rank, t.lora_targets = lora_targets(s, model, file), t.lora_dropout = s.lora_dropout;
    t.lora_adapter_bytes = s.lora_adapter_dtype == "bfloat16" ? 2 : 4;
  } else if (s.mode != "full") {
    refuse(file, s, "mode", s.mode, "must be full or lora");
  }
  t = apply_framework(t, kHfFramework);
  t.zero_stage = 0;
  HfSetup setup{t, {}};
  if (s.checkpointing == "none" && s.checkpoint_layers >= 0)
    refuse(file, s, "checkpoint_layers", std::to_string(s.checkpoint_layers),
           "names layers to checkpoint in a step without checkpointing");
  if (s.checkpointing == "none") return setup;
  if (s.checkpointing != "non_reentrant" && s.checkpointing != "reentrant")
    refuse(file, s, "checkpointing", s.checkpointing, "must be none, non_reentrant or reentrant");
  setup.plan.strategy = Strategy::full;  // gradient_checkpointing_enable: every decoder layer
  if (s.checkpoint_layers >= 0) {        // or the first R, the others' flags turned off
    if (s.checkpoint_layers > s.num_layers)
      refuse(file, s, "checkpoint_layers", std::to_string(s.checkpoint_layers),
             "must not exceed num_hidden_layers = " + std::to_string(s.num_layers));
    setup.plan.recompute_layers = {s.checkpoint_layers};
  }
  setup.training.replay = s.checkpointing == "reentrant" ? RecomputeReplay::full : RecomputeReplay::early_stop;
  return setup;
}

namespace {

// What the run's model.parameters() holds by remat's count: the language model, the encoders held
// beside it, PEFT's trained adapters and those it holds untrained (on a tower's modules, on indexers
// run under no_grad, on skipped layers: still requiring a gradient, never given one).
void set_parameter_counts(HfComparison& c) {
  const TrainingSpec& t = c.setup.training;
  const int64_t layers = c.model.num_hidden_layers;
  const double adapters = c.estimate.stages.front().adapter_params + held_adapter_params(c.model, t, 0, layers, true);
  const double model = model_params(c.model, layers) + c.model.idle_params;
  // ERNIE 4.5's score-correction bias, one per expert in each MoE layer, requires no gradient
  double no_grad = 0;
  for (int64_t g = 0; g < layers && c.model.router_score_bias_param; ++g)
    if (c.model.layer_is_moe(g)) no_grad += double(c.model.n_routed_experts);
  c.predicted_params = model + adapters;
  c.predicted_trainable_params = t.lora_rank > 0 ? adapters : model - no_grad;
}

}  // namespace

HfComparison compare_hf(const HfStep& step, const ModelSpec& model, const HardwareSpec& hw, const std::string& file) {
  HfComparison c{step, hf_setup(step, model, file), model_as_built(model, kHfFramework), {}, 0, file, hw.name};
  // what estimate refuses for this run is refused here too, never priced another way
  if (std::vector<Problem> problems = validate_training(c.setup.training, c.model); !problems.empty())
    refuse(file, step, problems.front().key, problems.front().value, problems.front().message);
  if (const std::string why = sdpa_refusal(kHfFramework, c.model); step.attention == "sdpa" && !why.empty())
    refuse(file, step, "attention", step.attention, why);
  c.estimate = estimate(c.model, apply_framework(hw, kHfFramework), c.setup.training, c.setup.plan, hw.hbm_bytes);
  const StageMemory& mem = c.estimate.stages.front().memory_bytes;
  c.predicted_before_bytes = mem.weights + mem.optimizer + mem.runtime;
  set_parameter_counts(c);
  return c;
}

namespace {

// Same model, batch, sequence, mode, attention, precision and objective.
std::string setting_key(const HfStep& s) {
  std::string targets;
  for (const auto& t : s.lora_targets) targets += t + ",";
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", s.config, s.num_layers, s.seq, s.mbs, s.mode, s.lora_rank,
                     targets, s.lora_dropout, s.attention, s.precision, s.objective, s.grpo_group);
}

double time_s(const HfComparison& c) { return c.estimate.iteration.time_s; }

}  // namespace

bool HfTimeRatio::host_paced() const { return std::max(stretch, baseline_stretch) >= kHostPacedStretch; }

std::vector<HfTimeRatio> hf_time_ratios(const std::vector<HfComparison>& cases) {
  std::vector<HfTimeRatio> out;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].measured.checkpointing == "none") continue;
    for (size_t j = 0; j < cases.size(); ++j) {
      if (cases[j].measured.checkpointing != "none" || cases[j].source_file != cases[i].source_file ||
          setting_key(cases[j].measured) != setting_key(cases[i].measured))
        continue;
      out.push_back(
          {i, j, time_s(cases[i]) / time_s(cases[j]), cases[i].measured.step_time_s / cases[j].measured.step_time_s,
           cases[i].measured.step_time_s / time_s(cases[i]), cases[j].measured.step_time_s / time_s(cases[j])});
      break;
    }
  }
  return out;
}

namespace {

struct Spread {
  double mean_abs = 0, max_abs = 0;
  size_t count = 0;
  void add(double pct) { mean_abs += std::abs(pct), max_abs = std::max(max_abs, std::abs(pct)), ++count; }
  double mean() const { return count ? mean_abs / double(count) : 0; }
};

std::string summary_line(const char* what, const Spread& s, double bound_pct) {
  return fmt::format("{}: {} cases, mean |error| {:.2f}%, max {:.2f}% (bound {:.0f}%)\n", what, s.count, s.mean(),
                     s.max_abs, bound_pct);
}

struct Summary {
  Spread peak, before, ratio;
  size_t ratios_over_bound = 0, host_paced_over_bound = 0;
  size_t params_recorded = 0, params_equal = 0;
  double params_max_abs_pct = 0;  // of the steps whose counts differ, the largest difference in the total
};

constexpr double kRatioBoundPct = 10;

Summary summarize(const std::vector<HfComparison>& cases, const std::vector<HfTimeRatio>& ratios) {
  Summary s;
  for (const auto& c : cases) {
    s.peak.add(c.peak_error_pct()), s.before.add(c.before_error_pct());
    if (!c.params_recorded()) continue;
    ++s.params_recorded, s.params_equal += c.params_equal();
    s.params_max_abs_pct = std::max(s.params_max_abs_pct, 100 * std::abs(c.predicted_params / c.measured.params - 1));
  }
  for (const auto& r : ratios) {
    s.ratio.add(r.error_pct());
    if (std::abs(r.error_pct()) <= kRatioBoundPct) continue;
    ++s.ratios_over_bound;
    s.host_paced_over_bound += r.host_paced();
  }
  return s;
}

std::string params_line(const Summary& s) {
  if (s.params_recorded == 0) return "";
  return fmt::format(
      "parameters: {} steps recorded them, {} equal remat's count (all and those trained), the others' totals "
      "within {:.3f}%\n",
      s.params_recorded, s.params_equal, s.params_max_abs_pct);
}

std::string ratio_misses_line(const Summary& s) {
  if (s.ratios_over_bound == 0) return "";
  return fmt::format(
      "  {} over the bound, {} of them host-paced (the checkpointed step or its baseline took at least {:.2f}x "
      "remat's GPU time)\n",
      s.ratios_over_bound, s.host_paced_over_bound, kHostPacedStretch);
}

}  // namespace

namespace {

bool priced_above_gpu(const HfComparison& oom) { return oom.estimate.peak_memory_bytes > oom.measured.peak_bytes; }

// A step that ran out of memory while its allocated bytes, by remat's price and within 3% of what
// PyTorch held plus what it asked for, stay below the GPU's: the caching allocator's reserved but
// unallocated blocks could not serve the request.
bool allocator_reserve(const HfComparison& oom) {
  const double needed = oom.measured.oom_needed_bytes;
  return !priced_above_gpu(oom) && needed > 0 && oom.estimate.peak_memory_bytes >= 0.97 * needed;
}

struct OomTally {
  size_t above = 0, reserve = 0;  // priced above the GPU's memory; the allocator's reserve ran out
};

OomTally tally(const std::vector<HfComparison>& out_of_memory) {
  OomTally t;
  for (const HfComparison& c : out_of_memory) t.above += priced_above_gpu(c), t.reserve += allocator_reserve(c);
  return t;
}

std::string out_of_memory_lines(const std::vector<HfComparison>& out_of_memory) {
  if (out_of_memory.empty()) return "";
  std::string out =
      "\nsteps that ran out of GPU memory (needed: allocated plus the failed request, PyTorch's message):\n";
  out += fmt::format("{:<44} {:>9} {:>9} {:>9}\n", "case", "GPU GiB", "needed", "pred");
  for (const HfComparison& c : out_of_memory) {
    const char* verdict = priced_above_gpu(c)    ? "does not fit"
                          : allocator_reserve(c) ? "fits by allocated bytes: the allocator's reserve ran out"
                                                 : "missed";
    out += fmt::format("{:<44} {:>9.2f} {:>9.2f} {:>9.2f}  {}\n", c.measured.case_name, c.measured.peak_bytes / kGiB,
                       c.measured.oom_needed_bytes / kGiB, c.estimate.peak_memory_bytes / kGiB, verdict);
  }
  const OomTally t = tally(out_of_memory);
  return out + fmt::format(
                   "out of memory: {} steps, {} priced above the GPU's memory, {} within 3% of the allocated bytes "
                   "they needed (the allocator's reserve ran out), {} missed\n",
                   out_of_memory.size(), t.above, t.reserve, out_of_memory.size() - t.above - t.reserve);
}

}  // namespace

std::string hf_table(const std::vector<HfComparison>& cases, const std::vector<HfComparison>& out_of_memory,
                     const std::string& hardware_name) {
  std::string out =
      fmt::format("Hugging Face training steps on {} (profile hf), step peak and memory before it:\n", hardware_name);
  out += fmt::format("{:<44} {:>9} {:>9} {:>7}  {:>9} {:>9} {:>7}  {:>8} {:>8}\n", "case", "peak GiB", "pred", "err %",
                     "before", "pred", "err %", "step s", "pred s");
  for (const auto& c : cases)
    out += fmt::format("{:<44} {:>9.2f} {:>9.2f} {:>+7.2f}  {:>9.2f} {:>9.2f} {:>+7.2f}  {:>8.3f} {:>8.3f}\n",
                       c.measured.case_name, c.measured.peak_bytes / kGiB, c.estimate.peak_memory_bytes / kGiB,
                       c.peak_error_pct(), c.measured.before_bytes / kGiB, c.predicted_before_bytes / kGiB,
                       c.before_error_pct(), c.measured.step_time_s, time_s(c));
  const auto ratios = hf_time_ratios(cases);
  if (!ratios.empty()) {
    out += "\ncheckpointed step over the same step without checkpointing:\n";
    out += fmt::format("{:<44} {:>9} {:>9} {:>7}\n", "case", "measured", "pred", "err %");
    for (const auto& r : ratios)
      out += fmt::format("{:<44} {:>9.3f} {:>9.3f} {:>+7.2f}\n", cases[r.checkpointed].measured.case_name, r.measured,
                         r.predicted, r.error_pct());
  }
  const Summary s = summarize(cases, ratios);
  out += out_of_memory_lines(out_of_memory);
  out += "\n" + summary_line("step peak", s.peak, 3) + summary_line("allocated before the step", s.before, 3) +
         summary_line("time over no checkpointing", s.ratio, kRatioBoundPct) + ratio_misses_line(s) + params_line(s);
  return out;
}

namespace {

Json case_json(const HfComparison& c) {
  const HfStep& m = c.measured;
  return {{"case", m.case_name},
          {"config", m.config},
          {"step", m.step},
          {"training", training_json(c.setup.training)},
          {"checkpointing", m.checkpointing},
          {"source", c.source_file},
          {"hardware", c.hardware_name},
          {"measured",
           {{"peak_bytes", int64_t(m.peak_bytes)},
            {"before_bytes", int64_t(m.before_bytes)},
            {"step_time_s", m.step_time_s}}},
          {"predicted",
           {{"peak_bytes", int64_t(std::llround(c.estimate.peak_memory_bytes))},
            {"before_bytes", int64_t(std::llround(c.predicted_before_bytes))},
            {"step_time_s", time_s(c)}}},
          {"peak_error_pct", c.peak_error_pct()},
          {"before_error_pct", c.before_error_pct()},
          {"params",
           {{"measured", int64_t(m.params)},
            {"measured_trainable", int64_t(m.trainable_params)},
            {"predicted", int64_t(std::llround(c.predicted_params))},
            {"predicted_trainable", int64_t(std::llround(c.predicted_trainable_params))}}}};
}

Json spread_json(const Spread& s) {
  return {{"cases", s.count}, {"mean_abs_pct", s.mean()}, {"max_abs_pct", s.max_abs}};
}

}  // namespace

std::string hf_svg(const std::vector<HfComparison>& cases, const std::string& hardware_name) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  ScatterPanel peak{"step peak, max allocated (GiB)", 3, {}}, before{"allocated before the step (GiB)", 3, {}};
  ScatterPanel ratio{"checkpointed time over none", 10, {}};
  const auto group = [](const HfComparison& c) -> size_t { return c.measured.mode == "lora" ? 1 : 0; };
  for (const HfComparison& c : cases) {
    peak.points.push_back({c.estimate.peak_memory_bytes / kGiB, c.measured.peak_bytes / kGiB, group(c)});
    before.points.push_back({c.predicted_before_bytes / kGiB, c.measured.before_bytes / kGiB, group(c)});
  }
  for (const HfTimeRatio& r : hf_time_ratios(cases))
    ratio.points.push_back({r.predicted, r.measured, group(cases[r.checkpointed])});
  return predicted_vs_measured_svg(
      fmt::format("Hugging Face training steps beside remat (--framework hf, {})", hardware_name),
      {"full model", "LoRA"}, {peak, before, ratio});
}

Json hf_report(const ReportMeta& meta, const std::vector<HfComparison>& cases,
               const std::vector<HfComparison>& out_of_memory, const std::string& hardware_name) {
  Json j;
  j["meta"] = meta_json(meta);
  j["framework"] = kHfFramework;
  j["hardware"] = hardware_name;
  j["cases"] = Json::array();
  for (const auto& c : cases) j["cases"].push_back(case_json(c));
  const auto ratios = hf_time_ratios(cases);
  j["time_ratios"] = Json::array();
  for (const auto& r : ratios) {
    const HfComparison &step = cases[r.checkpointed], &baseline = cases[r.baseline];
    j["time_ratios"].push_back({{"case", step.measured.case_name},
                                {"baseline", baseline.measured.case_name},
                                {"source", step.source_file},
                                {"measured", r.measured},
                                {"predicted", r.predicted},
                                {"error_pct", r.error_pct()},
                                {"host_paced", r.host_paced()},
                                {"stretch", r.stretch},
                                {"baseline_stretch", r.baseline_stretch},
                                {"measured_step_time_s", step.measured.step_time_s},
                                {"predicted_step_time_s", time_s(step)},
                                {"measured_baseline_time_s", baseline.measured.step_time_s},
                                {"predicted_baseline_time_s", time_s(baseline)}});
  }
  j["out_of_memory"] = Json::array();
  for (const HfComparison& c : out_of_memory) {
    j["out_of_memory"].push_back({{"case", c.measured.case_name},
                                  {"source", c.source_file},
                                  {"gpu_bytes", int64_t(c.measured.peak_bytes)},
                                  {"needed_bytes", int64_t(c.measured.oom_needed_bytes)},
                                  {"predicted_peak_bytes", int64_t(std::llround(c.estimate.peak_memory_bytes))},
                                  {"priced_above_gpu", priced_above_gpu(c)},
                                  {"allocator_reserve_ran_out", allocator_reserve(c)}});
  }
  const Summary s = summarize(cases, ratios);
  const OomTally oom = tally(out_of_memory);
  j["summary"] = {
      {"peak", spread_json(s.peak)},
      {"before", spread_json(s.before)},
      {"time_ratio", spread_json(s.ratio)},
      {"time_ratios_over_bound", s.ratios_over_bound},
      {"host_paced_over_bound", s.host_paced_over_bound},
      {"params", {{"recorded", s.params_recorded}, {"equal", s.params_equal}, {"max_abs_pct", s.params_max_abs_pct}}},
      {"out_of_memory",
       {{"cases", out_of_memory.size()}, {"priced_above_gpu", oom.above}, {"allocator_reserve_ran_out", oom.reserve}}}};
  return j;
}

}  // namespace remat
