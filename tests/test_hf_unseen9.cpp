// A ninth blind set (examples/hf/unseen9/, reports/hf/steps-unseen9-h200.jsonl): 30 families remat
// had never measured, from transformers 5.17's own config defaults cut to a few layers, measured on
// an H200 before any term below was written. As first compared, 4 of 79 peaks were outside 3%:
// Apertus -7.15% (xIELU), OLMo-2 -3.75% (its norms' fp32 product), NanoChat +3.08% (weightless
// norms), and two Granite GRPO steps -7.96% and -5.84% (a checkpointed layer's replay).
#include <gtest/gtest.h>

#include "hf_measured.hpp"
#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/layer_cost.hpp"
#include "remat/cost/stage_model.hpp"
#include "remat/spec/framework.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kUnseen9 = std::string(REMAT_TEST_DATA) + "/../examples/hf/unseen9/";

TrainingSpec hf_bf16(int64_t mbs, int64_t seq, int64_t lora_rank) {
  TrainingSpec t;
  t.mbs = mbs, t.gbs = mbs, t.seq = seq, t.precision = Precision::bf16, t.lora_rank = lora_rank;
  if (lora_rank > 0) t.lora_targets = {true, true, true, true, true, true, true};
  t = apply_framework(t, kHfFramework);
  t.zero_stage = 0;
  return t;
}

double saved_layer_bytes(const ModelSpec& m, const TrainingSpec& t) {
  const LayerDef layer = build_layer(model_as_built(m, kHfFramework), rank_shape(t), 0);
  return layer_cost(layer, choice_for(Strategy::none, layer), false, test::hardware("h200")).kept_bytes;
}

// The layer's saved bytes as loaded less those with `change` applied to the model.
template <class Change>
double saved_less_changed(ModelSpec m, const TrainingSpec& t, Change change) {
  const double as_loaded = saved_layer_bytes(m, t);
  change(m);
  return as_loaded - saved_layer_bytes(m, t);
}

TEST(HfUnseen9, EveryStepWithinThreePercent) {
  test::expect_steps_within("steps-unseen9-h200.jsonl", "h200", 2.5, 3.0, 79);
}

// The allocator traces (reports/hf/peak-traces-h200/unseen9/): NanoChat, the Granite GRPO step and
// the same step on a LLaMA of Granite's dims, whose peak is the replay of a checkpointed layer.
TEST(HfUnseen9, TracedStepsWithinTwoPercent) {
  test::expect_steps_within("steps-unseen9-traced-h200.jsonl", "h200", 0.5, 2.0, 3);
}

// Olmo2RMSNorm multiplies its weight before the cast back, so the product the weight's gradient
// reads is fp32: 2 bytes more per element of the two layer norms (h 4096) and the q and k norms
// (32 heads x 128 each). 4096 tokens: 4 x 4096 x 4096 x 2 bytes a layer.
TEST(HfUnseen9, OlmoNormsSaveAnFp32Product) {
  const ModelSpec olmo2 = test::model(kUnseen9 + "olmo2-4l.json");
  ASSERT_TRUE(olmo2.norm_scale_fp32);
  const auto bf16_product = [](ModelSpec& m) { m.norm_scale_fp32 = false; };
  EXPECT_DOUBLE_EQ(saved_less_changed(olmo2, hf_bf16(1, 4096, 0), bf16_product), 4.0 * 4096 * 4096 * 2);
  // a frozen weight reads no product: LoRA saves the same either way
  EXPECT_DOUBLE_EQ(saved_less_changed(olmo2, hf_bf16(1, 4096, 16), bf16_product), 0);
}

