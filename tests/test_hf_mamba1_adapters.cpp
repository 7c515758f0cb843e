// PEFT's LoRA on a Mamba-1 mixer's projections (examples/hf/probes/mamba1_adapters_probe.py,
// reports/hf/mamba1-adapters-h200.jsonl): Jamba, Mamba and FalconMamba as transformers 5.17 builds
// them, rank 8 on one of in_proj, x_proj, dt_proj, out_proj at a time, one step of 256 tokens. Each
// adapter is built; in_proj's and x_proj's (and Jamba's out_proj's) get a gradient; dt_proj's never do
// (the mixers multiply by dt_proj.weight directly), so alone they leave nothing to train and the
// backward raises; PEFT refuses out_proj on Mamba and FalconMamba.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "hf_measured.hpp"
#include "remat/cost/streambp.hpp"
#include "remat/spec/lora_placement.hpp"
#include "remat/spec/problems.hpp"
#include "remat/spec/validate.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kRoot = std::string(REMAT_TEST_DATA) + "/../";

// Rank-`rank` adapters remat counts on `m` for `targets`: trained and held.
std::pair<double, double> adapter_params(const ModelSpec& m, const std::vector<std::string>& targets, int64_t rank) {
  TrainingSpec t = test::hf_training(1024, rank);
  const ResolvedLoraTargets resolved = resolve_lora_targets(m, targets);
  EXPECT_TRUE(resolved.refusal.empty()) << resolved.refusal;
  t.lora_targets = resolved.targets;
  double trained = 0, held = 0;
  for (int64_t g = 0; g < m.num_hidden_layers; ++g)
    trained += lora_layer_params(m, t, 1, g), held += lora_held_layer_params(m, t, g);
  return {trained, held};
}

TEST(HfMamba1Adapters, CountsAndRunsAsPeftBuildsThem) {
  std::ifstream lines(kRoot + "reports/hf/mamba1-adapters-h200.jsonl");
  int counted = 0, refused = 0;
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json row = nlohmann::json::parse(line);
    const ModelSpec m = test::model(kRoot + row.at("config").get<std::string>());
    const std::string target = row.at("target");
    if (row.contains("peft_error")) {  // out_proj on Mamba and FalconMamba
      EXPECT_FALSE(resolve_lora_targets(m, {target}).refusal.empty()) << target;
      ++refused;
      continue;
    }
    const auto [trained, held] = adapter_params(m, {target}, 8);
    EXPECT_DOUBLE_EQ(trained + held, row.at("adapter_params").get<double>()) << row.at("config") << " " << target;
    // what got a gradient trains; the rest is held
    EXPECT_EQ(trained > 0, row.at("with_grad").get<int>() > 0) << target;
    EXPECT_EQ(held > 0, row.at("with_grad").get<int>() == 0) << target;
    ++counted;
  }
  EXPECT_EQ(counted, 10);
  EXPECT_EQ(refused, 2);
}

// PEFT's all-linear on the 4-layer Jamba (peft-all-linear-types-h200.jsonl): 3,105,216 adapter
// parameters at rank 16 on the attention, the dense MLPs, the routers and the Mamba-1 projections.
TEST(HfMamba1Adapters, JambaAllLinearAsPeftCountsIt) {
  const ModelSpec m = test::model(kRoot + "examples/hf/unseen7/jamba-4l.json");
  const auto [trained, held] = adapter_params(m, {"all-linear"}, 16);
  EXPECT_DOUBLE_EQ(trained + held, 3105216);
  EXPECT_DOUBLE_EQ(held, 3 * 16 * (256 + 4096));  // dt_proj's on the three Mamba layers
}

// dt_proj alone trains nothing, and under fused kernels x_proj and out_proj are read as weights.
TEST(HfMamba1Adapters, RefusesWhatNeverRuns) {
  const ModelSpec m = test::model(kRoot + "examples/hf/unseen7/jamba-4l.json");
  TrainingSpec t = test::hf_training(1024, 8);
  t.lora_targets = resolve_lora_targets(m, {"dt_proj"}).targets;
  std::vector<Problem> problems = validate_training(t, m);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message.find("never runs"), std::string::npos) << problems[0].message;
  t.lora_targets = resolve_lora_targets(m, {"in_proj", "x_proj"}).targets;
  EXPECT_TRUE(validate_training(t, m).empty());
  t.mixer_kernels = MixerKernels::fused;
  problems = validate_training(t, m);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].value, "x_proj");
}

// Six steps written and priced before they ran (examples/hf/mamba1_lora/cases_blind.json,
// predicted_blind.tsv): Jamba's all-linear non-reentrant and reentrant (rank 32, DPO), its in_proj,
// x_proj and out_proj under mixed precision, Mamba's in_proj and x_proj (non-reentrant; with dt_proj's
// held adapters and dropout 0.05), FalconMamba's x_proj alone, reentrant. As first compared all within
// 2.01% (Jamba's reentrant DPO, its peak in a dense-MLP layer's replay), bytes before the step within
// 1.07%; that DPO step +0.42% since the down adapter's input copy is freed with its backward
// (test_hf_random_blind.cpp).
TEST(HfMamba1Adapters, BlindSteps) { test::expect_steps_within("steps-mamba1-lora-h200.jsonl", "h200", 1.1, 0.75, 6); }

}  // namespace
}  // namespace remat
