// GLM-4.1V's and GLM-4.5V's vision tower and Voxtral's audio tower (hf_towers_glm4v_voxtral.cpp), held
// beside the language model under --framework hf: the counts transformers 5.17 built (whole models in
// reports/hf/vision-towers-shapes-h200.json and steps-unseen15-h200.jsonl; small configs of other
// shapes built on the GPU machine's transformers 5.17 on the meta device, everything outside
// language_model and lm_head), and the four measured steps they were held in.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "hf_measured.hpp"
#include "remat/io/spec_loader.hpp"
#include "remat/spec/lora_placement.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kRoot = std::string(REMAT_TEST_DATA) + "/../";
const std::string kGlm41v = kRoot + "tests/data/hf_configs/glm-4.1v-9b-thinking.json";
const std::string kVoxtralMini = kRoot + "tests/data/hf_configs/voxtral-mini-3b-2507.json";

nlohmann::json file_json(const std::string& path) { return nlohmann::json::parse(test::read_text(path)); }

// A whole model of vision-towers-shapes-h200.json less its language model and its untied lm_head
// (vocab x hidden, the shape its `outside` names).
double shapes_tower(const std::string& file) {
  std::ifstream in(kRoot + "reports/hf/vision-towers-shapes-h200.json");
  for (const auto& row : nlohmann::json::parse(in)) {
    if (row.at("file") != file) continue;
    double lm_head = 0;
    for (const auto& [name, count] : row.at("outside").items())
      if (name.rfind("lm_head.weight ", 0) == 0) {
        const std::string shape = name.substr(name.find(' ') + 1);
        lm_head = std::stod(shape.substr(0, shape.find('x'))) * std::stod(shape.substr(shape.find('x') + 1));
      }
    return row.at("params").get<double>() - row.at("language_params").get<double>() - lm_head;
  }
  return -1;
}

