// Kimi-K2.5/K2.6's and MiniCPM-V 4.6's vision towers and projectors (hf_vision_towers_kimi_minicpm.cpp),
// held beside the language model under --framework hf: the counts transformers 5.17 built from the
// two real files (everything outside the language model), and tiny configs counted by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "remat/io/spec_loader.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kRealcfg = std::string(REMAT_TEST_DATA) + "/../examples/hf/unseen13/realcfg/";

// The real file with vision_config (and top-level keys) replaced.
std::string edited(const std::string& file, const nlohmann::json& top_keys) {
  nlohmann::json root = nlohmann::json::parse(test::read_text(kRealcfg + file));
  for (const auto& [key, value] : top_keys.items()) root[key] = value;
  return root.dump();
}
ModelSpec with(const std::string& file, const nlohmann::json& top_keys) {
  return parse_hf_config(edited(file, top_keys), file);
}

// A SigLIP-style encoder layer: two LayerNorms, q, k, v and out with biases, fc1 and fc2 with biases.
double layer(double h, double f) { return 4 * h + 4 * (h * h + h) + (h * f + f) + (f * h + h); }

TEST(HfVisionTowersMore, KimiK26AsTransformersBuiltIt) {
  const ModelSpec m = test::model(kRealcfg + "kimi-k2.6-nvfp4.json");
  EXPECT_EQ(m.idle_params, 471143920);
  // MoonViT at its class defaults (the file's vt_* spellings give the same numbers) and the projector
  const double h = 1152, merged = 4 * h;
  const double tower = 3 * 14 * 14 * h + h + 64 * 64 * h + 27 * layer(h, 4304) + 2 * h;
  EXPECT_DOUBLE_EQ(tower + 2 * h + merged * merged + merged + merged * 7168 + 7168, 471143920);
}

TEST(HfVisionTowersMore, MiniCpmV46AsTransformersBuiltIt) {
  const ModelSpec m = test::model(kRealcfg + "minicpm-v-4.6-llm-tpu.json");
  EXPECT_EQ(m.idle_params, 548266416);
  const double h = 1152, f = 4304, w = 4, merged = 4 * h;
  const double tower = 3 * 14 * 14 * h + h + 70 * 70 * h + 27 * layer(h, f) + 2 * h;
  const double vit_merger = 4 * (h * h + h) + 2 * h + 2 * w * h + (w * h * w * f + w * f) + (w * f * h + h);
  const double merger = 2 * merged + merged * merged + merged + merged * 1024 + 1024;
  EXPECT_DOUBLE_EQ(tower + vit_merger + merger, 548266416);
}

TEST(HfVisionTowersMore, KimiTinyByHand) {
  const nlohmann::json vision = {
      {"hidden_size", 64},   {"intermediate_size", 96}, {"num_hidden_layers", 2},     {"patch_size", 4},
      {"pos_emb_height", 8}, {"pos_emb_width", 6},      {"merge_kernel_size", {2, 3}}};
  const ModelSpec m = with("kimi-k2.6-nvfp4.json", {{"vision_config", vision}, {"projection_hidden_size", 64}});
  const double h = 64, merged = h * 6, text = 7168;
  const double tower = 3 * 4 * 4 * h + h + 8 * 6 * h + 2 * layer(h, 96) + 2 * h;
  EXPECT_DOUBLE_EQ(m.idle_params, tower + 2 * 64 + merged * merged + merged + merged * text + text);
  // the remote code's spelling, agreeing with the plain key, changes nothing
  nlohmann::json agreeing = vision;
  agreeing["vt_hidden_size"] = 64;
  EXPECT_DOUBLE_EQ(
      with("kimi-k2.6-nvfp4.json", {{"vision_config", agreeing}, {"projection_hidden_size", 64}}).idle_params,
      m.idle_params);
  // a remote-code width transformers does not read (it builds 1152): the two builds differ, uncounted
  EXPECT_EQ(with("kimi-k2.6-nvfp4.json", {{"vision_config", {{"vt_hidden_size", 64}}}}).idle_params, 0);
  // a value of the wrong type is a problem named by its key
  const std::string bad = edited("kimi-k2.6-nvfp4.json", {{"vision_config", {{"hidden_size", "wide"}}}});
  EXPECT_NE(test::hf_rejection(bad, "t.json").find("vision_config.hidden_size"), std::string::npos);
}

TEST(HfVisionTowersMore, MiniCpmTinyByHand) {
  const nlohmann::json vision = {
      {"model_type", "minicpmv4_6_vision"}, {"hidden_size", 64}, {"intermediate_size", 96}, {"num_hidden_layers", 3},
      {"num_attention_heads", 4},           {"image_size", 40},  {"patch_size", 6}};
  const ModelSpec m = with("minicpm-v-4.6-llm-tpu.json", {{"vision_config", vision}, {"merger_times", 2}});
  const double h = 64, f = 96, w = 4, merged = 4 * h;
  const double tower = 3 * 6 * 6 * h + h + 6 * 6 * h + 3 * layer(h, f) + 2 * h;
  const double vit_merger = 4 * (h * h + h) + 2 * h + 2 * w * h + (w * h * w * f + w * f) + (w * f * h + h);
  const auto downsample = [&](double out) { return 2 * merged + merged * merged + merged + merged * out + out; };
  EXPECT_DOUBLE_EQ(m.idle_params, tower + vit_merger + downsample(h) + downsample(1024));
  // MiniCPMV4_6VisionConfig's defaults where vision_config is empty: hidden 768, 12 layers, image 224 of 16
  const double d = 768, g = 3072, dm = 4 * d;
  const double defaults = 3 * 16 * 16 * d + d + 14 * 14 * d + 12 * layer(d, g) + 2 * d + 4 * (d * d + d) + 2 * d +
                          2 * w * d + (w * d * w * g + w * g) + (w * g * d + d) + 2 * dm + dm * dm + dm + dm * 1024 +
                          1024;
  EXPECT_DOUBLE_EQ(with("minicpm-v-4.6-llm-tpu.json", {{"vision_config", nlohmann::json::object()}}).idle_params,
                   defaults);
  // a width its heads do not divide: transformers refuses the attention, remat leaves the tower uncounted
  nlohmann::json odd = vision;
  odd["num_attention_heads"] = 5;
  EXPECT_EQ(with("minicpm-v-4.6-llm-tpu.json", {{"vision_config", odd}}).idle_params, 0);
}

}  // namespace
}  // namespace remat
