// StreamBP (issue 6): the strategy against layer checkpointing, the chunked
// LM head, the objectives' logits and LoRA, with hand-derived values.
#include <gtest/gtest.h>

#include "remat/cost/estimate.hpp"
#include "remat/cost/stage_model.hpp"
#include "remat/cost/streambp.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

TrainingSpec one_gpu(int64_t seq, int64_t d = 1, int64_t c = 1) {
  TrainingSpec t = test::layout(1, 1, 1, 1, 1, seq);
  t.precision = Precision::bf16;
  t.streambp_chunks = d, t.lm_head_chunks = c;
  return t;
}

Estimate run(const TrainingSpec& t, Strategy s, const char* model = "qwen3-8b", const char* hw = "a800-80gb") {
  Plan p;
  p.strategy = s;
  return estimate(test::model(model), test::hardware(hw), t, p, 1e30);
}

TEST(StreamBp, OneChunkEqualsLayerCheckpointing) {
  for (bool flash : {true, false}) {
    TrainingSpec t = one_gpu(8192);
    t.flash_attention = flash;
    const Estimate full = run(t, Strategy::full), sbp = run(t, Strategy::streambp);
    const auto &a = full.stages[0], &b = sbp.stages[0];
    EXPECT_DOUBLE_EQ(a.memory_bytes.peak, b.memory_bytes.peak);
    EXPECT_DOUBLE_EQ(a.memory_bytes.activations, b.memory_bytes.activations);
    EXPECT_DOUBLE_EQ(a.memory_bytes.transient_peak, b.memory_bytes.transient_peak);
    EXPECT_DOUBLE_EQ(a.flops.forward, b.flops.forward);
    EXPECT_DOUBLE_EQ(a.flops.backward, b.flops.backward);
    EXPECT_DOUBLE_EQ(a.flops.recompute, b.flops.recompute);
    EXPECT_DOUBLE_EQ(full.iteration.time_s, sbp.iteration.time_s);
  }
}

TEST(StreamBp, MemoryFallsAndTimeRisesWithChunks) {
  double last_peak = 1e300, last_transient = 1e300, last_time = 0;
  for (int64_t d : {1, 2, 4, 8, 16, 32}) {
    // C = 1024 keeps the LM head's logits below the layer's backward working set
    const Estimate e = run(one_gpu(32768, d, 1024), Strategy::streambp);
    const auto& st = e.stages[0];
    // kept: the 36 layer inputs, s h bf16 each, whatever D
    EXPECT_DOUBLE_EQ(st.memory_bytes.activations, 36 * 32768.0 * 4096 * 2) << d;
    EXPECT_LT(st.memory_bytes.peak, last_peak) << d;
    EXPECT_LT(st.memory_bytes.transient_peak, last_transient) << d;
    EXPECT_GT(e.iteration.time_s, last_time) << d;
    last_peak = st.memory_bytes.peak, last_transient = st.memory_bytes.transient_peak;
    last_time = e.iteration.time_s;
  }
}

