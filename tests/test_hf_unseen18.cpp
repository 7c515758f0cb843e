// Blind set 18 (examples/hf/unseen18/make_cases.py, seed 18): 23 steps on the configs of real-config set
// 16 that transformers builds, drawn and committed before they ran (steps-unseen18-h200.jsonl, traces in
// peak-traces-h200/unseen18/). All ran. As first compared, max -19.63%:
// - GPT-NeoX's one-layer LoRA step with hidden_act gelu_fast, -19.63%: transformers' FastGELUActivation
//   is a Python formula whose autograd saves six intermediate-wide tensors: +0.35%;
// - CodeGen's one-layer reentrant GRPO step, -15.26%: its block returns the attention probabilities, as
//   GPT-J's does, which the replay holds with their zero gradient: -0.32%.
#include <gtest/gtest.h>

#include <string>

#include "hf_measured.hpp"
#include "remat/cost/exact_blocks.hpp"
#include "remat/spec/framework.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kRoot = std::string(REMAT_TEST_DATA) + "/../";

TEST(HfUnseen18, BlindSteps) { test::expect_steps_within("steps-unseen18-h200.jsonl", "h200", 1.6, 1.7, 23); }

// The activations transformers writes as Python formulas keep their intermediates for the backward:
// per element of the up projection's output, beside it, gelu_fast six bf16 tensors, gelu_new and
// gelu_accurate three, quick_gelu one; the fused gelu none.
TEST(HfUnseen18, FormulaActivationsSaveTheirIntermediates) {
  const ModelSpec base = test::model(kRoot + "examples/hf/unseen16/realcfg/gpt-neox-ipex.json");
  TrainingSpec t = test::hf_training(2048, 0);
  const auto mlp_saved = [&](const std::string& act) {
    ModelSpec m = base;
    m.hidden_act = act;
    const ModelSpec built = model_as_built(m, kHfFramework);
    const Block b = two_matrix_mlp_block(with_model(rank_shape(t), built), built.hidden_size, built.intermediate_size,
                                         built.hidden_act);
    return saved_bytes(b) - saved_bytes(two_matrix_mlp_block(with_model(rank_shape(t), built), built.hidden_size,
                                                             built.intermediate_size, "gelu"));
  };
  const double one = 2048.0 * 24576 * 2;  // one bf16 intermediate-wide tensor
  EXPECT_DOUBLE_EQ(mlp_saved("gelu_fast"), 6 * one);
  EXPECT_DOUBLE_EQ(mlp_saved("gelu_new"), 3 * one);
  EXPECT_DOUBLE_EQ(mlp_saved("gelu_accurate"), 3 * one);
  EXPECT_DOUBLE_EQ(mlp_saved("quick_gelu"), one);
  EXPECT_DOUBLE_EQ(mlp_saved("gelu_pytorch_tanh"), 0);
}

// CodeGen's block returns its attention probabilities as GPT-J's does.
TEST(HfUnseen18, CodeGenReturnsAttentionProbabilities) {
  EXPECT_TRUE(
      test::model(kRoot + "examples/hf/unseen16/realcfg/codegen-2b-multi-1l-ipex.json").layer_returns_attention_probs);
}

}  // namespace
}  // namespace remat
