// LFM2 and LFM2-MoE (Liquid): gated short-convolution layers beside attention layers, LFM2's MLP
// width rule, and the short convolution's saved tensors as transformers 5.17's Lfm2ShortConv keeps
// them (its plain-PyTorch conv fallback and the fused causal_conv1d kernel).
#include <gtest/gtest.h>

#include <string>

#include "remat/cost/block.hpp"
#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/params.hpp"
#include "remat/spec/framework.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

std::string rejection(const std::string& text) { return test::hf_rejection(text, "l.json"); }

ModelSpec load_example(const std::string& path) {
  return parse_hf_config(test::read_text(std::string(REMAT_TEST_DATA) + "/../" + path), path);
}

// h 64, 4 heads of 16 (2 kv heads), intermediate 96 -> int(2/3 x 96) = 64, vocab 100, tied.
const std::string kTiny = R"({"model_type": "lfm2", "hidden_size": 64, "intermediate_size": 96,
    "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100, "num_hidden_layers": 3,
    "block_multiple_of": 32)";

// Lfm2ShortConv: in_proj 64 x 192, conv1d 64 x 3, out_proj 64 x 64; Lfm2Attention: q 64 x 64,
// k and v 64 x 32, out_proj 64 x 64, q/k RMSNorms of 16; Lfm2MLP w1, w3, w2 of 64; two norms a layer.
TEST(HfLfm2, ShortConvolutionAndAttentionLayersByHand) {
  const ModelSpec m = parse_hf_config(kTiny + R"(, "layer_types": ["conv", "full_attention", "conv"]})", "l.json");
  EXPECT_EQ(m.mixer(0), Mixer::short_conv);
  EXPECT_EQ(m.mixer(1), Mixer::attention);
  EXPECT_EQ(m.layer_kind(0), kShortConvKinds);
  EXPECT_EQ(m.intermediate_size, 64);
  const double mlp = 3 * 64 * 64.0, norms = 2 * 64;
  const double conv = 64 * 192 + 64 * 3 + 64 * 64.0, attention = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 2 * 16.0;
  EXPECT_DOUBLE_EQ(layer_params(m, 0, 1, 1).total(), conv + mlp + norms);
  EXPECT_DOUBLE_EQ(layer_params(m, 1, 1, 1).total(), attention + mlp + norms);
  EXPECT_DOUBLE_EQ(model_params(m, 3), 2 * (conv + mlp + norms) + attention + mlp + norms + 100 * 64 + 64);
  // conv_bias: in_proj 192, conv 64 and out_proj 64 biases
  const ModelSpec biased =
      parse_hf_config(kTiny + R"(, "conv_bias": true, "layer_types": ["conv", "full_attention", "conv"]})", "l.json");
  EXPECT_DOUBLE_EQ(layer_params(biased, 0, 1, 1).total() - layer_params(m, 0, 1, 1).total(), 192 + 64 + 64);
}

// Lfm2Config: without layer_types, full_attn_idxs names the attention layers, and absent too every
// layer is attention; block_ff_dim is the MLP size where given; the width rule in its three forms.
TEST(HfLfm2, LayerListsAndTheMlpWidthRule) {
  const ModelSpec listed = parse_hf_config(kTiny + R"(, "full_attn_idxs": [2]})", "l.json");
  EXPECT_EQ(listed.mixer(0), Mixer::short_conv);
  EXPECT_EQ(listed.mixer(1), Mixer::short_conv);
  EXPECT_EQ(listed.mixer(2), Mixer::attention);
  const ModelSpec all_attention = parse_hf_config(kTiny + "}", "l.json");
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(all_attention.mixer(i), Mixer::attention) << i;
  // 2/3 of block_ff_dim 144 is 96, rounded up to a multiple of 32: 96; with multiplier 1.5: 144 -> 160
  EXPECT_EQ(parse_hf_config(kTiny + R"(, "block_ff_dim": 144})", "l.json").intermediate_size, 96);
  EXPECT_EQ(parse_hf_config(kTiny + R"(, "block_ffn_dim_multiplier": 1.5})", "l.json").intermediate_size, 96);
  EXPECT_EQ(parse_hf_config(kTiny + R"(, "block_ff_dim": 100, "block_ffn_dim_multiplier": null})", "l.json")
                .intermediate_size,
            66);  // int(200 / 3), no rounding
  EXPECT_EQ(parse_hf_config(kTiny + R"(, "block_auto_adjust_ff_dim": false})", "l.json").intermediate_size, 96);
  EXPECT_EQ(rejection(kTiny + R"(, "layer_types": ["conv", "sliding_attention", "conv"]})"),
            "l.json: layer_types: must hold only \"conv\" and \"full_attention\" (got sliding_attention)");
  EXPECT_EQ(rejection(kTiny + R"(, "conv_L_cache": 0})"), "l.json: conv_L_cache: must be between 1 and 100000 (got 0)");
}

// examples/hf/lfm2/lfm2-moe-6l.json, counted by transformers 5.17 on the H200
// (reports/hf/steps-lfm2-h200.jsonl "params"): 1,719,978,240. By hand: conv mixers 16,785,408 (norm
// included), attention 10,487,936, the first two layers' MLPs of 7168 44,042,240, MoE layers (router
// 32 x 2048, 32 experts of 1792, norm) 352,389,120, tied embedding 134,217,728 and the final norm.
TEST(HfLfm2, MoeCountAsTransformersBuildsIt) {
  const ModelSpec m = load_example("examples/hf/lfm2/lfm2-moe-6l.json");
  EXPECT_EQ(m.first_k_dense_replace, 2);
  EXPECT_FALSE(m.layer_is_moe(1));
  EXPECT_TRUE(m.layer_is_moe(2));
  EXPECT_EQ(m.n_shared_experts, 0);
  EXPECT_DOUBLE_EQ(model_params(m, 6),
                   4 * 16785408.0 + 2 * 10487936.0 + 2 * 44042240.0 + 4 * 352389120.0 + 134217728 + 2048);
  EXPECT_DOUBLE_EQ(model_params(m, 6), 1719978240.0);
}

// The short convolution's saves at seq 4096, h 2048 (LFM2-1.2B), bf16: in_proj's output (B, C, x:
// 3h), B x (the conv's input), the conv output (the fallback's kernel - 1 = 2 rows longer) and the
// contiguous product out_proj reads.
TEST(HfLfm2, ShortConvolutionSavesByHand) {
  const ModelSpec m = load_example("examples/hf/lfm2/lfm2-1.2b-text.json");
  ASSERT_EQ(m.mixer(0), Mixer::short_conv);
  const double s = 4096, h = 2048;
  for (const char* framework : {kHfFramework, kGenericFramework}) {
    TrainingSpec t;
    t.tp = 1, t.pp = 1, t.mbs = 1, t.seq = int64_t(s), t.precision = Precision::bf16;
    t = apply_framework(t, framework);
    const Block b = build_layer(m, rank_shape(t), 0).blocks[0];
    ASSERT_EQ(b.name, "short_conv");
    const double conv_rows = std::string(framework) == kHfFramework ? s + 2 : s;
    EXPECT_DOUBLE_EQ(b.tensor_bytes("bcx"), 3 * h * s * 2) << framework;
    EXPECT_DOUBLE_EQ(b.tensor_bytes("bx"), h * s * 2) << framework;
    EXPECT_DOUBLE_EQ(b.tensor_bytes("conv_out"), h * conv_rows * 2) << framework;
    EXPECT_DOUBLE_EQ(b.tensor_bytes("gated"), h * s * 2) << framework;
  }
}

}  // namespace
}  // namespace remat