// One Qwen3-8B layer at s = 1024, b = 1, by hand. Saved (bf16 unless noted):
// gqa: x 8 Mi, rstd 4 Ki (fp32), x_norm 8 Mi, q 8 Mi, k 2 Mi, v 2 Mi, o 8 Mi, lse 128 Ki (fp32);
// mlp: x 8 Mi, rstd 4 Ki, x_norm 8 Mi, gate 24 Mi, up 24 Mi, act 24 Mi. Largest tensor 24 Mi.
TEST(StreamBp, LayerTransientByHand) {
  const ModelSpec m = test::model("qwen3-8b");
  const RankShape r = rank_shape(one_gpu(1024));
  const LayerDef layer = build_layer(m, r, 0);
  const double mi = 1024.0 * 1024, ki = 1024;
  const double gqa_saved = (8 + 8 + 8 + 2 + 2 + 8) * mi + 4 * ki + 128 * ki;
  const double saved = gqa_saved + (8 + 8 + 24 + 24 + 24) * mi + 4 * ki;
  const double input = 8 * mi, kv = 4 * mi, largest = 24 * mi;
  EXPECT_DOUBLE_EQ(layer.input_bytes, input);
  EXPECT_DOUBLE_EQ(streambp_kv_bytes(layer), kv);
  const HardwareSpec hw = test::hardware("a800-80gb");
  // D = 1: layer checkpointing, everything the layer saves but its input plus 3 x the largest tensor
  LayerChoice one{LayerMode::full, {}, 1};
  EXPECT_DOUBLE_EQ(layer_cost(layer, one, false, hw).transient_bytes, saved - input + 3 * largest);
  for (int64_t d : {2, 4, 16}) {
    LayerChoice ch{LayerMode::full, {}, d};
    const LayerCost c = layer_cost(layer, ch, false, hw);
    EXPECT_DOUBLE_EQ(c.kept_bytes, input);
    // dy and the dx accumulator, K/V and the dK/dV accumulator, then the larger chunk phase:
    const double whole = 2 * input + 2 * kv;
    const double mlp = (saved - input - kv + 2 * largest) / d;
    // attention: x_norm, rstd, q, o, lse + dO, dQ, residual gradient; fp32 dQ accumulator + row
    // sums; dK/dV expanded to 32 heads over the visible keys (4 x 4 Mi), the later chunks' dK/dV
    const double activations = gqa_saved - input - kv + 8 * mi + 8 * mi + input;
    const double workspace = 2 * 8 * mi + 128 * ki, expanded = 16 * mi;
    const double attn = (activations + workspace) / d + std::max(expanded, (kv + expanded) * (d - 1) / d);
    EXPECT_NEAR(c.transient_bytes, whole + std::max(mlp, attn), 1.0) << d;
    const StreamBpBytes b = streambp_chunked_bytes(layer, d);
    EXPECT_DOUBLE_EQ(b.kept, c.kept_bytes);
    EXPECT_DOUBLE_EQ(b.transient, c.transient_bytes);
  }
}

TEST(StreamBp, ScoreFractionFollowsThePaper) {
  // sec. 3.2.2: (1 + D) T^2 d / D against 2 T^2 d
  EXPECT_DOUBLE_EQ(streambp_score_fraction(1, false), 1.0);
  EXPECT_DOUBLE_EQ(streambp_score_fraction(4, false), 5.0 / 8);
  EXPECT_DOUBLE_EQ(streambp_score_fraction(1000, false), 1001.0 / 2000);
  EXPECT_DOUBLE_EQ(streambp_score_fraction(4, true), 1.0);  // causal flash already skips the masked half
  // Without flash the reforward's attention FLOPs fall by that fraction
  TrainingSpec t = one_gpu(8192);
  t.flash_attention = false;
  const Estimate full = run(t, Strategy::full);
  t.streambp_chunks = 4;
  const Estimate sbp = run(t, Strategy::streambp);
  const double s = 8192, heads = 32, hd = 128;
  const double attn_fwd = 4 * s * s * heads * hd * 0.5 * 36;  // QK^T and PV, causal count, 36 layers
  const double n = double(full.microbatches);                 // stage FLOPs are per iteration
  EXPECT_NEAR((full.stages[0].flops.recompute - sbp.stages[0].flops.recompute) / n, attn_fwd * (1 - 5.0 / 8), 1e3);
}

TEST(StreamBp, LogitsPeakShrinksByHeadChunks) {
  const ModelSpec m = test::model("qwen3-8b");
  const HardwareSpec hw = test::hardware("a800-80gb");
  const auto head_logits = [&](int64_t c) {
    const TrainingSpec t = one_gpu(8192, 1, c);
    const StageBase b = stage_base(m, hw, t, rank_shape(t), 0, {0, 36});
    const Block head = rmsnorm_linear_block(rank_shape(t), m.hidden_size, m.vocab_size, "lm_head");
    return b.head_transient_bytes - saved_bytes(head) - head.tensor_bytes("x_norm");  // less the hidden gradient
  };
  const double logits = 8192.0 * 151936;
  EXPECT_DOUBLE_EQ(head_logits(1), 10 * logits);  // bf16 logits + fp32 copy + fp32 gradient
  EXPECT_DOUBLE_EQ(head_logits(8), 10 * logits / 8);
  EXPECT_DOUBLE_EQ(head_logits(82), 10 * logits / 82);
}

