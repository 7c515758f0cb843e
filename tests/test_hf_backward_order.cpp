// PyTorch's autograd frees what a node saved as soon as that node's backward ends, and runs the later
// branch of a sum first. Under --framework hf a layer's backward working set is priced that way
// (LayerDef::pytorch_autograd, Block::branch_grad_bytes): Qwen3-32B's GRPO at 4 x 12k went from
// +3.65% to -0.02% (the down projection's input freed before the SwiGLU's gradients), Mixtral-8x22B's
// LoRA DPO from +1.18% to -0.03% (the experts' outputs freed by the routing weights' product) and
// GLM-4.5's reentrant GRPO to -0.02% (the shared experts' backward before the routed ones'),
// each read off an allocator trace (reports/hf/peak-traces-h200/unseen11).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/layer_cost.hpp"
#include "remat/io/spec_loader.hpp"
#include "remat/spec/framework.hpp"
#include "remat/spec/lora_placement.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

ModelSpec corpus_model(const std::string& name, std::string_view framework) {
  const std::string file = std::string(REMAT_TEST_DATA) + "/data/hf_configs/" + name;
  return model_as_built(parse_hf_config(test::read_text(file), file), framework);
}

TrainingSpec hf_step(int64_t mbs, int64_t seq) {
  TrainingSpec t;
  t.mbs = mbs, t.gbs = mbs, t.seq = seq, t.precision = Precision::bf16;
  return apply_framework(t, kHfFramework);
}

double all_saved(const LayerDef& layer) {
  double bytes = 0;
  for (const Block& b : layer.blocks) bytes += saved_bytes(b);
  return bytes;
}

double checkpointed_transient(const LayerDef& layer, bool early_stop) {
  LayerChoice full;
  full.mode = LayerMode::full;
  return layer_cost(layer, full, early_stop, HardwareSpec{}).transient_bytes;
}

// Qwen3-32B, 4 x 12288 tokens (h 5120, f 25600), full fine-tuning, non-reentrant: the layer's
// backward peaks in its SwiGLU's, after the down projection's backward freed that projection's input
// (one f-wide row per token) and wrote its weight's gradient. Beside everything the replay saved
// (the layer input, kept, is not among them: the norm saves its fp32 copy) and the output's gradient:
// 3 f-wide gradients less the freed input, plus f x h bf16 of weight gradient.
TEST(HfBackwardOrder, SwigluGradientsAfterTheDownProjectionFreedItsInput) {
  const ModelSpec m = corpus_model("qwen3-32b.json", kHfFramework);
  const LayerDef layer = build_layer(m, rank_shape(hf_step(4, 12288)), 0);
  ASSERT_TRUE(layer.pytorch_autograd);
  const double tokens = 4.0 * 12288, ffn_row = tokens * 25600 * 2, down_grad = 25600.0 * 5120 * 2;
  const double output_grad = tokens * 5120 * 2;
  EXPECT_NEAR(checkpointed_transient(layer, true) - all_saved(layer), 2 * ffn_row + down_grad + output_grad, 1);
  LayerDef in_any_order = layer;
  in_any_order.pytorch_autograd = false;  // nor the output's gradient held through the layer
  EXPECT_NEAR(checkpointed_transient(layer, true) - checkpointed_transient(in_any_order, true),
              down_grad - ffn_row + output_grad, 1);
}

// Mixtral-8x22B with LoRA on q and v (the experts frozen), one 12288-token sequence, reentrant: the
// SwiGLU's three gradients over the routed rows (top 2: 24576 rows of f 16384) sit on what the
// routing weights' product left, its saved outputs (rows x h 6144) freed; the combine's saved
// probabilities come after it; the output's gradient and the replay's output beside.
TEST(HfBackwardOrder, RoutedSwigluAfterTheWeightsProductFreedTheOutputs) {
  const ModelSpec m = corpus_model("mixtral-8x22b-v0.1.json", kHfFramework);
  TrainingSpec t = hf_step(1, 12288);
  t.lora_rank = 8;
  t.lora_targets = resolve_lora_targets(m, {"q_proj", "v_proj"}).targets;
  const LayerDef layer = build_layer(m, rank_shape(t), 1);
  const auto combine =
      std::find_if(layer.blocks.begin(), layer.blocks.end(), [](const Block& b) { return b.name == "moe.combine"; });
  ASSERT_NE(combine, layer.blocks.end());
  const double rows = 12288.0 * 2, input = 12288.0 * 6144 * 2;
  const double expected = 3 * rows * 16384 * 2 - rows * 6144 * 2 - saved_bytes(*combine) + 2 * input;
  EXPECT_NEAR(checkpointed_transient(layer, false) - all_saved(layer), expected, 1);
}