// transformers' Python xIELU saves, beside x, the bool condition (1 byte), alpha_p * x, expm1's
// output and expm1(..) - x (2 bytes each): 7 bytes per intermediate element more than relu^2's
// two tensors. Apertus: f 14336, 4096 tokens.
TEST(HfUnseen9, XieluSavesFourMoreTensors) {
  const ModelSpec apertus = test::model(kUnseen9 + "apertus-4l.json");
  ASSERT_EQ(apertus.hidden_act, "xielu");
  EXPECT_DOUBLE_EQ(saved_less_changed(apertus, hf_bf16(1, 4096, 0), [](ModelSpec& m) { m.hidden_act = "relu2"; }),
                   7.0 * 4096 * 14336);
  // under autocast the three are fp32 (13 bytes); with a frozen alpha_n (LoRA) expm1(..) - x is not kept:
  // 1 + 4 + 4 in fp32, 1 + 2 + 2 in bf16 (peak-traces-h200/unseen9-followup)
  TrainingSpec mixed = hf_bf16(1, 4096, 0);
  mixed.precision = Precision::mixed;
  mixed = apply_framework(mixed, kHfFramework);
  const auto relu2 = [](ModelSpec& m) { m.hidden_act = "relu2"; };
  EXPECT_DOUBLE_EQ(saved_less_changed(apertus, mixed, relu2), 13.0 * 4096 * 14336);
  TrainingSpec mixed_lora = hf_bf16(1, 4096, 16);
  mixed_lora.precision = Precision::mixed;
  mixed_lora = apply_framework(mixed_lora, kHfFramework);
  EXPECT_DOUBLE_EQ(saved_less_changed(apertus, mixed_lora, relu2), 9.0 * 4096 * 14336);
  EXPECT_DOUBLE_EQ(saved_less_changed(apertus, hf_bf16(1, 4096, 16), relu2), 5.0 * 4096 * 14336);
}

// NanoChat's norms have no weight, so nothing saves a normalized copy for one: per layer the two
// layer norms' and the q and k norms' bf16 copies (h 768, 6 heads x 128) are not saved.
TEST(HfUnseen9, WeightlessNormsSaveNoProduct) {
  const ModelSpec nanochat = test::model(kUnseen9 + "nanochat-12l.json");
  ASSERT_FALSE(nanochat.norm_affine);
  EXPECT_DOUBLE_EQ(saved_less_changed(nanochat, hf_bf16(1, 2048, 0), [](ModelSpec& m) { m.norm_affine = true; }),
                   -4.0 * 2048 * 768 * 2);
}

// A LoRA layer under non-reentrant checkpointing, replayed in backward (fp32 adapters, bf16 model):
// LLaMA of Granite's dims (h 4096, f 11008, 32 heads), 4 sequences of 4096 tokens (T = 16384). The
// allocator at the peak (peak-traces-h200/unseen9/granite-twin-...) holds, in MiB: the attention
// half's saved tensors 1798 (norm input 256, q/k/v casts 768, q k v o 512, lse 2, o's cast 256,
// adapter outputs 4), the MLP's norm input 256, gate/up casts 512 and adapter outputs 2, the residual
// and the norm output 128 + 128, the gate, SiLU and up outputs 3 x 344, up's lora_B output and its
// scaled copy 2 x 688, and the gradients computed before the replay: the layer output's 128, down's
// base path 128 and its adapter's fp32 256. 5744 MiB, the trace's 6256 less the 4 layer inputs.
TEST(HfUnseen9, CheckpointedLoraLayerPeaksInItsReplay) {
  const ModelSpec twin = test::model(kUnseen9 + "llama-granite-twin-4l.json");
  const TrainingSpec t = hf_bf16(4, 4096, 16);
  const LayerDef layer = build_layer(model_as_built(twin, kHfFramework), rank_shape(t), 0);
  const LayerCost c = layer_cost(layer, choice_for(Strategy::full, layer), true, test::hardware("h200"));
  const double mib = 1 << 20, adapters = 3 + 1 + 2;  // the rank-16 fp32 lora_A outputs
  const double expected = 256 + 768 + 512 + 2 + 256 + 256 + 512 + adapters + 128 + 128 + 3 * 344 + 2 * 688 + 512;
  EXPECT_NEAR(c.transient_bytes / mib, expected, 1.0);
  EXPECT_DOUBLE_EQ(c.kept_bytes, 16384.0 * 4096 * 2);  // the layer input
}

