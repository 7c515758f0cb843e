// Falcon-H1's parallel hybrid (issue 24): attention and a Mamba-2 mixer side by side on one
// normed input in every layer, then a SwiGLU MLP (transformers 5.17's FalconH1DecoderLayer).
// Hand counts of a small config, the block's saved bytes against its parts, the loader's
// refusals; the measured steps are held in test_hf_profile.cpp.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "remat/cost/block.hpp"
#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/params.hpp"
#include "remat/cost/stage_model.hpp"
#include "remat/io/spec_loader.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

// h 64, 4 attention heads of 16 (2 kv), MLP 256, vocab 100; Mamba-2 d_ssm 128 in 4 heads of 32,
// one group of state 16, conv 4, chunk 32.
const std::string kTiny = R"({"model_type": "falcon_h1", "hidden_size": 64, "intermediate_size": 256,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100, "num_hidden_layers": 2,
    "mamba_d_ssm": 128, "mamba_n_heads": 4, "mamba_d_head": 32, "mamba_n_groups": 1, "mamba_d_state": 16,
    "mamba_d_conv": 4, "mamba_chunk_size": 32, "ssm_in_multiplier": 1.25, "lm_head_multiplier": 0.04})";

// kTiny with `changes` set (a null value kept as null)
std::string tiny_text(const nlohmann::json& changes = nlohmann::json::object()) {
  nlohmann::json config = nlohmann::json::parse(kTiny);
  for (const auto& [key, value] : changes.items()) config[key] = value;
  return config.dump();
}

ModelSpec tiny(const nlohmann::json& changes = nlohmann::json::object()) {
  return parse_hf_config(tiny_text(changes), "t.json");
}

RankShape shape(double b, double s) {
  RankShape r;
  r.b = b, r.s = s;
  return r;
}

// Per layer: the input norm 64; q 64x64, k and v 64x32 each, o 64x64; Mamba-2 in_proj 64 x (z 128 +
// x B C 160 + dt 4) = 64 x 292, conv1d 160 x (4 + bias), dt_bias, A_log and D 3 x 4, out_proj 128 x 64
// (no gated norm: mamba_rms_norm defaults to false); the pre-MLP norm 64 and gate, up, down 3 x 64 x 256.
// Embeddings 100 x 64 untied twice, the final norm 64.
TEST(HfFalconH1, ParametersByHand) {
  const ModelSpec m = tiny();
  for (int64_t i = 0; i < 2; ++i) {
    EXPECT_EQ(m.mixer(i), Mixer::attention_mamba2) << i;
    EXPECT_EQ(m.layer_kind(i), kParallelHybridKinds) << i;
    EXPECT_TRUE(m.layer_has_attention(i)) << i;
  }
  EXPECT_EQ(m.mamba_head_dim, 32);
  EXPECT_FALSE(m.mamba_gated_norm);
  const double attention = 64 + 4096 + 2 * 2048 + 4096;
  const double mamba = 64 * 292 + 160 * 5 + 12 + 128 * 64;
  const double layer = attention + mamba + 64 + 3 * 64 * 256;
  EXPECT_DOUBLE_EQ(layer_params(m, 0, 1, 1).total(), layer);
  EXPECT_DOUBLE_EQ(model_params(m, 2), 2 * layer + 2 * 6400 + 64);
  // in_proj's bias (mamba_proj_bias, 292), out_proj's (projectors_bias, 64), the gated norm's weight (128)
  EXPECT_DOUBLE_EQ(layer_params(tiny({{"mamba_proj_bias", true}}), 0, 1, 1).total(), layer + 292);
  EXPECT_DOUBLE_EQ(layer_params(tiny({{"projectors_bias", true}}), 0, 1, 1).total(), layer + 64);
  EXPECT_DOUBLE_EQ(layer_params(tiny({{"mamba_rms_norm", true}}), 0, 1, 1).total(), layer + 128);
  // mamba_d_ssm null: mamba_expand x hidden_size = 128 as well; "auto" head dim: 128 / 4
  EXPECT_DOUBLE_EQ(model_params(tiny({{"mamba_d_ssm", nullptr}, {"mamba_d_head", "auto"}}), 2), model_params(m, 2));
}

