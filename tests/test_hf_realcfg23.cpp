// Real-config set 23 (examples/hf/unseen23/realcfg/, 30 files a helper collected from SpecForge,
// NVIDIA Model-Optimizer, IPEX, aiconfigurator, sgl-project/ome, ktransformers, LLMServingSim, verl,
// llm-compressor, onnxruntime-genai, tt-forge and others; remat-load.tsv is its first load): of the 24
// transformers 5.17 builds (param-counts-realcfg23-h200.jsonl), 23 loaded to the parameter as first
// loaded. The other, an old flat PaddleOCR-VL file with remote code, is refused, naming its class.
// Kimi K2's EAGLE-3 draft head (model_type kimi_k2, which transformers does not know) had been refused
// for a default first_k_dense_replace beyond its one layer; it is refused as the draft head it is now.
#include <gtest/gtest.h>

#include <string>

#include "hf_measured.hpp"
#include "remat/spec/problems.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

TEST(HfRealConfigs23, CountsAsTransformersBuildsThem) {
  int refused_paddle = 0;
  const auto [exact, refused] = test::tally_real_configs("23", [&](const std::string& why) {
    EXPECT_NE(why.find("PaddleOCRVLForConditionalGeneration"), std::string::npos) << why;
    ++refused_paddle;
  });
  EXPECT_EQ(exact, 23);
  EXPECT_EQ(refused, 1);
  EXPECT_EQ(refused_paddle, 1);
}

TEST(HfRealConfigs23, EagleThreeDraftUnderAnUnknownTypeIsRefusedByName) {
  const std::string root = std::string(REMAT_TEST_DATA) + "/../examples/hf/unseen23/realcfg/";
  try {
    test::model(root + "kimi-k2-eagle3-draft-specforge.json");
    ADD_FAILURE() << "loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("an EAGLE-3 draft head"), std::string::npos) << e.what();
  }
  // under a model_type transformers knows, such a file builds that type's model, as remat counts it
  // (HfRealConfigs12 holds its count)
  EXPECT_NO_THROW(
      test::model(std::string(REMAT_TEST_DATA) + "/../examples/hf/unseen12/realcfg/phi4-eagle3-draft-specforge.json"));
}

// Eight steps on set 23's configs, written and priced before they ran (examples/hf/unseen23/cases_blind.json,
// predicted_blind.tsv): EXAONE 4.0 1.2B, SmolLM2-135M (DPO), Phi-4-mini (mixed LoRA), GPT-OSS-20B (eager),
// Nemotron-Nano-12B-v2 (Mamba-2 in_proj, reentrant), Tarsier2 (Qwen2-VL all-linear), Gemma 4 26B-A4B (full,
// non-reentrant), Qwen3-Next's 40-layer shape (all-linear GRPO). Seven were within 0.52% as first
// compared; Gemma 4 26B's was -1.95% (-3.17% before the step): its file gives the vision tower's width
// and depth but not its key-value heads, head size or position table, which remat had then not counted.
// Gemma4VisionConfig's defaults fill them in now: 540,941,184 tower parameters, the built model's
// 6,198,314,880 less remat's language model of six layers.
TEST(HfRealConfigs23, BlindSteps) {
  test::expect_steps_within("steps-unseen23-h200.jsonl", "h200", 0.4, 0.6, 8);
  const ModelSpec m =
      test::model(std::string(REMAT_TEST_DATA) + "/../examples/hf/unseen23/realcfg/gemma-4-26b-a4b-ome-testdata.json");
  EXPECT_DOUBLE_EQ(m.idle_params, 540941184);
}

}  // namespace
}  // namespace remat
