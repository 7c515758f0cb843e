#include "remat/report/hf_snippet.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "remat/spec/lora_placement.hpp"

namespace remat {

namespace {

// The decoder layers the plan checkpoints, in order (global indices).
std::vector<int64_t> checkpointed_layers(const Estimate& e) {
  std::vector<int64_t> out;
  for (const StageEstimate& st : e.stages)
    for (size_t i = 0; i < st.per_layer.size(); ++i)
      if (st.per_layer[i].mode != LayerMode::keep) out.push_back(st.first_layer + int64_t(i));
  return out;
}

// "i < 12" for a prefix of the layers, else "i in {0, 1, 5}"
std::string layer_condition(const std::vector<int64_t>& layers) {
  bool prefix = true;
  for (size_t i = 0; i < layers.size(); ++i) prefix = prefix && layers[i] == int64_t(i);
  if (prefix) return fmt::format("i < {}", layers.size());
  return fmt::format("i in {{{}}}", fmt::join(layers, ", "));
}

// PEFT's target_modules for the targets: "all-linear", or the model's module names they pick
std::string target_modules(const ModelSpec& m, const LoraTargets& targets) {
  if (targets.by_all_linear) return "\"all-linear\"";
  std::vector<std::string> names;
  for (const LinearModule& l : m.linear_modules)
    if (!l.matrix.empty() && targets_matrix(targets, l.matrix) &&
        std::find(names.begin(), names.end(), l.name) == names.end())
      names.push_back("\"" + l.name + "\"");
  return fmt::format("[{}]", fmt::join(names, ", "));
}

}  // namespace

std::vector<std::string> transformers_snippet(const ModelSpec& m, const TrainingSpec& t, const Estimate& e) {
  const bool mixed = t.precision == Precision::mixed;
  std::vector<std::string> out;
  out.push_back(
      fmt::format("model = AutoModelForCausalLM.from_pretrained(PATH, dtype=torch.{}, attn_implementation=\"{}\")",
                  mixed ? "float32" : "bfloat16", t.flash_attention ? "sdpa" : "eager"));
  const std::vector<int64_t> layers = checkpointed_layers(e);
  const int64_t all = e.stages.empty() ? 0 : e.stages.back().last_layer;
  const bool reentrant = t.replay == RecomputeReplay::full;
  if (!layers.empty()) {
    out.push_back(
        fmt::format("model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={{\"use_reentrant\": {}}})",
                    reentrant ? "True" : "False"));
    if (int64_t(layers.size()) < all) {
      out.push_back(
          fmt::format("for i, layer in enumerate(model.get_decoder().layers):  # {} of {} layers checkpointed",
                      layers.size(), all));
      out.push_back(fmt::format("    layer.gradient_checkpointing = {}", layer_condition(layers)));
    }
    // frozen embeddings would give a reentrant checkpoint inputs without requires_grad
    if (reentrant && t.lora_rank > 0) out.push_back("model.enable_input_require_grads()");
  }
  if (t.lora_rank > 0)
    out.push_back(fmt::format("model = get_peft_model(model, LoraConfig(r={}, lora_dropout={}, target_modules={}))",
                              t.lora_rank, t.lora_dropout, target_modules(m, t.lora_targets)));
  const int64_t accumulation = t.microbatches();
  out.push_back(
      fmt::format("args = TrainingArguments(per_device_train_batch_size={}, gradient_accumulation_steps={}{})", t.mbs,
                  accumulation, mixed ? ", bf16=True" : ""));
  return out;
}

}  // namespace remat
