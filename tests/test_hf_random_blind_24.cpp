// What random blind seeds 24 and 25 found (thirty-fourth session; the sets' own bounds are in
// test_hf_random_blind_late.cpp), each term read off an allocator trace
// (reports/hf/peak-traces-h200/random-blind24, -25 and -25-followup) and checked here by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "hf_measured.hpp"
#include "remat/cost/estimate.hpp"
#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/stage_model.hpp"
#include "remat/cost/streambp.hpp"
#include "remat/spec/framework.hpp"
#include "remat/spec/lora_placement.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kConfigs = std::string(REMAT_TEST_DATA) + "/data/hf_configs/";

TrainingSpec hf_step(int64_t sequences, int64_t seq, Precision precision) {
  TrainingSpec t;
  t.mbs = sequences, t.gbs = sequences, t.seq = seq, t.precision = precision;
  return apply_framework(t, kHfFramework);
}

const Block& block_named(const LayerDef& layer, const std::string& name) {
  const auto it =
      std::find_if(layer.blocks.begin(), layer.blocks.end(), [&](const Block& b) { return b.name == name; });
  EXPECT_NE(it, layer.blocks.end()) << name;
  return *it;
}

// Granite-3.1-1B-A400M (h 1024, top 8), 4 x 3000 tokens: the routing weights (bf16) times the
// experts' outputs; its backward holds the index's scattered gradient and the two products, three
// routed-rows x hidden bf16 tensors (96,000 rows), with everything the experts saved still alive.
TEST(HfRandomBlind24, RoutedProductHoldsThreeGradientsWithBf16Weights) {
  const ModelSpec m = test::hf_model_as_built(kConfigs + "granite-3.1-1b-a400m-instruct.json");
  ASSERT_EQ(m.hidden_size, 1024);
  ASSERT_EQ(m.num_experts_per_tok, 8);
  const LayerDef layer = build_layer(m, rank_shape(hf_step(4, 3000, Precision::bf16)), 0);
  const Block& routed = block_named(layer, "moe.routed");
  const auto product = std::find_if(routed.ops.begin(), routed.ops.end(),
                                    [](const OpDef& op) { return op.name == "experts_probs_out"; });
  ASSERT_NE(product, routed.ops.end());
  EXPECT_DOUBLE_EQ(product->working_bytes, 3.0 * 96000 * 1024 * 2);
}

// Llama-3.2-3B (h 3072), LoRA on q, k, v, o with dropout 0.05 and fp32 adapters, 4 x 12288 tokens,
// no checkpointing: the first layer's q, k and v adapters read the frozen normed input, so their
// dropout records no graph and keeps no bool mask; o's input (the attention of adapted q, k, v)
// needs a gradient, and its adapter keeps the mask beside the fp32 dropped copy.
TEST(HfRandomBlind24, AdaptersOnAFrozenInputKeepNoDropoutMask) {
  const ModelSpec m = test::hf_model_as_built(kConfigs + "llama-3.2-3b.json");
  TrainingSpec t = hf_step(4, 12288, Precision::bf16);
  t.lora_rank = 8, t.lora_dropout = 0.05, t.lora_adapter_bytes = 4;
  t.lora_targets = resolve_lora_targets(m, {"q_proj", "k_proj", "v_proj", "o_proj"}).targets;
  const LayerDef first = frozen_prefix_layer(build_layer(m, rank_shape(t), 0), false, t);
  const double rows_by_width = 4.0 * 12288 * 3072;
  EXPECT_DOUBLE_EQ(block_named(first, "gqa").tensor_bytes("qkv.input"), 3 * rows_by_width * 4);
  EXPECT_DOUBLE_EQ(block_named(first, "attn.out").tensor_bytes("wo.input"), rows_by_width * (4 + 1));
}

// TRL's per-row log-probabilities on bf16 logits: the forward's end holds the logits and each row's
// saved log-softmax (4 bytes a logit); the backward's stacked gradient (2) meets the head input's
// gradient only after the rows' outputs are gone. 10^9 logits: with a 0.1 GB input the forward's end
// sets the head's peak, with a 3 GB one (a vocabulary few times the width) the backward does.
TEST(HfRandomBlind24, PerRowLogProbabilitiesPeakAtTheForwardsEnd) {
  TrainingSpec t = hf_step(4, 4096, Precision::bf16);
  t.objective = Objective::grpo;
  ASSERT_TRUE(t.per_row_logps && t.layouts_from_model_code);
  Block head;
  head.tensors.push_back({"x_norm", 1e8});
  EXPECT_DOUBLE_EQ(head_peak_bytes(head, t, 1e9, ModelLogits::standard), 4e9);
  head.tensors.front().bytes = 3e9;
  EXPECT_DOUBLE_EQ(head_peak_bytes(head, t, 1e9, ModelLogits::standard), 2e9 + 3e9);
}

