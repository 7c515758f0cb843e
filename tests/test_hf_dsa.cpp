// DeepSeek sparse attention (DeepSeek-V3.2's and GLM-5's DSA): the indexer's weights as
// DeepseekV32Indexer builds them, GLM-5's shared-indexer layers, the FLOPs of attention over the
// top-k keys, and what transformers' no_grad indexer holds (its measured steps: test_hf_profile.cpp).
#include <gtest/gtest.h>

#include <string>

#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/op_time.hpp"
#include "remat/cost/params.hpp"
#include "remat/spec/framework.hpp"
#include "remat/spec/validate.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

// h 64, 4 heads; query latent 32, kv latent 16, nope 16 + rope 8, v 16; two dense layers.
const std::string kMla = R"("hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
    "vocab_size": 100, "num_hidden_layers": 4, "q_lora_rank": 32, "kv_lora_rank": 16, "qk_nope_head_dim": 16,
    "qk_rope_head_dim": 8, "v_head_dim": 16, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "moe_intermediate_size": 32, "first_k_dense_replace": 4)";
const std::string kIndexer = R"(, "index_n_heads": 2, "index_head_dim": 16, "index_topk": 64)";

ModelSpec load(const std::string& type, const std::string& extra = "") {
  return parse_hf_config("{\"model_type\": \"" + type + "\", " + kMla + extra + "}", "d.json");
}

// wq_b 32 x (2 x 16), wk 64 x 16, k_norm's weight and bias (16 each), weights_proj 64 x 2.
TEST(HfDsa, IndexerWeightsByHand) {
  const ModelSpec dense = load("deepseek_v3"), sparse = load("deepseek_v32", kIndexer);
  const double indexer = 32 * 2 * 16 + 64 * 16 + 2 * 16 + 64 * 2.0;
  EXPECT_TRUE(sparse.sparse_attention());
  EXPECT_DOUBLE_EQ(indexer_params(sparse, 0), indexer);
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_DOUBLE_EQ(layer_params(sparse, i, 1, 1).total() - layer_params(dense, i, 1, 1).total(), indexer);
  // transformers' defaults where the keys are absent: 64 heads of 128 (V3.2), 32 heads (GLM-5), top 2048
  const ModelSpec defaults = load("deepseek_v32");
  EXPECT_EQ(defaults.index_n_heads, 64);
  EXPECT_EQ(defaults.index_head_dim, 128);
  EXPECT_EQ(defaults.index_topk, 2048);
  EXPECT_EQ(load("glm_moe_dsa").index_n_heads, 32);
}

// GlmMoeDsaConfig: indexer_types, else index_topk_pattern, else every layer i with
// max(i - offset + 1, 0) % freq == 0 runs its own indexer (freq 1, offset 2 by default).
TEST(HfDsa, GlmSharedIndexerLayers) {
  const ModelSpec listed = load("glm_moe_dsa", R"(, "indexer_types": ["full", "shared", "full", "shared"])");
  EXPECT_TRUE(listed.layer_has_indexer(0));
  EXPECT_FALSE(listed.layer_has_indexer(1));
  EXPECT_DOUBLE_EQ(indexer_params(listed, 1), 0);
  EXPECT_DOUBLE_EQ(indexer_params(listed, 2), indexer_params(listed, 0));
  EXPECT_EQ(listed.notes.back().find("indexer_types: 2 of 4 layers reuse"), 0u) << listed.notes.back();
  const ModelSpec pattern = load("glm_moe_dsa", R"(, "index_topk_pattern": "FFSF")");
  EXPECT_EQ(pattern.indexer_shared_layers, (std::vector<bool>{false, false, true, false}));
  const ModelSpec every = load("glm_moe_dsa");
  EXPECT_EQ(every.indexer_shared_layers, (std::vector<bool>(4, false)));
  // freq 2, offset 2: max(i - 1, 0) % 2 -> 0, 0, 1, 0
  const ModelSpec freq = load("glm_moe_dsa", R"(, "index_topk_freq": 2)");
  EXPECT_EQ(freq.indexer_shared_layers, (std::vector<bool>{false, false, true, false}));
}

TEST(HfDsa, RefusalsNameKeyAndConstruct) {
  const auto rejection = [](const std::string& type, const std::string& extra) {
    return test::hf_rejection("{\"model_type\": \"" + type + "\", " + kMla + extra + "}", "d.json");
  };
  EXPECT_NE(rejection("deepseek_v3", kIndexer).find("index_n_heads"), std::string::npos);
  EXPECT_NE(rejection("deepseek_v3", kIndexer).find("DeepSeek sparse attention"), std::string::npos);
  EXPECT_NE(rejection("glm_moe_dsa", R"(, "indexer_types": ["shared", "full", "full", "full"])").find("first layer"),
            std::string::npos);
  EXPECT_NE(rejection("glm_moe_dsa", R"(, "indexer_types": ["full", "full"])").find("num_hidden_layers = 4"),
            std::string::npos);
  EXPECT_NE(rejection("deepseek_v32", R"(, "q_lora_rank": null)").find("q_lora_rank"), std::string::npos);
  // megatron-local's DSA (indexer loss, its kernels) is not modelled: refused, not priced as dense MLA
  TrainingSpec t = apply_framework(TrainingSpec{}, "megatron-local");
  t.tp = t.pp = t.dp = 1;
  const auto problems = validate_training(t, load("deepseek_v32", kIndexer));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].key, "--framework");
}

