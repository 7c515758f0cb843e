// Where `exact` and `paper` must coincide: MHA (g = heads), non-causal, no
// sharding, fused SwiGLU. Exact keeps a few small tensors Table 1 leaves out
// (the norms' fp32 1/rms, flash attention's log-sum-exp, the router scores,
// MLA's normed latents); each difference is asserted by hand.
#include <gtest/gtest.h>

#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/paper_formulas.hpp"
#include "remat/spec/plan.hpp"

namespace remat {
namespace {

// b=2 s=8: 16 tokens; h=16; bf16 tensor of width w: 32*w bytes; fp32 per-row: 64 bytes
RankShape shape() {
  RankShape r;
  r.b = 2, r.s = 8, r.causal = false;
  return r;
}

struct Totals {
  double kept = 0, flops = 0;
};

// A module is one or more blocks; glue blocks (Wo) are never recomputed.
Totals totals(const std::vector<Block>& blocks, const std::vector<bool>& recomputable, BlockMode mode) {
  Totals t;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const BlockCost c = block_cost(blocks[i], recomputable[i] ? mode : BlockMode::keep, false);
    t.kept += c.kept_bytes;
    t.flops += c.fwd_flops + c.bwd_flops + c.recompute_flops;
  }
  return t;
}

paper::Dims dims() {
  paper::Dims x;
  x.b = 2, x.s = 8, x.h = 16, x.h1 = 32, x.g = 4, x.d = 4, x.a = 4, x.r = 2, x.h_q = 8, x.h_kv = 6, x.K = 2;
  return x;
}

void expect_module(paper::Module m, const std::vector<Block>& blocks, const std::vector<bool>& rc, const paper::Dims& x,
                   double extra_none, double extra_eagle) {
  const Totals none = totals(blocks, rc, BlockMode::keep), std_ = totals(blocks, rc, BlockMode::standard),
               eagle = totals(blocks, rc, BlockMode::eagle);
  EXPECT_DOUBLE_EQ(none.kept, paper::table1(m, x, paper::Method::none).memory_bytes + extra_none);
  EXPECT_DOUBLE_EQ(std_.kept, paper::table1(m, x, paper::Method::standard).memory_bytes);
  EXPECT_DOUBLE_EQ(eagle.kept, paper::table1(m, x, paper::Method::eagle).memory_bytes + extra_eagle);
  EXPECT_DOUBLE_EQ(none.flops, paper::table1(m, x, paper::Method::none).flops);
  EXPECT_DOUBLE_EQ(std_.flops, paper::table1(m, x, paper::Method::standard).flops);
  EXPECT_DOUBLE_EQ(eagle.flops, paper::table1(m, x, paper::Method::eagle).flops);
}

ModelSpec mha() {
  ModelSpec m;
  m.hidden_size = 16, m.intermediate_size = 32, m.num_attention_heads = 4, m.num_key_value_heads = 4;
  m.head_dim = 4, m.vocab_size = 100, m.num_hidden_layers = 2;
  return m;
}

TEST(ExactVsPaper, RmsnormLinear) {
  const Block b = rmsnorm_linear_block(shape(), 16, 32, "rmsnorm_linear");
  expect_module(paper::Module::rmsnorm_linear, {b}, {true}, dims(), /*rstd*/ 64, 0);
}

TEST(ExactVsPaper, Mlp) {
  const Block b = mlp_block(shape(), 16, 32);
  expect_module(paper::Module::mlp, {b}, {true}, dims(), /*rstd*/ 64, 0);
}

TEST(ExactVsPaper, GqaAsMha) {
  const ModelSpec m = mha();
  const std::vector<Block> blocks = {gqa_block(shape(), m), attention_out_glue(shape(), m)};
  // lse: b * heads * s fp32 = 2*4*8*4 = 256 bytes, kept by none and eagle
  expect_module(paper::Module::gqa, blocks, {true, false}, dims(), 64 + 256, 256);
}

TEST(ExactVsPaper, MoeWithExpertWidthEqualHidden) {
  ModelSpec m = mha();
  m.n_routed_experts = 4, m.num_experts_per_tok = 2, m.moe_intermediate_size = 16, m.n_shared_experts = 1;
  paper::Dims x = dims();
  x.h1 = 16;  // Table 1 prints K h1 where K h-wide copies are kept; with h1 = h they agree
  const std::vector<Block> blocks = {moe_shared_block(shape(), m), moe_routed_block(shape(), m)};
  const Totals none = totals(blocks, {true, true}, BlockMode::keep);
  const Totals std_ = totals(blocks, {true, true}, BlockMode::standard);
  const Totals eagle = totals(blocks, {true, true}, BlockMode::eagle);
  const double router_fwd = 2 * 16 * 16 * 4;  // 2 bs h E = 2048, absent from Table 1
  // memory: + rstd (64) + fp32 router scores (16 rows x 4 experts x 4 = 256)
  EXPECT_DOUBLE_EQ(none.kept, paper::moe(x, paper::Method::none).memory_bytes + 64 + 256);
  EXPECT_DOUBLE_EQ(std_.kept, paper::moe(x, paper::Method::standard).memory_bytes);
  EXPECT_DOUBLE_EQ(eagle.kept, paper::moe(x, paper::Method::eagle).memory_bytes);
  EXPECT_DOUBLE_EQ(none.flops, paper::moe(x, paper::Method::none).flops + 3 * router_fwd);
  EXPECT_DOUBLE_EQ(std_.flops, paper::moe(x, paper::Method::standard).flops + 4 * router_fwd);
  EXPECT_DOUBLE_EQ(eagle.flops, paper::moe(x, paper::Method::eagle).flops + 4 * router_fwd);
}

TEST(ExactVsPaper, Mla) {
  ModelSpec m = mha();
  m.head_dim = 0, m.kv_lora_rank = 6, m.q_lora_rank = 8, m.qk_nope_head_dim = 4, m.qk_rope_head_dim = 2;
  m.v_head_dim = 4;
  const std::vector<Block> blocks = {mla_down_block(shape(), m), mla_up_attn_block(shape(), m),
                                     attention_out_glue(shape(), m)};
  // none extras: 3 rstd (3*64) + normed latents (16*8*2 + 16*6*2 = 448) + lse (256)
  expect_module(paper::Module::mla, blocks, {true, true, false}, dims(), 192 + 448 + 256, 256);
}

TEST(ExactVsPaper, CausalHalvesAttentionFlops) {
  RankShape causal = shape();
  causal.causal = true;
  const ModelSpec m = mha();
  const double full = gqa_block(shape(), m).ops.back().fwd_flops;
  EXPECT_DOUBLE_EQ(gqa_block(causal, m).ops.back().fwd_flops * 2, full);
  EXPECT_DOUBLE_EQ(full, 4.0 * 2 * 8 * 8 * 16);  // 4 b s^2 h
}

TEST(ExactVsPaper, EarlyStopSkipsFinalLinearOnly) {
  const Block mlp = mlp_block(shape(), 16, 32);
  const BlockCost replay = block_cost(mlp, BlockMode::standard, false);
  const BlockCost early = block_cost(mlp, BlockMode::standard, true);
  const BlockCost eagle = block_cost(mlp, BlockMode::eagle, false);
  EXPECT_DOUBLE_EQ(replay.recompute_flops - early.recompute_flops, 2 * 16 * 32 * 16);  // down: 2 bs h1 h
  EXPECT_DOUBLE_EQ(early.recompute_flops, eagle.recompute_flops);
  // attention blocks: early stop still reruns flash forward, eagle does not
  const Block gqa = gqa_block(shape(), mha());
  EXPECT_DOUBLE_EQ(block_cost(gqa, BlockMode::standard, true).recompute_flops,
                   block_cost(gqa, BlockMode::standard, false).recompute_flops);
  EXPECT_LT(block_cost(gqa, BlockMode::eagle, false).recompute_flops,
            block_cost(gqa, BlockMode::standard, true).recompute_flops);
}

}  // namespace
}  // namespace remat