// The same layer with dropout 0.05 (Llama-2-7B's dims, 4 sequences of 4096 tokens): each adapter
// saves a dropped fp32 copy and its mask (5 bytes an element), and the loop keeps its fp32 cast of
// the input as `x`. The replay stops as down's adapter saves lora_A's output, before lora_B runs
// (peak-traces-h200/unseen9/llama2-7b-...-dropout), holding in MiB: the attention half 2054 (norm
// input 256, q/k/v copies 960, q k v o 512, lse 2, o's copy 320, adapter outputs 4), the MLP's norm
// input 256, gate/up copies 640, gate, SiLU and up 3 x 344, down's copy 860, adapter outputs 3, the
// residual and norm output 256, down's input 344, its base output 128, its fp32 cast 688, and the
// gradients computed before the replay 512: 6773 MiB, the trace's 7285 less the 4 layer inputs.
TEST(HfUnseen9, ReplayStopsAtTheLastSavedTensor) {
  const ModelSpec llama2 = test::model(std::string(REMAT_TEST_DATA) + "/data/hf_configs/llama-2-7b-hf.json");
  TrainingSpec t = hf_bf16(4, 4096, 16);
  t.lora_dropout = 0.05;
  const LayerDef layer = build_layer(model_as_built(llama2, kHfFramework), rank_shape(t), 0);
  const LayerCost c = layer_cost(layer, choice_for(Strategy::full, layer), true, test::hardware("h200"));
  const double mib = 1 << 20;
  const double expected = 2054 + 256 + 640 + 3 * 344 + 860 + 3 + 256 + 344 + 128 + 688 + 512;
  EXPECT_NEAR(c.transient_bytes / mib, expected, 1.0);
}

// Nine LoRA steps under checkpointing whose peak may be a layer's replay (small vocabularies, 2-4
// sequences, dropout), measured after the replay term was written from the Granite traces: within
// 1.93%. Without the term two were outside 3%: Llama-2-13B -7.35%, the dropout step -4.12% (which
// the dropout trace then showed stops before down's lora_B).
// Phi-3 at 16k -2.01%: one lora_A on its fused qkv_proj and gate_up_proj, not three and two, took
// 0.67% off the bytes before the step (now +0.12%) and off the peak
TEST(HfUnseen9, LoraReplaySteps) { test::expect_steps_within("steps-lora-replay-h200.jsonl", "h200", 1.0, 2.1, 9); }

// Six more families blind (steps-unseen9b-h200.jsonl: GLM, Cohere2-MoE, HY-V3, Mamba): as first
// compared, Cohere2-MoE's LoRA step without checkpointing was +12.28%. Its trace
// (peak-traces-h200/unseen9/cohere2moe-...) holds one folded gate_up weight, not two: in a parallel
// layer the MoE reads the normed layer input beside the attention, so in the first adapted layer
// its input needs no gradient and the experts' gate_up GEMM saves no weight for one. Now +0.24%.
TEST(HfUnseen9, ParallelMoeFirstLayerKeepsNoFoldedWeight) {
  test::expect_steps_within("steps-unseen9b-h200.jsonl", "h200", 1.0, 1.0, 8);
  const ModelSpec cohere = model_as_built(test::model(kUnseen9 + "cohere2_moe-2l.json"), kHfFramework);
  TrainingSpec t = hf_bf16(1, 4096, 16);
  const LayerDef layer = build_layer(cohere, rank_shape(t), 0);
  ASSERT_TRUE(layer.parallel_branches);
  const auto kept = [&](const LayerDef& l) {
    return layer_cost(l, choice_for(Strategy::none, l), false, test::hardware("h200")).kept_bytes;
  };
  LayerDef sequential = layer;
  sequential.parallel_branches = false;
  // in the first adapted layer only: 8 experts' folded gate_up (2 x 22528 x 8192) in bf16, and what
  // the router before the experts' adapters saves (its fp32 probabilities over 8 experts and top-2
  // weights for 4096 tokens): its input and weight need no gradient there
  EXPECT_DOUBLE_EQ(kept(frozen_prefix_layer(sequential, false, t)) - kept(frozen_prefix_layer(layer, false, t)),
                   8.0 * 2 * 22528 * 8192 * 2 + 4096.0 * 8 * 4 + 4096.0 * 2 * 4);
  EXPECT_DOUBLE_EQ(kept(frozen_prefix_layer(sequential, true, t)), kept(frozen_prefix_layer(layer, true, t)));
}

}  // namespace
}  // namespace remat
