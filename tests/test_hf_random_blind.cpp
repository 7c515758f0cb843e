// Steps drawn at random, written and priced before they ran (examples/hf/random_blind/make_cases.py,
// seed 1: cases_seed1.json, predicted_seed1.tsv): 24 configs of those transformers 5.17 builds, cut to
// 1-6 layers, 1k-16k tokens, full or LoRA (rank 8-128 on one of five target sets, dropout 0 or 0.05),
// none / non-reentrant / reentrant, sdpa or eager, bf16 or mixed, SFT, DPO or GRPO. As first compared
// 21 were within 1.11%; three missed, each on a path no earlier step had taken:
// - SmolVLM-500M (mixed GRPO): -40.96% before the step, -2.44% at the peak. Its tower and connector
//   were not counted; they are now (Idefics3VisionTransformer, 98,229,504 parameters): -0.11%, +0.01%.
// - GLM-5.1 cut to 6 layers (all-linear, reentrant, eager): -5.83%. remat priced its DSA attention as
//   sdpa's whatever --attention said; under eager transformers materializes the scores (the top-k mask
//   added, not saved): -0.24%.
// - GPT-NeoX (full, reentrant, 6k): -3.60%. FastGELU's formula backward holds three intermediate-wide
//   gradients, not two: -0.04%.
#include <gtest/gtest.h>

#include "hf_measured.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

TEST(HfRandomBlind, Seed1Steps) { test::expect_steps_within("steps-random-blind-h200.jsonl", "h200", 1.25, 1.15, 24); }

TEST(HfRandomBlind, SmolVlmTowerCounted) {
  const ModelSpec m = test::model(std::string(REMAT_TEST_DATA) +
                                  "/../examples/hf/unseen24/realcfg/smolvlm-500m-fastvlm-app.json");
  // embeddings 1,377,024 + 12 layers x 7,087,872 + post-LayerNorm 1,536 + connector 12,288 x 960
  EXPECT_DOUBLE_EQ(m.idle_params, 98229504);
  EXPECT_EQ(m.tower_linear_modules.size(), 7u);  // the layers' six and the connector's projection
}

}  // namespace
}  // namespace remat
