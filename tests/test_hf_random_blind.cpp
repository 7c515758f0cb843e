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

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "hf_measured.hpp"
#include "remat/cost/params.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

// A drawn set's time ratios (make_cases.py --pairs): {pairs, pairs within 10%}; a miss must be
// host-paced.
std::pair<int, int> ratios_within_bound(const std::string& file) {
  const std::vector<HfComparison> steps = test::measured_hf_steps(file, "h200");
  std::pair<int, int> out{0, 0};
  for (const HfTimeRatio& r : hf_time_ratios(steps)) {
    ++out.first;
    if (std::abs(r.error_pct()) <= 10)
      ++out.second;
    else
      EXPECT_TRUE(r.host_paced()) << steps[r.checkpointed].measured.case_name;
  }
  return out;
}

TEST(HfRandomBlind, Seed1Steps) { test::expect_steps_within("steps-random-blind-h200.jsonl", "h200", 1.25, 1.15, 24); }

TEST(HfRandomBlind, SmolVlmTowerCounted) {
  const ModelSpec m =
      test::model(std::string(REMAT_TEST_DATA) + "/../examples/hf/unseen24/realcfg/smolvlm-500m-fastvlm-app.json");
  // embeddings 1,377,024 + 12 layers x 7,087,872 + post-LayerNorm 1,536 + connector 12,288 x 960
  EXPECT_DOUBLE_EQ(m.idle_params, 98229504);
  EXPECT_EQ(m.tower_linear_modules.size(), 7u);  // the layers' six and the connector's projection
}

// Seed 2 (cases_seed2.json, predicted_seed2.tsv): 30 steps, 28 within 1.58% at the peak as first
// compared. A LLaVA file with a Pixtral tower (Pixtral Large's shape cut to 4 layers) was -7.83% before
// the step: remat counted Pixtral towers under Mistral 3 only; under LLaVA they now carry LLaVA's
// projector (304,918,912 parameters): -0.02%. Phi-2's third step raised a SystemError in torch's
// dropout; its second is compared. OLMo 3.1 32B cut to 3 layers (LoRA rank 128 on gate, up and down,
// reentrant GRPO at 4 x 12k) was +8.80%: its trace (peak-traces-h200/random-blind2) peaks in the down
// adapter's backward with every saved tensor alive, where remat had held the SwiGLU's three
// intermediate-wide gradients beside the fp32 copy of the down projection's input, which the down
// adapter's backward frees before they exist (layer_cost.cpp block_working_bytes: the last linear's
// adapter ops run their backward with it): +2.46%. The same rule moved Jamba's reentrant DPO (+2.01%
// -> +0.42%) and two more, none the worse.
TEST(HfRandomBlind, Seed2Steps) {
  int checked = 0;
  for (const HfComparison& c : test::measured_hf_steps("steps-random-blind2-h200.jsonl", "h200")) {
    const bool olmo = c.measured.case_name == "rb2-28-olmo-3.1-32b-instruct";
    EXPECT_LE(std::abs(c.peak_error_pct()), olmo ? 2.5 : 1.6) << c.measured.case_name;
    EXPECT_LE(std::abs(c.before_error_pct()), 0.65) << c.measured.case_name;
    ++checked;
  }
  EXPECT_EQ(checked, 30);
}

// Seed 3 (cases_seed3.json), drawn after the fixes above: all 29 steps that ran within 0.95% at the
// peak and 0.48% before the step as first compared. The 30th drew 3 layers from a one-layer Qwen3-Next
// file whose layer_types lists one; transformers refuses a model whose list and layer count differ.
// 0.96 -> 1.3: Phi-1's reentrant LoRA GRPO step, +0.59% -> -1.25%: it peaks in a layer's backward
// (peak-traces-h200/random-blind3), which the head's overcount had hidden (thirty-fourth session)
TEST(HfRandomBlind, Seed3Steps) { test::expect_steps_within("steps-random-blind3-h200.jsonl", "h200", 0.5, 1.3, 29); }

