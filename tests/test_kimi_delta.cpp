// Kimi Linear's Kimi Delta Attention (issue 24): its parameters as KimiLinearDeltaAttention builds
// them, the remote code's spelling of its layers, and what transformers' torch fallback saves,
// derived by hand from modeling_kimi_linear.py.
#include <gtest/gtest.h>

#include "remat/cost/block.hpp"
#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/params.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/plan.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

// hidden 64; KDA 4 heads of 16; MLA 4 heads (no query latent, kv latent 32, nope 16, rope 8, v 16);
// 4 experts of 32 with one shared; layer 1 (1-based) KDA with the dense MLP, layer 2 MLA with experts.
const std::string kKimi = R"({"model_type": "kimi_linear", "hidden_size": 64, "intermediate_size": 128,
    "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 100, "num_hidden_layers": 2,
    "kv_lora_rank": 32, "q_lora_rank": null, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16,
    "num_experts": 4, "moe_intermediate_size": 32, "num_experts_per_token": 2, "num_shared_experts": 1,
    "first_k_dense_replace": 1, "linear_attn_config": {"head_dim": 16, "num_heads": 4,
    "short_conv_kernel_size": 4, "full_attn_layers": [2], "kda_layers": [1]}})";

TEST(KimiDelta, ParametersAsKimiLinearBuildsThem) {
  const ModelSpec m = parse_hf_config(kKimi, "k.json");
  EXPECT_EQ(m.layer_mixers, (std::vector<Mixer>{Mixer::gated_deltanet, Mixer::attention}));
  EXPECT_TRUE(m.kimi_delta_attention);
  // q, k, v; f_a, f_b, g_a, g_b; b_proj; o_proj; the conv (3 x 64 channels x 4); dt_bias; A_log; the
  // norm of one head; the input norm
  const double kda = 3 * 64 * 64 + 2 * (64 * 16 + 16 * 64) + 64 * 4 + 64 * 64 + 3 * 64 * 4 + 64 + 4 + 16 + 64;
  // q_proj 64 x 4 x 24, kv_a 64 x (32 + 8), its norm, kv_b 32 x 4 x (16 + 16), o_proj, the input norm
  const double mla = 64 * 96 + 64 * 40 + 32 + 32 * 128 + 64 * 64 + 64;
  const double dense = 3 * 64 * 128 + 64, moe = 4 * 3 * 64 * 32 + 3 * 64 * 32 + 64 * 4 + 64;
  EXPECT_DOUBLE_EQ(layer_params(m, 0, 1, 1).total(), kda + dense);
  EXPECT_DOUBLE_EQ(layer_params(m, 1, 1, 1).total(), mla + moe);
  EXPECT_DOUBLE_EQ(model_params(m, 2), kda + dense + mla + moe + 2 * 100 * 64 + 64);
}

// Kimi K3's checkpoint spells its language model as kimi_linear with constructs remat has no block
// for: latent experts narrower than the hidden width, a gate on MLA's output. Each is refused by name.
TEST(KimiDelta, RefusesLatentExpertsAndGatedLatentAttention) {
  std::string latent = kKimi;
  latent.insert(latent.find("\"num_experts\""), R"("routed_expert_hidden_size": 32, )");
  EXPECT_EQ(test::hf_rejection(latent, "k.json"),
            "k.json: routed_expert_hidden_size: is not a model remat can build: latent MoE (experts narrower than "
            "hidden_size = 64, between two projections) outside Nemotron-H's layout (got 32)");
  std::string gated = kKimi;
  gated.insert(gated.find("\"num_experts\""), R"("mla_use_output_gate": true, )");
  EXPECT_EQ(test::hf_rejection(gated, "k.json"),
            "k.json: mla_use_output_gate: is not a model remat can build: a gate on the latent attention's output; "
            "remat gates softmax attention outputs only (got true)");
  std::string same_width = kKimi;  // the hidden width itself: plain experts
  same_width.insert(same_width.find("\"num_experts\""), R"("routed_expert_hidden_size": 64, )");
  EXPECT_EQ(test::hf_rejection(same_width, "k.json"), "");
}

// transformers' torch fallback over 128 tokens (two chunks of 64): per channel, the decay mask and
// the k k and q k products before the decay multiply, (b, heads, chunks, 64, 64, 16) fp32 each; the
// UT loop's clones of row i and the block above it; each chunk's state (16 x 16 per head).
TEST(KimiDelta, TorchFallbackSavesChunkSquaresPerChannel) {
  const ModelSpec m = parse_hf_config(kKimi, "k.json");
  RankShape r;
  r.b = 1, r.s = 128;
  r.weights_train = true;
  r.mixer_kernels = MixerKernels::torch;
  const Block b = kimi_delta_block(r, m);
  auto bytes = [&b](const std::string& name) {
    for (const auto& t : b.tensors)
      if (t.name == name) return t.bytes;
    return -1.0;
  };
  const double squares = 128 * 64 * 64 * 4.0;  // tokens x channels x chunk, fp32
  EXPECT_DOUBLE_EQ(bytes("decay_mask"), squares);
  EXPECT_DOUBLE_EQ(bytes("kk_products"), squares);
  EXPECT_DOUBLE_EQ(bytes("qk_products"), squares);
  EXPECT_DOUBLE_EQ(bytes("ut_clones"), 4 * 2 * (63 * 64 / 2 + 63 * 64 * 127 / 6) * 4.0);
  EXPECT_DOUBLE_EQ(bytes("chunk_states"), 2 * 4 * 16 * 16 * 4.0);
  EXPECT_DOUBLE_EQ(bytes("conv_out"), 3 * 64 * (128 + 3) * 2.0);
}

}  // namespace
}  // namespace remat
