// MiniMax-01's lightning attention (issue 24): its parameters, and the tensors transformers'
// block-by-block PyTorch (MiniMaxLightningAttention.forward) saves for backward, derived by hand.
#include <gtest/gtest.h>

#include "remat/cost/block.hpp"
#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/params.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/plan.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const TensorDef* find(const Block& b, const std::string& name) {
  for (const auto& t : b.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

// hidden 64, 4 heads of 16 (64 wide), blocks of 8 tokens, 20 tokens: two full blocks and one of 4.
ModelSpec small_lightning() {
  ModelSpec m;
  m.hidden_size = 64, m.num_attention_heads = 4, m.num_key_value_heads = 2, m.head_dim = 16;
  m.intermediate_size = 128, m.vocab_size = 100, m.num_hidden_layers = 2;
  m.lightning_block_size = 8;
  m.layer_mixers = {Mixer::lightning, Mixer::attention};
  return m;
}

TEST(Lightning, SavedTensorsPerBlockAndToken) {
  RankShape r;
  r.b = 1, r.s = 20;
  r.weights_train = true;
  const Block b = lightning_block(r, small_lightning());
  const double rows = 20, width = 64;
  EXPECT_DOUBLE_EQ(find(b, "qkv_pre")->bytes, rows * 3 * width * 2);  // SiLU's input
  EXPECT_DOUBLE_EQ(find(b, "qkv")->bytes, rows * 3 * width * 2);      // q, k, v views
  // (q k^T) x decay per block and head: 8 x 8 twice, 4 x 4 once
  EXPECT_DOUBLE_EQ(find(b, "block_scores")->bytes, 4 * (2 * 64 + 16) * 2);
  EXPECT_DOUBLE_EQ(find(b, "q_decayed")->bytes, rows * width * 2);
  EXPECT_DOUBLE_EQ(find(b, "k_decayed")->bytes, rows * width * 2);
  EXPECT_DOUBLE_EQ(find(b, "block_states")->bytes, 3 * 4 * 16 * 16 * 2);  // the state each block read
  EXPECT_DOUBLE_EQ(find(b, "o_fp32")->bytes, rows * width * 4);
  EXPECT_DOUBLE_EQ(find(b, "o_rstd")->bytes, rows * 4);
  EXPECT_DOUBLE_EQ(find(b, "gate_sigmoid")->bytes, rows * width * 2);
  EXPECT_DOUBLE_EQ(find(b, "gated")->bytes, rows * width * 2);
  const auto kept = block_cost(b, BlockMode::keep, true).kept_bytes;
  // the input norm's x, rstd and x_norm (read by qkv_proj and output_gate) besides the above, and
  // the normed product and the weighted output (the norm's weight trains)
  const double norm_in = rows * 64 * 2 + rows * 4 + rows * 64 * 2;
  const double mixer = 2 * rows * 3 * width * 2 + 4 * 144 * 2 + 2 * rows * width * 2 + 3 * 4 * 256 * 2 +
                       rows * width * 4 + rows * 4 + 4 * rows * width * 2;
  EXPECT_NEAR(kept, norm_in + mixer, 64 * 4 + 1);  // the norm's mean (fp32 per row) where it keeps one
}

// qkv_proj (64 x 192), output_gate (64 x 64), out_proj (64 x 64), the output RMSNorm (64) and the
// layer's input norm (64); the attention layer beside it is LLaMA's.
TEST(Lightning, LayerParameters) {
  const ModelSpec m = small_lightning();
  const double mlp = 3 * 64 * 128 + 64;
  EXPECT_DOUBLE_EQ(layer_params(m, 0, 1, 1).total(), 5 * 64 * 64 + 64 + 64 + mlp);
  EXPECT_DOUBLE_EQ(layer_params(m, 1, 1, 1).total(), 2 * 64 * 64 + 2 * 64 * 32 + 64 + mlp);
}

// The checkpoints' remote code (attn_type_list: 0 lightning, 1 softmax; rotary_dim) and
// transformers' spelling (layer_types) build the same model; MiniMaxConfig's default alternates.
TEST(Lightning, MiniMaxSpellings) {
  const std::string base = R"({"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
      "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100, "num_hidden_layers": 3, "num_local_experts": 4,
      "num_experts_per_tok": 2, "block_size": 8, )";
  const ModelSpec hf = parse_hf_config(
      base + R"("model_type": "minimax", "layer_types": ["linear_attention", "linear_attention", "full_attention"]})",
      "m.json");
  const ModelSpec remote = parse_hf_config(
      base + R"("model_type": "minimax_text_01", "attn_type_list": [0, 0, 1], "rotary_dim": 8})", "m.json");
  const std::vector<Mixer> expected = {Mixer::lightning, Mixer::lightning, Mixer::attention};
  EXPECT_EQ(hf.layer_mixers, expected);
  EXPECT_EQ(remote.layer_mixers, expected);
  EXPECT_DOUBLE_EQ(remote.rotary_fraction, 0.5);
  EXPECT_EQ(hf.lightning_block_size, 8);
  EXPECT_EQ(model_params(hf, 3), model_params(remote, 3));
  const ModelSpec defaults = parse_hf_config(base + R"("model_type": "minimax"})", "m.json");
  EXPECT_EQ(defaults.layer_mixers, (std::vector<Mixer>{Mixer::attention, Mixer::lightning, Mixer::attention}));
  EXPECT_EQ(test::hf_rejection(base + R"("model_type": "minimax", "shared_intermediate_size": 256})", "m.json"),
            "m.json: shared_intermediate_size: is not a model remat can build: a shared expert beside MiniMax-01's "
            "routed ones (transformers builds none) (got 256)");
  EXPECT_EQ(test::hf_rejection(base + R"("model_type": "minimax", "attn_type_list": [0, 1]})", "m.json"),
            "m.json: attn_type_list: must name each of num_hidden_layers = 3 layers (got 2 entries)");
}

}  // namespace
}  // namespace remat
