// plan --framework hf prints its plan as transformers + PEFT lines (transformers_snippet). Each decoder
// layer's own gradient_checkpointing flag checkpoints some layers only: six steps so run, written and
// priced before they ran (examples/hf/cases_partial_checkpointing.json, steps-partial-checkpointing-h200.jsonl).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hf_measured.hpp"
#include "remat/report/hf_snippet.hpp"
#include "remat/spec/lora_placement.hpp"
#include "shell_run.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kRoot = std::string(REMAT_TEST_DATA) + "/../";

// Gemma 3 4B under all-linear LoRA, reentrant, its first 25 of 34 layers checkpointed, under autocast
// with 4 microbatches: fp32 weights, each layer's flag, the input gradient a reentrant checkpoint
// needs beside frozen embeddings, PEFT's config and the batch.
TEST(HfSnippet, PartialReentrantLoraUnderAutocast) {
  const ModelSpec m = test::model(kRoot + "tests/data/hf_configs/gemma-3-4b-it.json");
  TrainingSpec t = test::hf_training(8192, 16);
  t.precision = Precision::mixed, t.params_fp32_autocast = true, t.gbs = 4;
  t.replay = RecomputeReplay::full;
  t.lora_targets = resolve_lora_targets(m, {"all-linear"}).targets;
  Plan p;
  p.strategy = Strategy::full, p.recompute_layers = {25};
  const Estimate e = estimate(m, test::hardware("h200"), t, p, 140e9);
  const std::vector<std::string> expected = {
      "model = AutoModelForCausalLM.from_pretrained(PATH, dtype=torch.float32, attn_implementation=\"sdpa\")",
      "model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={\"use_reentrant\": True})",
      "for i, layer in enumerate(model.get_decoder().layers):  # 25 of 34 layers checkpointed",
      "    layer.gradient_checkpointing = i < 25",
      "model.enable_input_require_grads()",
      "model = get_peft_model(model, LoraConfig(r=16, lora_dropout=0, target_modules=\"all-linear\"))",
      "args = TrainingArguments(per_device_train_batch_size=1, gradient_accumulation_steps=4, bf16=True)"};
  EXPECT_EQ(transformers_snippet(m, t, e), expected);
}

// Full fine-tuning in bf16 with every layer checkpointed, non-reentrant: no per-layer lines, no PEFT.
// LoRA on q and v names the model's modules.
TEST(HfSnippet, EveryLayerAndNamedTargets) {
  const ModelSpec m = test::model(kRoot + "tests/data/hf_configs/llama-3.2-1b-instruct.json");
  TrainingSpec t = test::hf_training(4096, 0);
  t.replay = RecomputeReplay::early_stop;
  Plan p;
  p.strategy = Strategy::full;
  const std::vector<std::string> full = transformers_snippet(m, t, estimate(m, test::hardware("h200"), t, p, 140e9));
  EXPECT_EQ(full, (std::vector<std::string>{
                      "model = AutoModelForCausalLM.from_pretrained(PATH, dtype=torch.bfloat16, "
                      "attn_implementation=\"sdpa\")",
                      "model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={\"use_reentrant\": False})",
                      "args = TrainingArguments(per_device_train_batch_size=1, gradient_accumulation_steps=1)"}));
  t.lora_rank = 8, t.lora_dropout = 0.05;
  t.lora_targets = resolve_lora_targets(m, {"q", "v"}).targets;
  p.strategy = Strategy::none;
  const std::vector<std::string> lora = transformers_snippet(m, t, estimate(m, test::hardware("h200"), t, p, 140e9));
  ASSERT_EQ(lora.size(), 3u);
  EXPECT_EQ(lora[1],
            "model = get_peft_model(model, LoraConfig(r=8, lora_dropout=0.05, target_modules=[\"q_proj\", "
            "\"v_proj\"]))");
}

// The CLI: plan under hf prints the lines and puts them in the JSON report; Megatron-LM's flags are
// refused there.
TEST(HfSnippet, PlanPrintsItAndRefusesMegatronFlags) {
  const std::vector<std::string> args = {
      "plan",       "--model", kRoot + "tests/data/hf_configs/llama-3.2-1b-instruct.json",
      "--hardware", "h200",    "--framework",
      "hf",         "--tp",    "1",
      "--pp",       "1",       "--mbs",
      "1",          "--gbs",   "2",
      "--seq",      "4096"};
  const test::ShellResult printed = test::run_shell(test::remat_command(args) + " 2>/dev/null");
  EXPECT_EQ(printed.exit_code, 0);
  EXPECT_NE(printed.out.find("transformers + PEFT, the best plan"), std::string::npos);
  EXPECT_NE(printed.out.find("gradient_accumulation_steps=2"), std::string::npos);
  EXPECT_EQ(printed.out.find("Megatron-LM flags"), std::string::npos);
  std::vector<std::string> refused = args;
  refused.push_back("--emit-megatron-args");
  const test::ShellResult r = test::run_shell(test::remat_command(refused) + " 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--emit-megatron-args"), std::string::npos) << r.out;
}

// Llama-3.2-1B full fine-tuning (8 and 4 of 16 layers, non-reentrant and reentrant), Qwen3-4B LoRA (24
// and 12 of 36, bf16 and mixed), Gemma 3 4B's language model under all-linear (6 of 12), Mistral-7B at
// 16k (1 of 8): within 0.42% as first compared.
TEST(HfSnippet, PartialCheckpointingSteps) {
  test::expect_steps_within("steps-partial-checkpointing-h200.jsonl", "h200", 0.7, 0.5, 6);
}

}  // namespace
}  // namespace remat
