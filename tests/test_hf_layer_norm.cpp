// LayerNorms as the model's own code runs them under --framework hf, and the tied embedding's
// gradients at the end of the backward. Cohere's CohereLayerNorm is written out as fp32 ops and
// saves two fp32 copies of x - mean, 1/std per row and (when its weight trains) the fp32 normalized
// tensor; OLMo 1's hands torch's kernel an fp32 copy of its input. Measured on an H200:
// reports/hf/steps-layernorm-h200.jsonl (HfProfile.LayerNormCodeSteps).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/stage_model.hpp"
#include "remat/io/spec_loader.hpp"
#include "remat/spec/framework.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

// hidden 64, 4 heads of 16, MLP 128, one layer, tied embedding of 100 rows
std::string config(const std::string& model_type) {
  return R"({"model_type": ")" + model_type + R"(", "hidden_size": 64, "intermediate_size": 128,
    "num_attention_heads": 4, "num_key_value_heads": 4, "num_hidden_layers": 1, "vocab_size": 100,
    "tie_word_embeddings": true})";
}

TrainingSpec hf_step(int64_t lora_rank, Precision precision = Precision::bf16) {
  TrainingSpec t;
  t.mbs = 1, t.gbs = 1, t.seq = 512, t.precision = precision, t.lora_rank = lora_rank;
  t = apply_framework(t, kHfFramework);
  t.zero_stage = 0;
  return t;
}

const Block& block_named(const LayerDef& layer, const std::string& name) {
  for (const Block& b : layer.blocks)
    if (b.name == name) return b;
  throw std::runtime_error("no block " + name);
}

const OpDef& op_named(const Block& b, const std::string& name) {
  for (const OpDef& op : b.ops)
    if (op.name == name) return op;
  throw std::runtime_error("no op " + name);
}

constexpr double kRows = 512, kElems = 512.0 * 64;

TEST(HfLayerNorm, CohereNormSavesTwoCenteredCopiesAndTheNormalizedProduct) {
  const ModelSpec m = parse_hf_config(config("cohere"), "c.json");
  for (const int64_t lora : {0, 16}) {
    const LayerDef layer = build_layer(m, with_model(rank_shape(hf_step(lora)), m), 0);
    const Block& attention = block_named(layer, "gqa");
    const OpDef& norm = op_named(attention, "layernorm");
    std::vector<std::string> saves = {"centered", "centered_again", "rstd"};
    if (lora == 0) saves.push_back("x_normed");
    EXPECT_EQ(norm.saves, saves) << lora;
    EXPECT_DOUBLE_EQ(attention.tensor_bytes("centered") + attention.tensor_bytes("centered_again"), 8 * kElems);
    EXPECT_DOUBLE_EQ(attention.tensor_bytes("rstd"), 4 * kRows);
    EXPECT_DOUBLE_EQ(attention.tensor_bytes("x_normed"), 4 * kElems);
    // bytes per element read and written: 60 forward; 140 backward, 124 with the weight frozen
    EXPECT_DOUBLE_EQ(norm.fwd_bytes, 60 * kElems);
    EXPECT_DOUBLE_EQ(norm.bwd_bytes, (lora == 0 ? 140 : 124) * kElems) << lora;
    // the MLP reads the same norm's output (one norm for both branches): it saves none of it again
    const Block& mlp = block_named(layer, "mlp");
    for (const char* name : {"centered", "centered_again", "rstd", "x_normed", "x_norm"})
      EXPECT_DOUBLE_EQ(mlp.tensor_bytes(name), 0) << name;
  }
}

TEST(HfLayerNorm, OlmoNormSavesItsFp32InputCopy) {
  const ModelSpec m = parse_hf_config(config("olmo"), "o.json");
  const LayerDef layer = build_layer(m, with_model(rank_shape(hf_step(0)), m), 0);
  const Block& attention = block_named(layer, "gqa");
  const OpDef& norm = op_named(attention, "layernorm");
  EXPECT_EQ(norm.saves, (std::vector<std::string>{"x32", "rstd", "mean"}));
  EXPECT_DOUBLE_EQ(attention.tensor_bytes("x32"), 4 * kElems);
  // torch's kernel (2 x 2 bytes forward, 3 x 2 backward) and the casts each way (2 + 4)
  EXPECT_DOUBLE_EQ(norm.fwd_bytes, (4 + 12) * kElems);
  EXPECT_DOUBLE_EQ(norm.bwd_bytes, (6 + 6) * kElems);
  // Megatron-LM runs its own fused LayerNorm whatever the model's code: the input saved as it is
  TrainingSpec megatron;
  megatron.mbs = 1, megatron.gbs = 1, megatron.seq = 512, megatron.precision = Precision::bf16;
  megatron = apply_framework(megatron, kMegatronLocalFramework);
  const LayerDef megatron_layer = build_layer(m, with_model(rank_shape(megatron), m), 0);
  const Block& fused = block_named(megatron_layer, "gqa");
  EXPECT_EQ(op_named(fused, "layernorm").saves, (std::vector<std::string>{"x", "rstd", "mean"}));
}

// The tied embedding's backward ends the step: the LM head's gradient (100 x 64) waits in autograd's
// buffer for the lookup's; in bf16 their sum is a new tensor (two more, 2 x 2 bytes a weight), under
// autocast the lookup's fp32 gradient alone; nothing under LoRA (frozen) or on an untied model.
TEST(HfLayerNorm, TiedEmbeddingGradientsSummedAtTheEndOfTheBackward) {
  const ModelSpec tied = parse_hf_config(config("llama"), "t.json");
  const HardwareSpec hw = apply_framework(test::hardware("h200"), kHfFramework);
  const auto extra = [&](const ModelSpec& m, const TrainingSpec& t) {
    return stage_base(m, hw, t, rank_shape(t), 0, {0, 1}).tied_embedding_backward_bytes;
  };
  EXPECT_DOUBLE_EQ(extra(tied, hf_step(0)), 2 * 2 * 6400.0);
  EXPECT_DOUBLE_EQ(extra(tied, hf_step(0, Precision::mixed)), 4 * 6400.0);
  EXPECT_DOUBLE_EQ(extra(tied, hf_step(16)), 0);
  ModelSpec untied = tied;
  untied.tie_word_embeddings = false;
  EXPECT_DOUBLE_EQ(extra(untied, hf_step(0)), 0);
}

}  // namespace
}  // namespace remat