const OpDef& op_named(const Block& b, const std::string& name) {
  for (const OpDef& op : b.ops)
    if (op.name == name) return op;
  ADD_FAILURE() << "no op " << name;
  return b.ops.front();
}

// Attention over the top-k keys: at s = 256 with k = 64, the first 64 queries read 32 keys on
// average and the other 192 read 64: (64^2 / 2 + 192 x 64) / 256 = 56 keys a query. Up to s = k
// the causal half, as dense MLA.
TEST(HfDsa, AttentionFlopsOverTheTopKeys) {
  const ModelSpec m = load("deepseek_v32", kIndexer);
  RankShape r;
  r.s = 256;
  const Block up = mla_up_attn_block(r, m);
  const double qk = 16 + 8, v = 16;
  EXPECT_DOUBLE_EQ(op_named(up, "flash_attention").fwd_flops, 2 * 256 * 56 * 4 * (qk + v));
  r.s = 64;
  EXPECT_DOUBLE_EQ(op_named(mla_up_attn_block(r, m), "flash_attention").fwd_flops, 2 * 64 * 32 * 4 * (qk + v));
  // the fused indexer: causal ReLU scores of 2 heads x 16, its q, k, weights and top-k indices saved
  EXPECT_DOUBLE_EQ(op_named(up, "indexer_scores").fwd_flops, 2 * 256 * 128 * 2 * 16.0);
  EXPECT_DOUBLE_EQ(up.tensor_bytes("index_topk"), 256 * 64 * 4.0);
}

// transformers: the indexer under no_grad saves nothing and runs no backward; its peak holds two
// fp32 score tensors of b s x heads x s; sdpa saves the top-k mask as a bf16 s x s bias per layer,
// and computes the whole square. With two sequences torch.matmul first copies k (16 wide) to every
// query, alive with one score tensor; under autocast the product and that copy are bf16.
TEST(HfDsa, TransformersIndexerSavesNothing) {
  const ModelSpec m = load("deepseek_v32", kIndexer);
  TrainingSpec bf16;
  bf16.precision = Precision::bf16;
  RankShape r = rank_shape(apply_framework(bf16, "hf"));
  r.s = 256, r.b = 1;
  const Block up = mla_up_attn_block(r, m);
  const OpDef& scores = op_named(up, "indexer_scores");
  EXPECT_TRUE(scores.forward_only);
  EXPECT_TRUE(scores.saves.empty());
  const double q_copies = 4 * 256 * 2 * 16 * 2.0, pairs = 256 * 256;
  EXPECT_DOUBLE_EQ(scores.working_bytes, q_copies + 2 * pairs * 2 * 4.0);
  r.b = 2;
  EXPECT_DOUBLE_EQ(op_named(mla_up_attn_block(r, m), "indexer_scores").working_bytes,
                   2 * q_copies + 2 * pairs * 2 * 4.0 + 2 * pairs * 16 * 4.0);
  RankShape autocast = rank_shape(apply_framework(TrainingSpec{}, "hf"));
  autocast.s = 256, autocast.b = 1;
  ASSERT_TRUE(autocast.autocast);
  EXPECT_DOUBLE_EQ(op_named(mla_up_attn_block(autocast, m), "indexer_scores").working_bytes,
                   q_copies + 2 * pairs * 2 * 2.0);
  EXPECT_DOUBLE_EQ(up.tensor_bytes("dsa_mask"), 256 * 256 * 2.0);
  EXPECT_DOUBLE_EQ(op_named(up, "flash_attention").fwd_flops, 2 * 256 * 256 * 4 * (24 + 16.0));
  EXPECT_TRUE(op_named(up, "flash_attention").dense_mask);  // priced at sdpa's masked rate
  EXPECT_TRUE(scores.fp32_compute_bound);                   // fp32, not bf16 under autocast
  EXPECT_FALSE(op_named(mla_up_attn_block(autocast, m), "indexer_scores").fp32_compute_bound);
  const OpTime t = op_time(scores, test::hardware("h200"));
  EXPECT_GT(t.fwd_s, 0);
  EXPECT_EQ(t.bwd_s, 0);
}

}  // namespace
}  // namespace remat
