// Attention layers that differ from LLaMA's in shape (issue 24): value heads narrower than the query
// and key heads (MiMo-V2-Flash), a softplus gate per head on the attention output (Laguna), and norms
// inside the attention and the MLP (BitNet's sub-norms).
// Their saved bytes and FLOPs, derived by hand from the models' transformers code.
#include <gtest/gtest.h>

#include "remat/cost/block.hpp"
#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/params.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/plan.hpp"

namespace remat {
namespace {

ModelSpec small_gqa() {
  ModelSpec m;
  m.hidden_size = 64, m.num_attention_heads = 4, m.num_key_value_heads = 2, m.head_dim = 24;
  m.intermediate_size = 128, m.vocab_size = 100, m.num_hidden_layers = 2;
  return m;
}

RankShape flash_rank(double s) {
  RankShape r;
  r.b = 1, r.s = s;
  r.flash_attention = true;
  return r;
}

const TensorDef* find(const Block& b, const std::string& name) {
  for (const auto& t : b.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

double flops_of(const Block& b, const std::string& op_name) {
  for (const auto& op : b.ops)
    if (op.name == op_name) return op.fwd_flops;
  return -1;
}

// MiMo-V2-Flash: v, the attention output and Wo are heads x 16 wide where q and k are x 24; the
// attention's PV product runs over the value width.
TEST(AttentionShapes, NarrowValueHeads) {
  ModelSpec m = small_gqa();
  m.value_head_dim = 16;
  const double s = 128;
  const Block b = gqa_block(flash_rank(s), m);
  ASSERT_NE(find(b, "v"), nullptr);
  EXPECT_DOUBLE_EQ(find(b, "q")->bytes, s * 4 * 24 * 2);
  EXPECT_DOUBLE_EQ(find(b, "k")->bytes, s * 2 * 24 * 2);
  EXPECT_DOUBLE_EQ(find(b, "v")->bytes, s * 2 * 16 * 2);
  EXPECT_DOUBLE_EQ(find(b, "o")->bytes, s * 4 * 16 * 2);
  EXPECT_DOUBLE_EQ(flops_of(b, "qkv"), 2 * s * 64 * (4 * 24 + 2 * 24 + 2 * 16));
  // causal QK^T (d 24) and PV (d 16): 2 s^2 heads d each, half under the mask
  EXPECT_DOUBLE_EQ(flops_of(b, "flash_attention"), 0.5 * 2 * s * s * 4 * (24 + 16));
  EXPECT_DOUBLE_EQ(flops_of(attention_out_glue(flash_rank(s), m), "wo"), 2 * s * 4 * 16 * 64);
}

// Laguna: g_proj (hidden -> heads) joins the projections; softplus over its fp32 copy saves that
// copy, the product saves the bf16 gate and o, and Wo saves the product.
TEST(AttentionShapes, SoftplusGatePerHead) {
  ModelSpec m = small_gqa();
  const double s = 128;
  const RankShape r = flash_rank(s);
  const Block plain = gqa_block(r, m);
  m.attention_head_gate = true;
  const Block gated = gqa_block(r, m);
  EXPECT_DOUBLE_EQ(flops_of(gated, "qkv") - flops_of(plain, "qkv"), 2 * s * 64 * 4);
  EXPECT_DOUBLE_EQ(saved_bytes(gated) - saved_bytes(plain), s * 4 * 4.0 + s * 4 * 2.0 + s * 4 * 24 * 2.0);
  // o_gated (Wo's input) stays beside the block's input under recompute
  const double x = s * 64 * 2;
  EXPECT_DOUBLE_EQ(block_cost(gated, BlockMode::standard, false).kept_bytes, x + s * 4 * 24 * 2);
}

// BitNet: an RMSNorm on o before Wo and on the MLP's activation before down. Under the model's own
// code (hf's fp32 upcast, bf16 weights that train) each saves its input's fp32 copy, 1/rms and the
// normed product, and the GEMM after it saves its bf16 output. Parameters: one norm weight each.
TEST(AttentionShapes, BitNetSubNorms) {
  ModelSpec m = small_gqa();
  const double s = 128;
  RankShape r = flash_rank(s);
  r.norm_fp32_upcast = true;
  r.weights_train = true;
  const Block plain_attention = gqa_block(r, m), plain_mlp = dense_mlp_block(r, m);
  m.sub_norms = true;
  const Block attention = gqa_block(r, m), mlp = dense_mlp_block(r, m);
  const double o = s * 4 * 24, act = s * 128;  // elements
  EXPECT_DOUBLE_EQ(saved_bytes(attention) - saved_bytes(plain_attention), o * (4 + 2 + 2) + s * 4);
  EXPECT_DOUBLE_EQ(saved_bytes(mlp) - saved_bytes(plain_mlp), act * (4 + 2 + 2) + s * 4 - act * 2);
  EXPECT_DOUBLE_EQ(block_cost(attention, BlockMode::standard, false).kept_bytes, s * 64 * 2 + o * 2);
  EXPECT_DOUBLE_EQ(layer_params(m, 0, 1, 1).total() - layer_params(small_gqa(), 0, 1, 1).total(), 4 * 24 + 128);
}

}  // namespace
}  // namespace remat