// StarCoder2-7B under autocast (fp32 parameters, --precision mixed), LoRA with dropout on q, k, v, o and
// c_proj, 2 x 6144 tokens, non-reentrant. The replay starts in c_proj's adapter backward: beside the
// layer output's fp32 gradient, the residual add's bf16 cast of it and the scaling's bf16 gradient
// (the adapters run in bf16 there; peak-traces-h200/unseen10/sc2nodrop-lora-nr-do0.1-mixed-dpo holds
// one fp32 and two bf16 tensors of the layer's width). Priced as fp32 adapters outside autocast (an
// fp32 gradient and a bf16 cast on top), the step was +3.3%; now -1.0%.
TEST(HfBackwardOrder, AutocastAdaptersStartTheReplayOnBf16Gradients) {
  const ModelSpec m = corpus_model("starcoder2-7b.json", kHfFramework);
  TrainingSpec t;
  t.mbs = 2, t.gbs = 2, t.seq = 6144, t.precision = Precision::mixed;
  t = apply_framework(t, kHfFramework);
  t.lora_rank = 16, t.lora_dropout = 0.1;
  t.lora_targets = resolve_lora_targets(m, {"q_proj", "k_proj", "v_proj", "o_proj", "c_proj"}).targets;
  const LayerDef layer = build_layer(m, rank_shape(t), 1);
  const double width_bf16 = 2.0 * 6144 * 4608 * 2;
  EXPECT_DOUBLE_EQ(layer.branch_grad_cast_bytes, width_bf16);
  EXPECT_DOUBLE_EQ(layer.input_bytes, 2 * width_bf16);  // the fp32 stream
  LayerDef outside_autocast = layer;
  outside_autocast.branch_grad_cast_bytes = 0;
  // fp32 adapters outside autocast: + 3 input widths; under it: + 2 bf16 widths (one input width)
  EXPECT_NEAR(checkpointed_transient(outside_autocast, true) - checkpointed_transient(layer, true),
              2 * layer.input_bytes, 1);
}

// GLM-4.5 runs DeepSeek's MoE forward: its shared expert after the routed ones, so under hf it is a
// block of its own after them, leaving its input's gradient (a bf16 hidden row per token) alive
// until the routed experts' joins it. Other profiles keep the shared expert in the router's block.
TEST(HfBackwardOrder, DeepseekSharedExpertsRunAfterTheRoutedOnes) {
  ModelSpec m = corpus_model("glm-4.5.json", kHfFramework);
  m.num_hidden_layers = 4;
  ASSERT_TRUE(m.shared_experts_after_routed());
  const LayerDef layer = build_layer(m, rank_shape(hf_step(1, 1024)), 3);
  std::vector<std::string> names;
  for (const Block& b : layer.blocks) names.push_back(b.name);
  const std::vector<std::string> expected = {"gqa",        "attn.out",           "moe.shared", "moe.dispatch",
                                             "moe.routed", "moe.shared_experts", "moe.combine"};
  EXPECT_EQ(names, expected);
  EXPECT_DOUBLE_EQ(layer.blocks[5].branch_grad_bytes, 1024.0 * 5120 * 2);
  for (const OpDef& op : layer.blocks[2].ops) EXPECT_FALSE(op.name.starts_with("shared_")) << op.name;

  ModelSpec generic = corpus_model("glm-4.5.json", "generic");
  generic.num_hidden_layers = 4;
  TrainingSpec t;
  t.mbs = 1, t.gbs = 1, t.seq = 1024;
  const LayerDef megatron_like = build_layer(generic, rank_shape(t), 3);
  EXPECT_TRUE(std::none_of(megatron_like.blocks.begin(), megatron_like.blocks.end(),
                           [](const Block& b) { return b.name == "moe.shared_experts"; }));
  EXPECT_FALSE(megatron_like.pytorch_autograd);
}

}  // namespace
}  // namespace remat