// GRPO, G = 8, T = 100, V = 151936: policy (2 + 4 + 4), old policy 4, reference 4 bytes per
// element over G T V elements; DPO: policy + reference over 2 T V; LoRA drops the reference.
TEST(StreamBp, ObjectiveLogitsByHand) {
  const double v = 151936, tokens = 100;
  TrainingSpec t = one_gpu(100);
  t.objective = Objective::grpo, t.grpo_group = 8;
  EXPECT_DOUBLE_EQ(head_logits_bytes_per_element(t, ModelLogits::standard), 18);
  EXPECT_EQ(sequences_per_example(t), 8);
  EXPECT_DOUBLE_EQ(head_logits_bytes(t, 8 * tokens * v, ModelLogits::standard), 18 * 8 * 100 * v);
  t.lm_head_chunks = 4;
  EXPECT_DOUBLE_EQ(head_logits_bytes(t, 8 * tokens * v, ModelLogits::standard), 18 * 8 * 100 * v / 4);
  t.lm_head_chunks = 1, t.lora_rank = 32;
  EXPECT_DOUBLE_EQ(head_logits_bytes(t, 8 * tokens * v, ModelLogits::standard), 14 * 8 * 100 * v);
  t.objective = Objective::dpo, t.lora_rank = 0;
  EXPECT_EQ(sequences_per_example(t), 2);
  EXPECT_DOUBLE_EQ(head_logits_bytes(t, 2 * tokens * v, ModelLogits::standard), 14 * 2 * 100 * v);
  t.lora_rank = 32;
  EXPECT_DOUBLE_EQ(head_logits_bytes(t, 2 * tokens * v, ModelLogits::standard), 10 * 2 * 100 * v);
  // TRL's per-row log-probabilities on logits the model's forward made fp32 (Llama 3.2 Vision,
  // Nemotron-H): the fp32 logits (4) and, at the last row's logsumexp backward, the rows done and
  // that row's three temporaries, 4 (rows + 2) / rows, or the rows' gradients and their stack (8):
  // 12 for DPO's two rows and for four, 16 for one
  t.per_row_logps = true, t.mbs = 2;
  EXPECT_DOUBLE_EQ(head_logits_bytes_per_element(t, ModelLogits::fp32_in_forward), 12);
  t.mbs = 4;
  EXPECT_DOUBLE_EQ(head_logits_bytes_per_element(t, ModelLogits::fp32_in_forward), 12);
  t.mbs = 1;
  EXPECT_DOUBLE_EQ(head_logits_bytes_per_element(t, ModelLogits::fp32_in_forward), 16);
  t.per_row_logps = false, t.mbs = one_gpu(100).mbs;
  // Qwen2-Audio's own cross_entropy on bf16 logits under SFT: the saved log-softmax, nll_loss's
  // gradient and log_softmax's (2 + 2 + 2); under autocast nll_loss's saved fp32 cast and its fp32
  // gradient beside the bf16 log-softmax (2 + 4 + 4), where transformers' loss holds 12
  TrainingSpec own = one_gpu(100);
  EXPECT_DOUBLE_EQ(head_logits_bytes_per_element(own, ModelLogits::own_bf16_loss), 6);
  own.params_fp32_autocast = true;
  EXPECT_DOUBLE_EQ(head_logits_bytes_per_element(own, ModelLogits::own_bf16_loss), 10);
  own.loss_log_softmax_saved = true;  // the hf profile's reading of transformers' loss
  EXPECT_DOUBLE_EQ(head_logits_bytes_per_element(own, ModelLogits::standard), 12);
  // Through the estimate: the DPO head sees 2 T tokens, the layers 2 sequences
  TrainingSpec sft = one_gpu(100), dpo = one_gpu(100);
  dpo.objective = Objective::dpo;
  dpo.lora_rank = sft.lora_rank = 32;
  const Estimate a = run(sft, Strategy::full), b = run(dpo, Strategy::full);
  EXPECT_DOUBLE_EQ(b.stages[0].memory_bytes.activations, 2 * a.stages[0].memory_bytes.activations);
}

// GRPO runs the G responses through the model three times (pi_old and pi_ref under no_grad, then
// the policy), DPO the chosen and rejected pair twice (pi_ref, then the policy): forward time 3x
// and 2x that of SFT on as many sequences; backward and recompute unchanged.
TEST(StreamBp, ObjectivesPayTheirNoGradForwards) {
  for (const auto& [objective, passes] : {std::pair{Objective::grpo, 3.0}, std::pair{Objective::dpo, 2.0}}) {
    TrainingSpec policy = one_gpu(1024);
    policy.objective = objective, policy.grpo_group = 4, policy.mbs = policy.gbs = 1;
    TrainingSpec sft = one_gpu(1024);
    sft.mbs = sequences_per_example(policy), sft.gbs = sft.mbs;
    const Estimate a = run(sft, Strategy::full), b = run(policy, Strategy::full);
    EXPECT_NEAR(b.stages[0].time_s.forward, passes * a.stages[0].time_s.forward, 1e-12);
    EXPECT_NEAR(b.stages[0].time_s.backward, a.stages[0].time_s.backward, 1e-12);
    EXPECT_NEAR(b.stages[0].time_s.recompute, a.stages[0].time_s.recompute, 1e-12);
  }
}

