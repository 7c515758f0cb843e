// Llama 3.2 Vision's language model (mllama) as a text-only step runs it: transformers'
// MllamaTextModel skips its cross-attention layers without image states, so they hold weights
// (counted by hand as MllamaCrossAttentionDecoderLayer builds them) but run nothing and get no
// gradient or optimizer state; Megatron-LM has no such layers to model.
#include <gtest/gtest.h>

#include <string>

#include "remat/cost/estimate.hpp"
#include "remat/cost/params.hpp"
#include "remat/spec/framework.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

// 5 layers, layer 2 a cross-attention layer; hidden 64, 4 heads of 16, 2 key/value heads, MLP 128
const std::string kMllama = R"({"model_type": "mllama", "architectures": ["MllamaForConditionalGeneration"],
  "text_config": {"model_type": "mllama_text_model", "hidden_size": 64, "intermediate_size": 128,
  "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 5, "vocab_size": 100,
  "cross_attention_layers": [2], "tie_word_embeddings": false}, "vision_config": {"hidden_size": 32}})";

// by hand: a self-attention layer (q, k, v, o; two norms; SwiGLU 128) and a cross-attention layer
// (the same plus q and k norms of head_dim 16 and two scalar gates)
constexpr double kSelfLayer = 2 * 64.0 * 64 + 2 * 64.0 * 32 + 2 * 64 + 3 * 64.0 * 128;
constexpr double kCrossLayer = kSelfLayer + 2 * 16 + 2;

TEST(HfCrossAttention, TextOnlyStepSkipsTheCrossAttentionLayers) {
  const ModelSpec m = parse_hf_config(kMllama, "v.json");
  ASSERT_TRUE(m.layer_is_skipped_cross_attention(2));
  EXPECT_FALSE(m.layer_is_skipped_cross_attention(1));
  // embed_tokens has vocab_size + 8 rows, the head vocab_size; a final norm
  EXPECT_DOUBLE_EQ(model_params(m, 5), 4 * kSelfLayer + kCrossLayer + 108.0 * 64 + 100.0 * 64 + 64);
  const ParamCount cross = layer_params(m, 2, 1, 1);
  EXPECT_DOUBLE_EQ(cross.total(), kCrossLayer);
  EXPECT_DOUBLE_EQ(cross.untrained, kCrossLayer);
  // bf16 with AdamW under hf: weights of every layer, gradients and moments of the layers that run
  TrainingSpec t;
  t.mbs = 1, t.gbs = 1, t.seq = 512, t.precision = Precision::bf16;
  t = apply_framework(t, kHfFramework);
  t.zero_stage = 0;
  const HardwareSpec hw = apply_framework(test::hardware("h200"), kHfFramework);
  const Estimate e = estimate(m, hw, t, Plan{}, 1e30);
  const StageMemory& mem = e.stages.at(0).memory_bytes;
  const double all = model_params(m, 5), trained = all - kCrossLayer;
  EXPECT_DOUBLE_EQ(mem.weights, 2 * all);
  EXPECT_DOUBLE_EQ(mem.gradients, 2 * trained);
  EXPECT_DOUBLE_EQ(mem.optimizer, 4 * trained);
  // the skipped layer keeps nothing: the activations are four self-attention layers'
  const std::string four = R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
    "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 4, "vocab_size": 100, "tie_word_embeddings": false})";
  const Estimate plain = estimate(parse_hf_config(four, "l.json"), hw, t, Plan{}, 1e30);
  EXPECT_DOUBLE_EQ(mem.activations, plain.stages.at(0).memory_bytes.activations);
  EXPECT_DOUBLE_EQ(e.stages.at(0).flops.forward, plain.stages.at(0).flops.forward);
}

TEST(HfCrossAttention, RealConfigsAtTransformersCountAndMegatronRefused) {
  // transformers 5.17's MllamaForCausalLM from each text_config (reports/hf/param-counts-mllama-h200.json)
  for (const auto& [name, count] : {std::pair{"llama-3.2-11b-vision-instruct", 9'775'192'080.0},
                                    {"llama-3.2-90b-vision-instruct", 87'666'865'192.0}}) {
    const std::string file = std::string(REMAT_TEST_DATA) + "/data/hf_configs/" + name + ".json";
    const ModelSpec m = parse_hf_config(test::read_text(file), file);
    EXPECT_DOUBLE_EQ(model_params(m, m.num_hidden_layers), count) << name;
  }
  const ModelSpec m = parse_hf_config(kMllama, "v.json");
  const FrameworkProfile* megatron = find_framework(kMegatronLocalFramework);
  ASSERT_NE(megatron, nullptr);
  EXPECT_EQ(megatron->cannot_run(m),
            "cross-attention layers (Llama 3.2 Vision) have no Megatron-LM implementation to model: give "
            "--framework generic or hf");
}

}  // namespace
}  // namespace remat
