// What random blind seeds 44-45 found (thirty-sixth session; the sets' own bounds are in
// test_hf_random_blind_late.cpp), read off an allocator trace (reports/hf/peak-traces-h200/
// random-blind44) and checked here by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "hf_measured.hpp"
#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/stage_model.hpp"
#include "remat/spec/framework.hpp"
#include "remat/spec/lora_placement.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

TrainingSpec grpo_step(int64_t sequences, int64_t seq) {
  TrainingSpec t;
  t.mbs = sequences, t.gbs = sequences, t.seq = seq, t.precision = Precision::bf16;
  return apply_framework(t, kHfFramework);
}

const OpDef& op_named(const LayerDef& layer, const std::string& name) {
  for (const Block& b : layer.blocks)
    for (const OpDef& op : b.ops)
      if (op.name == name) return op;
  ADD_FAILURE() << name;
  return layer.blocks.front().ops.front();
}

bool saves(const OpDef& op, const std::string& name) {
  return std::find(op.saves.begin(), op.saves.end(), name) != op.saves.end();
}

const std::string kQwen36 =
    std::string(REMAT_TEST_DATA) + "/../examples/hf/unseen16/realcfg/qwen3.6-35b-a3b-linear-llmservingsim.json";

// transformers' routed experts weigh each output row by its routing weight, and the multiply saves
// the outputs for the weights' gradient alone. Qwen3.6-35B-A3B's first layer under LoRA on
// gate/up/down (its experts adapted, its router not), 4 x 4096 tokens: the router reads the frozen
// input, so the weights need no gradient; the 131,072 routed rows x 2048 bf16 outputs (512 MiB) are
// not saved, and the multiply's backward holds two such gradients, not three. An adapter on the
// router gives the weights a gradient again.
TEST(HfRandomBlind44, FrozenRouterSavesNoRoutedOutputs) {
  const ModelSpec m = test::hf_model_as_built(kQwen36);
  TrainingSpec t = grpo_step(4, 4096);
  t.lora_rank = 16;
  t.lora_targets = resolve_lora_targets(m, {"gate_proj", "up_proj", "down_proj"}).targets;
  const LayerDef built = build_layer(m, rank_shape(t), 0);
  const double outputs = 4.0 * 4096 * 8 * 2048 * 2;
  const OpDef& later = op_named(built, "experts_probs_out");
  EXPECT_TRUE(saves(later, "experts_out"));
  EXPECT_DOUBLE_EQ(later.working_bytes, 3 * outputs);

  const LayerDef first = frozen_prefix_layer(built, false, t);
  const OpDef& weighed = op_named(first, "experts_probs_out");
  EXPECT_FALSE(saves(weighed, "experts_out"));
  EXPECT_DOUBLE_EQ(weighed.working_bytes, 2 * outputs);

  t.lora_targets = resolve_lora_targets(m, {"gate_proj", "up_proj", "down_proj", "router"}).targets;
  const LayerDef routed = frozen_prefix_layer(build_layer(m, rank_shape(t), 0), false, t);
  EXPECT_TRUE(saves(op_named(routed, "experts_probs_out"), "experts_out"));
}

// The step as measured: +2.92% while the outputs were counted, its peak at the head's backward with the
// layer's saved tensors alive beside the logits and their four log-softmaxes.
TEST(HfRandomBlind44, MeasuredFirstLayerExpertAdapters) {
  int found = 0;
  for (const HfComparison& c : test::measured_hf_steps("steps-random-blind44-h200.jsonl", "h200"))
    if (c.measured.case_name == "rb44-24-qwen3.6-35b-a3b-linear-llmservin-none") {
      ++found;
      EXPECT_NEAR(c.peak_error_pct(), -0.02, 0.1);
    }
  EXPECT_GE(found, 1);
}

}  // namespace
}  // namespace remat