// Qwen3-8B, r = 32 on q, k, v, o, gate, up, down (h 4096, q 4096, kv 1024, f 12288):
// qkv 32 (4096 + 4096) + 2 * 32 (4096 + 1024) = 589824; o 262144; mlp 1572864.
TEST(StreamBp, LoraStaticByHand) {
  const ModelSpec m = test::model("qwen3-8b");
  TrainingSpec t = one_gpu(1024);
  t.lora_rank = 32;
  EXPECT_DOUBLE_EQ(lora_layer_params(m, t, 1), 589824 + 262144 + 1572864);
  t.lora_targets = {true, true, true, false, false, false, false};
  EXPECT_DOUBLE_EQ(lora_layer_params(m, t, 1), 589824);
  t.lora_targets = LoraTargets{};
  const ParamCount p{1e9, 0};
  const StaticBytes s = streambp_static_bytes(p, 0, 1e6, t);  // bf16: adapters 2 + 2 + 4 bytes
  EXPECT_DOUBLE_EQ(s.weights, 2e9 + 2e6);
  EXPECT_DOUBLE_EQ(s.gradients, 2e6);
  EXPECT_DOUBLE_EQ(s.optimizer, 4e6);
  // Full GRPO keeps a bf16 reference model; ZeRO-3 over 4 shards it and gathers one layer
  TrainingSpec g = one_gpu(1024);
  g.objective = Objective::grpo, g.zero_stage = 3, g.dp = 4;
  const StaticBytes z = streambp_static_bytes(p, 1e7, 0, g);
  EXPECT_DOUBLE_EQ(z.weights, (2e9 + 2e9) / 4 + 2e7);
}

TEST(StreamBp, ValidationNamesTheFlag) {
  const ModelSpec m = test::model("qwen3-8b");
  TrainingSpec t = one_gpu(1024, 0, 1);
  auto p = validate_training(t, m);
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p[0].key, "--streambp-chunks");
  t = one_gpu(1024, 1, 2048);
  p = validate_training(t, m);
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p[0].key, "--lm-head-chunks");
  t = one_gpu(1024);
  t.lora_rank = -1;
  p = validate_training(t, m);
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p[0].key, "--lora-rank");
  Plan plan;
  plan.strategy = Strategy::streambp;
  EXPECT_TRUE(validate_plan(plan, one_gpu(1024), m).empty());
}

}  // namespace
}  // namespace remat

namespace remat {
namespace {

TEST(StreamBp, LargestFittingIsABinarySearch) {
  EXPECT_EQ(largest_fitting(100, [](int64_t v) { return v <= 37; }), 37);
  EXPECT_EQ(largest_fitting(100, [](int64_t v) { return v <= 100; }), 100);
  EXPECT_EQ(largest_fitting(100, [](int64_t) { return false; }), 0);
  EXPECT_EQ(chunks_for(1000, 500), 2);
  EXPECT_EQ(chunks_for(1001, 500), 3);
  EXPECT_EQ(chunks_for(10, 500), 1);
}

// Under the same budget, StreamBP's longest sequence is at least checkpointing's: at D = C = 1 it
// costs the same, and chunks only shrink the working set.
TEST(StreamBp, StreamBpFitsAtLeastCheckpointingsSequence) {
  const ModelSpec m = test::model("qwen3-8b");
  const HardwareSpec hw = test::hardware("rtx-3090");
  const auto longest = [&](Strategy s) {
    Plan p;
    p.strategy = s;
    return largest_fitting(1 << 20, [&](int64_t seq) {
      TrainingSpec t = test::layout(1, 1, 1, 1, 1, seq);
      t.lora_rank = 32;
      t.streambp_chunks = chunks_for(seq, 500), t.lm_head_chunks = chunks_for(seq, 100);
      return estimate(m, hw, t, p, default_budget_bytes(hw)).fits;
    });
  };
  const int64_t full = longest(Strategy::full), sbp = longest(Strategy::streambp);
  EXPECT_GT(full, 0);
  EXPECT_GT(sbp, 2 * full);
}

}  // namespace
}  // namespace remat
