// A multimodal checkpoint's vision tower and projector, which transformers builds beside the
// language model and a text-only step never runs (ModelSpec::idle_params): SigLIP under Gemma 3,
// CLIP or SigLIP under LLaVA. Counts checked against transformers 5.17's whole models
// (reports/hf/param-counts-vision-towers-h200.json, examples/hf/vision/count_whole.py).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "hf_measured.hpp"
#include "remat/cost/estimate.hpp"
#include "remat/io/spec_loader.hpp"
#include "remat/spec/framework.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kRoot = std::string(REMAT_TEST_DATA) + "/../";

// Gemma 3 4B's SigLIP (h 1152, f 4304, 27 layers, 896 / 14 = 64 patches a side, no pooling head):
// per layer q, k, v, o 4 (1152^2 + 1152) = 5313024, fc1 4962512, fc2 4959360, two LayerNorms 4608;
// patch convolution 3 x 14 x 14 x 1152 + 1152 = 678528, positions 4096 x 1152 = 4718592, the
// post-LayerNorm 2304; the projector 1152 x 2560 and its norm 1152.
TEST(HfVisionTower, Gemma3SiglipByHand) {
  const ModelSpec m = test::model(kRoot + "tests/data/hf_configs/gemma-3-4b-it.json");
  const double layer = 5313024.0 + 4962512 + 4959360 + 4608;
  EXPECT_DOUBLE_EQ(m.idle_params, 27 * layer + 678528 + 4718592 + 2304 + 1152.0 * 2560 + 1152);
  EXPECT_DOUBLE_EQ(m.idle_params, 419816304.0);
}

// LLaVA-1.5-7B's CLIP ViT-L/14-336 (h 1024, f 4096, 24 layers, 24 x 24 patches): per layer
// 4198400 + 4198400 + 4195328 + 4096; a class embedding 1024, the convolution without bias 602112,
// 577 positions 590848, pre- and post-LayerNorms 4096; the projector 1024 x 4096 + 4096 x 4096
// and its biases 8192.
// vision_config is read as the language model's keys are: a wrong type is refused by its key, never
// read as the tower's default.
TEST(HfVisionTower, WrongTypedTowerKeyIsRefused) {
  std::ifstream in(kRoot + "tests/data/hf_configs/gemma-3-4b-it.json");
  nlohmann::json j = nlohmann::json::parse(in);
  j["vision_config"]["hidden_size"] = "abc";
  try {
    parse_hf_config(j.dump(), "g3.json");
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("vision_config.hidden_size"), std::string::npos) << e.what();
  }
}

TEST(HfVisionTower, LlavaClipByHand) {
  const ModelSpec m = test::model(kRoot + "tests/data/hf_configs/llava-1.5-7b-hf-ome.json");
  const double layer = 4198400.0 + 4198400 + 4195328 + 4096;
  EXPECT_DOUBLE_EQ(m.idle_params, 24 * layer + 1024 + 602112 + 590848 + 4096 + 1024.0 * 4096 + 4096.0 * 4096 + 8192);
}

// remat's language model plus its tower equals every parameter transformers builds, for each file
// the whole models were counted from; a tower remat does not count leaves idle_params 0.
TEST(HfVisionTower, LanguageModelPlusTowerIsTheWholeModel) {
  std::ifstream in(kRoot + "reports/hf/param-counts-vision-towers-h200.json");
  const nlohmann::json rows = nlohmann::json::parse(in);
  int checked = 0;
  for (const auto& row : rows) {
    const std::string file = row.at("file");
    if (file.find("one-layer-test") != std::string::npos) continue;  // LLaVA's keys at the top: no tower read
    const ModelSpec m = model_as_built(test::model(kRoot + file), kHfFramework);
    EXPECT_DOUBLE_EQ(model_params(m, m.num_hidden_layers) + m.idle_params, row.at("params").get<double>()) << file;
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

// Under --framework hf the tower's weights are held (bf16 here), with no gradient or optimizer
// state; the generic profile plans the language model alone.
TEST(HfVisionTower, HeldAsWeightsUnderHfOnly) {
  const ModelSpec m = test::model(kRoot + "tests/data/hf_configs/gemma-3-4b-it.json");
  TrainingSpec t;
  t.mbs = t.gbs = 1, t.seq = 1024, t.precision = Precision::bf16, t.lora_rank = 16;
  const TrainingSpec hf = apply_framework(t, kHfFramework);
  const HardwareSpec hw = test::hardware("h200");
  ModelSpec without = m;
  without.idle_params = 0;
  const double with_tower = estimate(m, hw, hf, Plan{}, hw.hbm_bytes).stages[0].memory_bytes.weights;
  const double lm_only = estimate(without, hw, hf, Plan{}, hw.hbm_bytes).stages[0].memory_bytes.weights;
  EXPECT_DOUBLE_EQ(with_tower - lm_only, 2 * m.idle_params);
  const TrainingSpec generic = apply_framework(t, kGenericFramework);
  EXPECT_DOUBLE_EQ(estimate(m, hw, generic, Plan{}, hw.hbm_bytes).stages[0].memory_bytes.weights,
                   estimate(without, hw, generic, Plan{}, hw.hbm_bytes).stages[0].memory_bytes.weights);
}

// Sixteen checkpointed LoRA steps over families and modes with 2-4 sequences
// (reports/hf/steps-lora-replay2-h200.jsonl), blind after the replay term: within 1.44%. Gemma 3 4B
// built whole had its bytes before the step at -9.41% before its SigLIP tower was held: -0.12%.
TEST(HfVisionTower, ReplayStepsAcrossFamilies) {
  test::expect_steps_within("steps-lora-replay2-h200.jsonl", "h200", 0.5, 1.5, 16);
}

}  // namespace
}  // namespace remat
