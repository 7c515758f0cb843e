// Parameter counts against published totals; Megatron-LM's bytes per parameter.
#include <gtest/gtest.h>

#include "remat/cost/params.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

double billions(const ModelSpec& m, int64_t layers) { return model_params(m, layers) / 1e9; }

TEST(ParamCount, Table6ModelsWithinOnePercent) {
  const ModelSpec llama = test::model("llama3-70b"), v2 = test::model("deepseek-v2"), v3 = test::model("deepseek-v3");
  EXPECT_NEAR(billions(llama, 80), 70.6, 0.706);
  EXPECT_NEAR(billions(v2, 60), 236, 2.36);  // published, 60 layers
  EXPECT_NEAR(billions(v2, 63), 247, 2.47);  // the paper's Table 6, 63 layers
  EXPECT_NEAR(billions(v3, 61), 671, 6.71);
  EXPECT_NEAR(billions(v3, 63), 694, 6.94);
}

TEST(ParamCount, EveryModelFileMatchesItsPublishedTotal) {
  for (const auto& spec : builtin_specs()) {
    if (std::string(spec.kind) != "models") continue;
    const ModelSpec m = test::model(spec.name);
    if (m.published_params_B <= 0) continue;
    EXPECT_NEAR(billions(m, m.num_hidden_layers) / m.published_params_B, 1.0, 0.01) << spec.name;
    if (m.paper_num_hidden_layers > 0)
      EXPECT_NEAR(billions(m, m.paper_num_hidden_layers) / m.paper_params_B, 1.0, 0.01) << spec.name;
  }
}

TEST(ParamCount, Llama3_8bExactly) {
  // 8,030,261,248 in the safetensors index: embedding + head 2*128256*4096,
  // 32 layers of (4096*(32+16)*128 + 32*128*4096 + 3*4096*14336 + 2*4096), final norm 4096
  EXPECT_DOUBLE_EQ(model_params(test::model("llama3-8b"), 32), 8030261248.0);
}

TEST(MegatronBytesPerParam, EighteenWithoutDistributedOptimizer) {
  TrainingSpec t;
  t.zero_stage = 0;
  const StaticBytes b = bytes_per_param(t, 64);
  EXPECT_DOUBLE_EQ(b.total(), 18);  // 2 bf16 weight + 4 fp32 grad + 4 master + 4 + 4 Adam moments
}

TEST(MegatronBytesPerParam, SixPlusTwelveOverDpWithDistributedOptimizer) {
  TrainingSpec t;
  t.zero_stage = 1;
  for (double dp : {1.0, 2.0, 8.0, 128.0}) EXPECT_DOUBLE_EQ(bytes_per_param(t, dp).total(), 6 + 12 / dp);
}

TEST(MegatronBytesPerParam, OtherPrecisionsAndOptimizers) {
  TrainingSpec t;
  t.zero_stage = 0;
  t.precision = Precision::bf16;
  EXPECT_DOUBLE_EQ(bytes_per_param(t, 1).total(), 2 + 2 + 4);  // bf16 grads, two bf16 moments
  t.optimizer = Optimizer::none;
  EXPECT_DOUBLE_EQ(bytes_per_param(t, 1).total(), 4);
  t.precision = Precision::mixed;
  t.zero_stage = 2;
  t.optimizer = Optimizer::adam;
  EXPECT_DOUBLE_EQ(bytes_per_param(t, 4).total(), 2 + 4.0 / 4 + 12.0 / 4);
}

TEST(ParamCount, ShardingDividesWhatItShould) {
  const ModelSpec v3 = test::model("deepseek-v3");
  const ParamCount whole = layer_params(v3, 10, 1, 1), sharded = layer_params(v3, 10, 1, 64);
  EXPECT_DOUBLE_EQ(sharded.expert * 64, whole.expert);
  EXPECT_DOUBLE_EQ(sharded.dense, whole.dense);
  EXPECT_DOUBLE_EQ(whole.expert, 3.0 * 7168 * 2048 * 256);
}

}  // namespace
}  // namespace remat