// Under autocast a non-reentrant checkpoint's forward, as a reentrant one's, leaves autocast's cache
// holding the bf16 copy of every trained weight until the loss leaves autocast: Llama-3.2-1B's layer
// (q, o 2048^2; k, v 2048 x 512; gate, up, down 2048 x 8192; its two norms' weights 2 x 2048).
TEST(HfRandomBlind24, NonReentrantForwardHoldsAutocastCopies) {
  const ModelSpec m = test::hf_model_as_built(kConfigs + "llama-3.2-1b-instruct.json");
  TrainingSpec t = hf_step(1, 4096, Precision::mixed);
  t.replay = RecomputeReplay::early_stop;
  const LayerDef layer = build_layer(m, rank_shape(t), 0);
  LayerChoice full;
  full.mode = LayerMode::full;
  const HardwareSpec hw = test::hardware("h200");
  const double params = 2.0 * 2048 * 2048 + 2.0 * 2048 * 512 + 3.0 * 2048 * 8192 + 2 * 2048;
  EXPECT_DOUBLE_EQ(stage_layer_cost(m, hw, t, layer, full, 0).forward_held_bytes, 2 * params);
}

// Gemma-4-31B cut to 2 layers (a sliding one: 16 key/value heads of 256; a full one: 16 of 512 with
// keys as values), 2 x 8192 tokens under sdpa, checkpointed: the checkpoints' arguments keep the
// sliding mask (a byte per 8192^2) and shared_kv_states, each layer's keys and values, bf16.
TEST(HfRandomBlind24, Gemma4CheckpointsKeepTheStoredKeysAndValues) {
  ModelSpec m = test::hf_model_as_built(std::string(REMAT_TEST_DATA) +
                                        "/../examples/hf/unseen23/realcfg/gemma-4-31b-ome-testdata.json");
  ASSERT_TRUE(m.stores_last_kv_per_kind);
  m.set_layer_count(2);
  const TrainingSpec t = hf_step(2, 8192, Precision::bf16);
  ASSERT_TRUE(m.layer_is_windowed(0) && !m.layer_is_windowed(1));
  const StageBase s = stage_base(m, test::hardware("h200"), t, rank_shape(t), 0, {0, 2});
  const double tokens = 2.0 * 8192;
  EXPECT_DOUBLE_EQ(s.checkpoint_args_bytes, 8192.0 * 8192 + 2 * tokens * (16 * 256 + 16 * 512) * 2);
}

// Under autocast every forward of a layer casts its fp32 weights to bf16: Llama-3.2-1B's layer (GEMM
// weights as above, its two norms' 4096 counted too), 4 bytes read and 2 written each, at the H200's
// memory rate. A non-reentrant replay casts again; a trained weight's bf16 gradient is cast back.
TEST(HfRandomBlind24, AutocastCastsTakeTimeEachForwardAndReplay) {
  const ModelSpec m = test::hf_model_as_built(kConfigs + "llama-3.2-1b-instruct.json");
  TrainingSpec t = hf_step(1, 4096, Precision::mixed);
  t.replay = RecomputeReplay::early_stop;
  const HardwareSpec hw = test::hardware("h200");
  const double weights = 2.0 * 2048 * 2048 + 2.0 * 2048 * 512 + 3.0 * 2048 * 8192 + 2 * 2048;
  const double cast_s = weights * 6 / (hw.hbm_bytes_per_s * hw.efficiency.memory_bound);
  EXPECT_DOUBLE_EQ(autocast_cast_s(m, hw, t, 0), cast_s);
  const LayerDef layer = build_layer(m, rank_shape(t), 0);
  TrainingSpec uncast = t;
  uncast.params_fp32_autocast = false;
  LayerChoice full;
  full.mode = LayerMode::full;
  const LayerCost with = stage_layer_cost(m, hw, t, layer, full, 0);
  const LayerCost without = stage_layer_cost(m, hw, uncast, layer, full, 0);
  EXPECT_NEAR(with.fwd_s - without.fwd_s, cast_s, 1e-12);
  EXPECT_NEAR(with.recompute_s - without.recompute_s, cast_s, 1e-12);
  EXPECT_NEAR(with.bwd_s - without.bwd_s, cast_s, 1e-12);
}

}  // namespace
}  // namespace remat
