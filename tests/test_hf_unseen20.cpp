// Blind set 20 (examples/hf/unseen20/make_cases.py, seed 20): 27 steps on the last configs transformers
// builds that no step had used, drawn and committed before they ran (steps-unseen20-h200.jsonl, traces in
// peak-traces-h200/unseen20/). 26 compared, all within 0.86% as first compared. Gemma 4 E4B cut to 4
// layers did not build in transformers: each layer looks up the last layer of its kind before the 18
// that share keys and values, and there was none. remat had priced it; it now refuses such a cut.
#include <gtest/gtest.h>

#include <string>

#include "hf_measured.hpp"
#include "remat/spec/framework.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kRoot = std::string(REMAT_TEST_DATA) + "/../";

TEST(HfUnseen20, BlindSteps) { test::expect_steps_within("steps-unseen20-h200.jsonl", "h200", 0.9, 0.9, 26); }

// Gemma 4 E4B: 42 layers, the last 18 reuse keys and values, four sliding layers to one full. Cut to
// 4 layers no layer precedes the shared ones; cut to 20, layers 0-1 are sliding and layer 5, full, has
// no full layer to share from; from 24 on each kind has one.
TEST(HfUnseen20, KvSharingNeedsALayerOfEachKindBeforeTheSharedOnes) {
  const ModelSpec e4b = test::model(kRoot + "examples/hf/unseen15/realcfg/gemma-4-e4b-ome-fixture.json");
  const auto problems = [&](int64_t layers) {
    ModelSpec m = e4b;
    m.num_hidden_layers = layers;
    return validate_training(test::hf_training(2048, 0), model_as_built(m, kHfFramework));
  };
  auto p = problems(4);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].key, "--num-layers");
  EXPECT_NE(p[0].message.find("no sliding-attention layer before the last 18"), std::string::npos) << p[0].message;
  p = problems(20);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].message.find("no full-attention layer"), std::string::npos) << p[0].message;
  EXPECT_TRUE(problems(24).empty());
  EXPECT_TRUE(problems(42).empty());
}

}  // namespace
}  // namespace remat