// The config transformers 5.17 saves from a config class's defaults (hf_transformers_defaults.jsonl).
nlohmann::json default_config(const std::string& type) {
  std::istringstream lines(test::read_text(kRoot + "tests/data/hf_transformers_defaults.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    const auto row = nlohmann::json::parse(line);
    if (row.value("model_type", "") == type) return row.at("config");
  }
  return nullptr;
}

bool noted(const ModelSpec& m, const std::string& part) {
  for (const auto& note : m.notes)
    if (note.find(part) != std::string::npos) return true;
  return false;
}

// GLM-4.1V-9B-Thinking's tower (H 1536, 24 blocks, out_hidden_size 4096, intermediate_size 13696):
// 576 positions x 1536; the Conv3d 3 x 2 x 14 x 14 x 1536 + 1536; a block's two RMSNorms 3072, qkv
// 1536 x 4608 without a bias, proj 1536^2, its MLP 3 x 1536 x 4096 (out_hidden_size's width); two
// RMSNorms 3072; the downsample Conv2d 1536 x 2 x 2 x 4096 + 4096; the merger 4096^2, a LayerNorm
// 8192, 3 x 4096 x 13696. transformers built 892,498,432 (the whole model less the language model and
// lm_head; the same in its 4-layer steps: 2,949,892,608 less remat's 2,057,394,176).
TEST(HfTowersGlm4vVoxtral, Glm41vAsTransformersBuiltIt) {
  const ModelSpec m = test::model(kGlm41v);
  const double block = 3072 + 1536.0 * 4608 + 1536.0 * 1536 + 3 * 1536.0 * 4096;
  const double merger = 4096.0 * 4096 + 8192 + 3 * 4096.0 * 13696;
  EXPECT_DOUBLE_EQ(m.idle_params,
                   576 * 1536.0 + (1176 * 1536.0 + 1536) + 24 * block + 3072 + (1536 * 4 * 4096.0 + 4096) + merger);
  EXPECT_DOUBLE_EQ(m.idle_params, 892498432.0);
  EXPECT_DOUBLE_EQ(m.idle_params, shapes_tower("../../../tests/data/hf_configs/glm-4.1v-9b-thinking.json"));
  // the file keeps the language model's keys at the top: the note gives the tower, none says "not counted"
  EXPECT_TRUE(noted(m, "builds from vision_config (892498432 parameters)"));
  EXPECT_FALSE(noted(m, "not counted"));
}

// GLM-4.5V's class (Glm4vMoeVisionModel is Glm4vVisionModel) and GLM-4.1V's at their config classes'
// defaults, which are GLM-4.1V's tower: the same 892,498,432 transformers built for both.
TEST(HfTowersGlm4vVoxtral, Glm4vAndGlm45vDefaultsAsBuilt) {
  for (const char* type : {"glm4v", "glm4v_moe"}) {
    const ModelSpec m = parse_hf_config(default_config(type).dump(), std::string(type) + ".json");
    EXPECT_DOUBLE_EQ(m.idle_params, 892498432.0) << type;
    EXPECT_DOUBLE_EQ(m.idle_params, shapes_tower(std::string("default:") + type)) << type;
    EXPECT_TRUE(noted(m, "(892498432 parameters) are not in its count")) << type;
  }
}

// Another shape, built by transformers 5.17 under Glm4vConfig and Glm4vMoeConfig alike (224,728):
// H 96, 3 blocks, in_channels 2, image 50 of patch 7 (7 x 7 positions), temporal 3, merge 3,
// out_hidden_size 40, intermediate_size 72, qkv with its bias.
TEST(HfTowersGlm4vVoxtral, Glm4vOtherShapeByHand) {
  const nlohmann::json vision = {{"hidden_size", 96},       {"depth", 3},
                                 {"num_heads", 4},          {"in_channels", 2},
                                 {"image_size", 50},        {"patch_size", 7},
                                 {"spatial_merge_size", 3}, {"temporal_patch_size", 3},
                                 {"out_hidden_size", 40},   {"intermediate_size", 72},
                                 {"attention_bias", true}};
  const double h = 96, o = 40, f = 72;
  const double block = 2 * h + (3 * h * h + 3 * h) + h * h + 3 * h * o;
  const double by_hand =
      49 * h + (2 * 3 * 7 * 7 * h + h) + 3 * block + 2 * h + (h * 9 * o + o) + (o * o + 2 * o + 3 * o * f);
  EXPECT_DOUBLE_EQ(by_hand, 224728.0);
  nlohmann::json flat = file_json(kGlm41v);
  flat["vision_config"] = vision;
  EXPECT_DOUBLE_EQ(parse_hf_config(flat.dump(), "glm.json").idle_params, 224728.0);
  nlohmann::json moe = default_config("glm4v_moe");
  moe["vision_config"] = vision;
  EXPECT_DOUBLE_EQ(parse_hf_config(moe.dump(), "glm45v.json").idle_params, 224728.0);
  // no vision_config: Glm4vConfig builds its default tower
  flat.erase("vision_config");
  EXPECT_DOUBLE_EQ(parse_hf_config(flat.dump(), "glm.json").idle_params, 892498432.0);
  // a key of the wrong type is a problem named by its key; a dimension out of range leaves it uncounted
  flat["vision_config"] = {{"depth", "deep"}};
  EXPECT_NE(test::hf_rejection(flat.dump(), "g.json").find("vision_config.depth"), std::string::npos);
  flat["vision_config"] = {{"patch_size", 0}};
  EXPECT_EQ(parse_hf_config(flat.dump(), "glm.json").idle_params, 0);
}

// Voxtral Mini's audio tower and projector (D 1280, 32 layers, F 5120, 128 mel bins, 1500 positions;
// the text width 3072): conv1 128 x 1280 x 3 + 1280, conv2 1280^2 x 3 + 1280, positions 1500 x 1280
// (an nn.Embedding, frozen, still held); a layer's q, v, out with biases and k without 4 x 1280^2 +
// 3 x 1280, fc1 and fc2 with biases, two LayerNorms; the last LayerNorm; linear_1 5120 x 3072 and
// linear_2 3072^2 without biases. transformers built 662,134,784 (its 4-layer steps: 1,895,287,808
// less remat's 1,233,153,024), and the same from VoxtralConfig's defaults.
TEST(HfTowersGlm4vVoxtral, VoxtralMiniAsTransformersBuiltIt) {
  const ModelSpec m = test::model(kVoxtralMini);
  const double d = 1280, f = 5120, t = 3072;
  const double layer = (4 * d * d + 3 * d) + (d * f + f) + (f * d + d) + 4 * d;
  EXPECT_DOUBLE_EQ(m.idle_params, (128 * d * 3 + d) + (d * d * 3 + d) + 1500 * d + 32 * layer + 2 * d + f * t + t * t);
  EXPECT_DOUBLE_EQ(m.idle_params, 662134784.0);
  EXPECT_TRUE(noted(m, "the audio tower and projector (662134784 parameters) are not in its count"));
  EXPECT_FALSE(noted(m, "vision"));
  nlohmann::json j = file_json(kVoxtralMini);
  j.erase("audio_config");  // VoxtralConfig builds VoxtralEncoderConfig's defaults: Voxtral Mini's
  EXPECT_DOUBLE_EQ(parse_hf_config(j.dump(), "v.json").idle_params, 662134784.0);
  j["audio_config"] = {{"model_type", "whisper"}};  // another encoder: not counted, and the note says so
  const ModelSpec other = parse_hf_config(j.dump(), "v.json");
  EXPECT_EQ(other.idle_params, 0);
  EXPECT_TRUE(noted(other, "the audio tower and projector are not counted"));
}

// Another shape, built by transformers 5.17 (265,456): D 96, F 144, 3 layers of 4 heads, 80 mel bins,
// 50 positions, a text width of 64; VoxtralEncoderConfig reads Whisper's names (d_model, encoder_*)
// for the same tower.
TEST(HfTowersGlm4vVoxtral, VoxtralOtherShapeByHand) {
  nlohmann::json j = file_json(kVoxtralMini);
  j["text_config"] = {{"model_type", "llama"},    {"hidden_size", 64},        {"num_hidden_layers", 1},
                      {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"intermediate_size", 128},
                      {"vocab_size", 100}};
  j["audio_config"] = {{"hidden_size", 96},        {"intermediate_size", 144}, {"num_hidden_layers", 3},
                       {"num_attention_heads", 4}, {"num_mel_bins", 80},       {"max_source_positions", 50}};
  const double d = 96, f = 144, t = 64;
  const double layer = (4 * d * d + 3 * d) + (d * f + f) + (f * d + d) + 4 * d;
  const double by_hand = (80 * d * 3 + d) + (d * d * 3 + d) + 50 * d + 3 * layer + 2 * d + f * t + t * t;
  EXPECT_DOUBLE_EQ(by_hand, 265456.0);
  EXPECT_DOUBLE_EQ(parse_hf_config(j.dump(), "v.json").idle_params, 265456.0);
  j["audio_config"] = {{"d_model", 96},       {"encoder_ffn_dim", 144},
                       {"encoder_layers", 3}, {"encoder_attention_heads", 4},
                       {"num_mel_bins", 80},  {"max_source_positions", 50}};
  EXPECT_DOUBLE_EQ(parse_hf_config(j.dump(), "v.json").idle_params, 265456.0);
  // a key given both ways with two values, or heads that do not divide the width: not counted
  j["audio_config"]["hidden_size"] = 128;
  EXPECT_EQ(parse_hf_config(j.dump(), "v.json").idle_params, 0);
  j["audio_config"].erase("hidden_size");
  j["audio_config"]["encoder_attention_heads"] = 5;
  EXPECT_EQ(parse_hf_config(j.dump(), "v.json").idle_params, 0);
}

// PEFT puts adapters on the tower's modules the target names reach (PEFT's trainable counts in
// steps-unseen15-h200.jsonl): Voxtral's q/k/v_proj in each of 32 layers (out_proj is not o_proj),
// GLM-4.1V's down_proj in each of 24 blocks and the merger's (gate_up_proj, the language model's
// fused name, reaches none of the tower's gate_proj or up_proj). A target naming a longer path
// reaches the tower only where the path is the tower's.
TEST(HfTowersGlm4vVoxtral, TargetNamesReachTheTowersModules) {
  const ModelSpec voxtral = test::model(kVoxtralMini);
  const auto width = [](const ModelSpec& m, std::vector<std::string> names) {
    const ResolvedLoraTargets r = resolve_lora_targets(m, names);
    EXPECT_EQ(r.refusal, "");
    return r.targets.tower_adapter_width;
  };
  EXPECT_DOUBLE_EQ(width(voxtral, {"q_proj", "k_proj", "v_proj", "o_proj"}), 32 * 3 * 2560.0);
  // r 64 on the language model's 4 layers and the tower: 21,495,808 trainable, as PEFT counted
  const double lm = 4 * 64 * ((3072 + 4096) + 2 * (3072 + 1024) + (4096 + 3072.0));
  EXPECT_DOUBLE_EQ(lm + 64 * width(voxtral, {"q_proj", "k_proj", "v_proj", "o_proj"}), 21495808.0);
  const ModelSpec glm = test::model(kGlm41v);
  const double down = 24 * (4096 + 1536.0) + (13696 + 4096.0);
  EXPECT_DOUBLE_EQ(width(glm, {"q_proj", "k_proj", "v_proj", "o_proj", "down_proj"}), down);
  EXPECT_DOUBLE_EQ(width(glm, {"gate_up_proj", "down_proj"}), down);
  EXPECT_DOUBLE_EQ(width(glm, {"mlp.down_proj"}), 24 * (4096 + 1536.0));
  EXPECT_DOUBLE_EQ(width(glm, {"model.language_model.layers.0.mlp.down_proj"}), 0);
  EXPECT_DOUBLE_EQ(width(glm, {"q_proj"}), 0);
}

// The four steps of steps-unseen15-h200.jsonl that held these towers: the bytes before the step were
// -30.1%, -30.1% (GLM-4.1V) and -34.8%, -34.4% (Voxtral) while the towers went uncounted, -0.43%,
// -0.52%, -1.58%, -0.40% with the towers and without their adapters; now -0.35%, -0.36%, -0.00%, -0.00%.
TEST(HfTowersGlm4vVoxtral, MeasuredStepsHoldTheTowers) {
  int checked = 0;
  for (const HfComparison& c : test::measured_hf_steps("steps-unseen15-h200.jsonl", "h200")) {
    const std::string& name = c.measured.case_name;
    if (name.rfind("glm-4.1v", 0) != 0 && name.rfind("voxtral", 0) != 0) continue;
    EXPECT_LE(std::abs(c.before_error_pct()), 1.0) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 4);
}

}  // namespace
}  // namespace remat