// Seeds 4 and 5 (cases_seed4.json, cases_seed5.json): 30 steps each, drawn after every fix above.
// As first compared all 60 were within 2.75% at the peak; two misses were counts, both now read
// (test_hf_param_counts.cpp): Gemma-4-31B cut to one layer ends on a full-attention layer (before
// the step -2.58% -> -0.01%), and Mistral Small 4's file without vision_config builds Mistral 3's
// default Pixtral tower (-1.30% -> -0.01%). The largest left: LLaMA-65B, one layer, all-linear
// rank 16, mixed GRPO, -2.75%; EXAONE 4.0 32B, rank 128 on q and v, reentrant DPO at 12k, +2.34%.
TEST(HfRandomBlind, Seeds4And5Steps) {
  test::expect_steps_within("steps-random-blind4-h200.jsonl", "h200", 0.6, 2.4, 30);
  test::expect_steps_within("steps-random-blind5-h200.jsonl", "h200", 1.1, 2.8, 30);
}

// Seed 6 (cases_seed6.json, make_cases.py --pairs): 15 checkpointed steps, each beside the same step
// without checkpointing, for time ratios on configs no one chose. Peaks within 1.31%; 13 of the 15
// ratios within 10% as first compared, the two others host-paced (a 1k-token Qwen3-30B-A3B cut,
// -24.6%; Gemma 3 270M eager, -11.8%, -9.8% since eager attention's traffic is counted as
// transformers' code makes it: exact_attention_math.cpp).
TEST(HfRandomBlind, Seed6PairsAndTheirTimeRatios) {
  test::expect_steps_within("steps-random-blind6-h200.jsonl", "h200", 0.8, 1.35, 30);
  EXPECT_EQ(ratios_within_bound("steps-random-blind6-h200.jsonl"), std::pair(15, 14));
}

// Seed 7 (make_cases.py --wide): partial checkpointing, bf16 adapters, batches of 3-4 and 24-32k drawn
// too. 29 of 30 ran (the harness set Mllama's partial checkpointing through get_decoder(), which has no
// layers there; fixed). As first compared 28 were within 1.55%; Magistral Small 2509 was +9.85% at the
// peak and +23.70% before the step: Mistral3Config ties the head where the file does not say (its
// count: test_hf_param_counts.cpp). Now +0.29% and +0.02%.
TEST(HfRandomBlind, Seed7WideSteps) {
  test::expect_steps_within("steps-random-blind7-h200.jsonl", "h200", 1.2, 1.6, 29);
}

// Seeds 8 (--wide --pairs) and 9 (--wide): 60 steps, all of them ran. As first compared 58 were within
// 2.34%; GPT-OSS-120B cut to 6 layers (all-linear off, q and v at rank 8, mixed DPO under eager) was
// -3.31% without checkpointing: under autocast the fp32 sink parameter promotes the bf16 scores to
// fp32 (torch.cat), so the softmax saves fp32 probabilities beside PV's bf16 cast; now +0.04%. Seed 8's
// 15 time ratios: 14 within 10% as first compared; Gemma 2 9B (mixed LoRA with dropout under eager,
// non-reentrant) -11.3% without being host-paced: remat counted half the passes transformers' eager
// attention makes over the scores and none of Gemma 2's score cap; -7.3% with them.
TEST(HfRandomBlind, Seeds8And9WideSteps) {
  test::expect_steps_within("steps-random-blind8-h200.jsonl", "h200", 0.2, 2.4, 30);
  test::expect_steps_within("steps-random-blind9-h200.jsonl", "h200", 0.9, 1.8, 30);
  EXPECT_EQ(ratios_within_bound("steps-random-blind8-h200.jsonl"), std::pair(15, 15));
}

// Seeds 10 (--wide) and 11 (--wide --pairs): 60 steps, all ran. As first compared 54 were within 2%.
// CodeLlama-34B cut to 2 layers (LoRA q and v, GRPO 4 x 16k, no checkpointing) was -6.25%: its peak is
// the final RMSNorm's backward, five fp32 copies of its input, where the vocabulary is only four
// times the hidden width (streambp.cpp head_peak_bytes); now -0.02%. LFM2-2.6B's full reentrant mixed
// DPO step was -4.06%: a reentrant checkpoint's forward runs under no_grad, but autocast caches the
// bf16 casts of weights that require a gradient whatever the grad mode, so every checkpointed layer's
// copies stay through the loss's forward (estimate.cpp with_autocast_casts); now -0.01%, and
// Qwen2.5-32B's full reentrant mixed GRPO step -1.52% -> +0.13%. Left: Gemma-4-31B full reentrant GRPO
// 4 x 12k -2.83%, LLaMA-2-13B mixed GRPO with 2 of 5 layers checkpointed -2.40%. Seed 11's 15 time ratios:
// 14 within 10%, the other host-paced (Gemma 3 1B, -12.0%).
TEST(HfRandomBlind, Seeds10And11WideSteps) {
  test::expect_steps_within("steps-random-blind10-h200.jsonl", "h200", 0.2, 2.9, 30);
  test::expect_steps_within("steps-random-blind11-h200.jsonl", "h200", 1.1, 1.1, 30);
  EXPECT_EQ(ratios_within_bound("steps-random-blind11-h200.jsonl"), std::pair(15, 14));
}

