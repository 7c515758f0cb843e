// Remote-code multimodal configs whose language model is a family remat builds: MiniCPM-V's keys
// at the top, read as the model its modeling code builds for the config's version, and VILA's
// llm_cfg. Counts by hand from the keys.
#include <gtest/gtest.h>

#include <string>

#include "remat/cost/params.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kMiniCpmV = R"({"model_type": "minicpmv", "architectures": ["MiniCPMV"], "hidden_size": 64,
  "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
  "vocab_size": 100, "query_num": 64, "tie_word_embeddings": false, "head_dim": 16)";

ModelSpec minicpmv(const std::string& version) {
  return parse_hf_config(kMiniCpmV + (version.empty() ? "" : R"(, "version": )" + version) + "}", "v.json");
}

// A layer by hand: q, k, v, o (64 x 64, 64 x 32 twice, 64 x 64), two norms, a SwiGLU of 128; the
// model adds an untied head, its embedding and the final norm.
constexpr double kLayer = 2 * 64.0 * 64 + 2 * 64.0 * 32 + 2 * 64 + 3 * 64.0 * 128;
constexpr double kOutside = 2 * 100.0 * 64 + 64;

TEST(HfRemoteWrappers, MiniCpmVLanguageModelByVersion) {
  // 2.5 and 4.0: LLaMA; no version (hidden_size not 2304): 2.5
  for (const std::string version : {"2.5", "4.0", "\"4.0\"", ""})
    EXPECT_DOUBLE_EQ(model_params(minicpmv(version), 2), 2 * kLayer + kOutside) << version;
  // 2.6: Qwen2, biases on q, k and v
  const ModelSpec qwen2 = minicpmv("2.6");
  EXPECT_TRUE(qwen2.qkv_bias);
  EXPECT_DOUBLE_EQ(model_params(qwen2, 2), 2 * (kLayer + 64 + 32 + 32) + kOutside);
  // 4.5: Qwen3, q and k norms of head_dim 16
  const ModelSpec qwen3 = minicpmv("4.5");
  EXPECT_EQ(qwen3.qk_norm, QkNorm::shared);
  EXPECT_DOUBLE_EQ(model_params(qwen3, 2), 2 * (kLayer + 2 * 16) + kOutside);
  EXPECT_EQ(test::hf_rejection(kMiniCpmV + R"(, "version": 3.1})", "v.json"),
            "v.json: version: is not a model remat can build: MiniCPM-V of a version whose language model remat "
            "does not know (2.0, 2.5, 2.6, 4.0, 4.5) (got 3.1)");
}

TEST(HfRemoteWrappers, RealConfigsAtTheirLanguageModelsCount) {
  const auto load = [](const std::string& name) {
    const std::string file = std::string(REMAT_TEST_DATA) + "/data/hf_configs/" + name + ".json";
    return parse_hf_config(test::read_text(file), name + ".json");
  };
  const ModelSpec minicpm = load("minicpm-v-4");
  EXPECT_DOUBLE_EQ(model_params(minicpm, minicpm.num_hidden_layers), 3'605'834'240.0);
  const ModelSpec vila = load("vila1.5-3b");
  EXPECT_EQ(vila.name, "./vlm (language model: llm_cfg)");
  EXPECT_DOUBLE_EQ(model_params(vila, vila.num_hidden_layers), 2'701'560'320.0);
}

}  // namespace
}  // namespace remat