// The block holds the attention's tensors and the mixer's: the fused kernel saves the in_proj
// output (292 wide) and the scan output y (128); in_proj reads the attention's normed input.
// rows = 2 x 64 = 128.
TEST(HfFalconH1, BlockSavesBothBranches) {
  const ModelSpec m = tiny();
  const RankShape r = shape(2, 64);
  const double rows = 128;
  const LayerDef layer = build_layer(m, r, 0);
  ASSERT_EQ(layer.blocks.size(), 4u);  // the mixers, their glue, the MLP, its glue
  const Block& both = layer.blocks[0];
  EXPECT_EQ(both.name, "attention_mamba2");
  EXPECT_DOUBLE_EQ(saved_bytes(both) - saved_bytes(gqa_block(r, m, false, false)), rows * 292 * 2 + rows * 128 * 2);
  // full recompute keeps the layer input, and Wo's input (saved by the glue outside the block)
  EXPECT_DOUBLE_EQ(block_cost(both, BlockMode::standard, false).kept_bytes, rows * 64 * 2 + rows * 4 * 16 * 2);
  // the gated RMSNorm adds its 1/rms per group to the fused kernel's saves
  ModelSpec gated = m;
  gated.mamba_gated_norm = true;
  EXPECT_DOUBLE_EQ(saved_bytes(build_layer(gated, r, 0).blocks[0]) - saved_bytes(both), rows * 4);
  // under transformers the mixer reads its own copy of the normed input times ssm_in_multiplier
  RankShape hf = r;
  hf.layouts_from_model_code = true;
  ModelSpec unscaled = m;
  unscaled.mamba_input_scaled_copy = false;
  EXPECT_DOUBLE_EQ(saved_bytes(build_layer(m, hf, 0).blocks[0]) - saved_bytes(build_layer(unscaled, hf, 0).blocks[0]),
                   rows * 64 * 2);
  EXPECT_DOUBLE_EQ(saved_bytes(build_layer(m, r, 0).blocks[0]), saved_bytes(build_layer(unscaled, r, 0).blocks[0]));
}

// LoRA on q, k, v: in the first adapted layer the input needs no gradient, and nothing feeds the
// Mamba-2 mixer but that input through its frozen in_proj, so it saves nothing (measured: without this,
// LoRA steps without checkpointing were 2.2-3.5% high, one layer's mixer); the attention saves what
// it saves alone. Past the first layer every op saves.
TEST(HfFalconH1, FirstAdaptedLayerMixerSavesNothingUnderLora) {
  const ModelSpec m = tiny();
  RankShape r = shape(2, 64);
  r.weights_train = false;
  r.lora = {true, true, true, false, false, false, false};
  r.lora_rank = 4;
  TrainingSpec t;
  LayerDef attention_only;
  attention_only.blocks = {gqa_block(r, m, false, false)};
  attention_only.recomputable = {true};
  const double attention_saved = saved_bytes(frozen_prefix_layer(attention_only, false, t).blocks[0]);
  const LayerDef layer = build_layer(m, r, 0);
  EXPECT_DOUBLE_EQ(saved_bytes(frozen_prefix_layer(layer, false, t).blocks[0]), attention_saved);
  EXPECT_GT(saved_bytes(layer.blocks[0]), attention_saved + 128 * 292 * 2);  // a later layer's mixer saves
}

TEST(HfFalconH1, RefusesShapesTransformersCannotBuild) {
  EXPECT_EQ(test::rejection_of(tiny_text({{"mamba_d_head", 16}})),
            "t.json: mamba_d_head: times mamba_n_heads = 4 must be mamba_d_ssm = 128 (got 16)");
  EXPECT_EQ(test::rejection_of(tiny_text({{"mamba_n_heads", 3}})),
            "t.json: mamba_n_heads: must divide mamba_d_ssm = 128 (got 3)");
  EXPECT_EQ(test::rejection_of(tiny_text({{"layers_block_type", {"hybrid", "attention"}}})),
            "t.json: layers_block_type: must hold only \"hybrid\" (Falcon-H1) (got attention)");
  EXPECT_EQ(test::rejection_of(tiny_text({{"mamba_d_state", 0}})),
            "t.json: mamba_d_state: must be a positive integer (got 0)");
}

}  // namespace
}  // namespace remat