// Seeds 12 (--wide) and 13 (--wide --pairs): 60 steps, all ran. As first compared 59 were within
// 1.68%; EXAONE-4.0-32B cut to 4 layers (LoRA on q, k, v, o with bf16 adapters, reentrant GRPO
// 4 x 32k) was +5.21%: EXAONE 4 and OLMo-2/3 put both norms on the branches' outputs
// (Olmo2DecoderLayer), where remat had them on the inputs: the linears read the residual stream
// itself, and the post-feedforward norm's fp32 input is freed before the MLP's backward. Now -0.03%;
// EXAONE 4's seed-4 step +2.34% -> -0.07%, OLMo 3.1's seed-2 step +2.46% -> -1.67%. Seed 13's 15
// time ratios: 10 within 10%, the five misses host-paced. Qwen3-VL-2B's (1.039 measured, 1.170
// predicted) is so by its baseline, which took 1.35x remat's GPU time while the checkpointed step took 1.20x.
TEST(HfRandomBlind, Seeds12And13WideSteps) {
  test::expect_steps_within("steps-random-blind12-h200.jsonl", "h200", 0.85, 1.75, 30);
  test::expect_steps_within("steps-random-blind13-h200.jsonl", "h200", 0.45, 1.55, 30);
  EXPECT_EQ(ratios_within_bound("steps-random-blind13-h200.jsonl"), std::pair(15, 10));
}

TEST(HfRandomBlind, PostNormsOnTheBranchOutputs) {
  const ModelSpec m = test::model(std::string(REMAT_TEST_DATA) + "/data/hf_configs/exaone-4.0-32b.json");
  ASSERT_TRUE(m.post_norms_only);
  TrainingSpec t = test::hf_training(4096, 16);
  const LayerDef layer = build_layer(m, with_model(rank_shape(t), m), 3);
  const auto has_tensor = [&](const std::string& block, const std::string& name) {
    for (const Block& b : layer.blocks)
      if (b.name == block)
        for (const TensorDef& td : b.tensors)
          if (td.name == name) return true;
    return false;
  };
  EXPECT_FALSE(has_tensor("gqa", "x32"));  // no input norm
  EXPECT_FALSE(has_tensor("mlp", "x32"));
  EXPECT_TRUE(has_tensor("attn.out", "out_norm_x32"));  // 4096 x 5120 fp32 each
  EXPECT_TRUE(has_tensor("mlp.out", "out_norm_x32"));
}

TEST(HfRandomBlind, GemmaFourCutEndsOnFullAttention) {
  ModelSpec m = test::model(std::string(REMAT_TEST_DATA) + "/data/hf_configs/gemma-4-31b-it.json");
  m.set_layer_count(1);
  EXPECT_FALSE(m.layer_is_windowed(0));
  // the run's 2,519,042,608 less the tower and projector (575,741,232): embeddings 262,144 x 5,376, one
  // full-attention layer (q 5376 x 16384, k 5376 x 2048 shared as values, o 16384 x 5376, MLP
  // 3 x 5376 x 21504, norms) and the final norm
  EXPECT_DOUBLE_EQ(model_params(m, 1), 1943301376);
}

TEST(HfRandomBlind, PixtralUnderLlavaCounted) {
  const ModelSpec m =
      test::model(std::string(REMAT_TEST_DATA) + "/../examples/hf/unseen16/realcfg/pixtral-4l-neuron.json");
  // tower 1,081,344 + 1,408 + 4 x 33,884,928; LLaVA's projector 1408 x 12288 + 12288^2, no bias
  EXPECT_DOUBLE_EQ(m.idle_params, 304918912);
}

}  // namespace
}  // namespace remat
