// PEFT's LoRA on linear mixers' own projections. MiniMax-01's lightning attention (MiniMaxLightningAttention: qkv_proj,
// output_gate, out_proj) beside its full-attention layers' q/k/v/o_proj and the converted experts. all-linear on the
// 4-layer shape is PEFT's count to the parameter (test_hf_all_linear.cpp). Five steps written and priced
// before they ran (examples/hf/lightning_lora/cases_blind.json, predicted_blind.tsv): all-linear
// non-reentrant and reentrant under mixed precision, the three lightning projections on 8 layers (one
// full-attention), qkv_proj alone at rank 64 with dropout under GRPO, output_gate and out_proj with
// q_proj and v_proj under eager, reentrant. All within 0.43% as first compared, bytes before within 0.22%.
#include <gtest/gtest.h>

#include "hf_measured.hpp"
#include "remat/spec/lora_placement.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

TEST(HfLightningAdapters, BlindSteps) {
  test::expect_steps_within("steps-lightning-lora-h200.jsonl", "h200", 0.25, 0.45, 5);
}

// The module names reach the lightning layers' projections by what they are.
TEST(HfLightningAdapters, ModuleNamesPickTheMixersProjections) {
  const ModelSpec m =
      test::model(std::string(REMAT_TEST_DATA) + "/../examples/hf/more_families/minimax-text-01-8experts-shape.json");
  const ResolvedLoraTargets r = resolve_lora_targets(m, {"qkv_proj", "output_gate", "out_proj"});
  ASSERT_TRUE(r.refusal.empty()) << r.refusal;
  EXPECT_TRUE(r.targets.mixer_in && r.targets.mixer_gate && r.targets.mixer_out);
  EXPECT_FALSE(r.targets.q || r.targets.k || r.targets.v || r.targets.o);
}

// Kimi Linear's delta attention (b_proj, the forget gate's f_a_proj/f_b_proj, the output gate's
// g_a_proj/g_b_proj beside q/k/v/o_proj) and its MLA layers' kv_a_proj_with_mqa and kv_b_proj; its
// router is no nn.Linear, and all-linear is PEFT's count to the parameter (test_hf_all_linear.cpp).
// Five steps written and priced before they ran (examples/hf/kda_lora/cases_blind.json): all-linear
// non-reentrant, reentrant under mixed precision and eager DPO, the five gate projections alone, f_b_proj
// with the latent projections at rank 64 with dropout. All within 0.81% as first compared (bytes before
// the step within 0.02%).
TEST(HfKdaAdapters, BlindSteps) { test::expect_steps_within("steps-kda-lora-h200.jsonl", "h200", 0.05, 0.85, 5); }

}  // namespace
}  // namespace remat
