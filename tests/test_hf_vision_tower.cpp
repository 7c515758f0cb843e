// A multimodal checkpoint's vision tower and projector, which transformers builds beside the
// language model and a text-only step never runs (ModelSpec::idle_params): SigLIP under Gemma 3,
// CLIP or SigLIP under LLaVA, Pixtral under Mistral 3, SigLIP2 under LFM2-VL, the Qwen vision family
// (Qwen2-VL, Qwen2.5-VL, EXAONE 4.5, Qwen3-VL, Qwen3.5). Counts checked against transformers 5.17's whole models
// (reports/hf/param-counts-vision-towers-h200.json, examples/hf/vision/count_whole.py).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>

#include "hf_measured.hpp"
#include "remat/cost/estimate.hpp"
#include "remat/io/spec_loader.hpp"
#include "remat/spec/framework.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kRoot = std::string(REMAT_TEST_DATA) + "/../";

// Gemma 3 4B's SigLIP (h 1152, f 4304, 27 layers, 896 / 14 = 64 patches a side, no pooling head):
// per layer q, k, v, o 4 (1152^2 + 1152) = 5313024, fc1 4962512, fc2 4959360, two LayerNorms 4608;
// patch convolution 3 x 14 x 14 x 1152 + 1152 = 678528, positions 4096 x 1152 = 4718592, the
// post-LayerNorm 2304; the projector 1152 x 2560 and its norm 1152.
TEST(HfVisionTower, Gemma3SiglipByHand) {
  const ModelSpec m = test::model(kRoot + "tests/data/hf_configs/gemma-3-4b-it.json");
  const double layer = 5313024.0 + 4962512 + 4959360 + 4608;
  EXPECT_DOUBLE_EQ(m.idle_params, 27 * layer + 678528 + 4718592 + 2304 + 1152.0 * 2560 + 1152);
  EXPECT_DOUBLE_EQ(m.idle_params, 419816304.0);
}

// LLaVA-1.5-7B's CLIP ViT-L/14-336 (h 1024, f 4096, 24 layers, 24 x 24 patches): per layer
// 4198400 + 4198400 + 4195328 + 4096; a class embedding 1024, the convolution without bias 602112,
// 577 positions 590848, pre- and post-LayerNorms 4096; the projector 1024 x 4096 + 4096 x 4096
// and its biases 8192.
// vision_config is read as the language model's keys are: a wrong type is refused by its key, never
// read as the tower's default.
TEST(HfVisionTower, WrongTypedTowerKeyIsRefused) {
  std::ifstream in(kRoot + "tests/data/hf_configs/gemma-3-4b-it.json");
  nlohmann::json j = nlohmann::json::parse(in);
  j["vision_config"]["hidden_size"] = "abc";
  try {
    parse_hf_config(j.dump(), "g3.json");
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("vision_config.hidden_size"), std::string::npos) << e.what();
  }
}

TEST(HfVisionTower, LlavaClipByHand) {
  const ModelSpec m = test::model(kRoot + "tests/data/hf_configs/llava-1.5-7b-hf-ome.json");
  const double layer = 4198400.0 + 4198400 + 4195328 + 4096;
  EXPECT_DOUBLE_EQ(m.idle_params, 24 * layer + 1024 + 602112 + 590848 + 4096 + 1024.0 * 4096 + 4096.0 * 4096 + 8192);
}

// remat's language model plus its tower equals every parameter transformers builds, for each file
// the whole models were counted from; a tower remat does not count leaves idle_params 0.
TEST(HfVisionTower, LanguageModelPlusTowerIsTheWholeModel) {
  std::ifstream in(kRoot + "reports/hf/param-counts-vision-towers-h200.json");
  const nlohmann::json rows = nlohmann::json::parse(in);
  int checked = 0;
  for (const auto& row : rows) {
    const std::string file = row.at("file");
    if (file.find("one-layer-test") != std::string::npos) continue;  // LLaVA's keys at the top: no tower read
    const ModelSpec m = model_as_built(test::model(kRoot + file), kHfFramework);
    EXPECT_DOUBLE_EQ(model_params(m, m.num_hidden_layers) + m.idle_params, row.at("params").get<double>()) << file;
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

// The towers of reports/hf/vision-towers-shapes-h200.json (examples/hf/vision/count_shapes.py:
// transformers 5.17 built each whole model; `outside` lists every parameter beside its language
// model by name and shape): the tower is params - language_params - the untied lm_head.
const nlohmann::json& shape_rows() {
  static const nlohmann::json rows = [] {
    std::ifstream in(kRoot + "reports/hf/vision-towers-shapes-h200.json");
    return nlohmann::json::parse(in);
  }();
  return rows;
}

double tower_of(const nlohmann::json& row) {
  double lm_head = 0;
  for (const auto& [name, count] : row.at("outside").items())
    if (name.rfind("lm_head.", 0) == 0) {
      double n = 1;
      std::string shape = name.substr(name.find(' ') + 1);
      for (size_t at = 0; at != std::string::npos;) {
        const size_t x = shape.find('x', at);
        n *= std::stod(shape.substr(at, x == std::string::npos ? x : x - at));
        at = x == std::string::npos ? x : x + 1;
      }
      lm_head += n * count.get<double>();
    }
  return row.at("params").get<double>() - row.at("language_params").get<double>() - lm_head;
}

const nlohmann::json& shape_row(const std::string& file) {
  for (const auto& row : shape_rows())
    if (row.at("file") == file) return row;
  throw std::runtime_error("no row " + file);
}

// The tower remat counts: idle_params, or for Qwen3.5 (whose AutoModelForCausalLM class builds no
// tower, so nothing is held) the count its note gives.
double counted_tower(const ModelSpec& m) {
  if (m.idle_params > 0) return m.idle_params;
  const std::string tail = " parameters, which AutoModelForImageTextToText builds";
  for (const auto& note : m.notes)
    if (const size_t end = note.find(tail); end != std::string::npos) {
      const size_t start = note.rfind('(', end) + 1;
      return std::stod(note.substr(start, end - start));
    }
  return 0;
}

bool text_only_causal_lm(const std::string& type) { return type == "qwen3_5" || type == "qwen3_5_moe"; }

bool counted_type(const std::string& type) {
  for (const char* t : {"qwen2_vl", "qwen2_5_vl", "exaone4_5", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe",
                        "mistral3", "lfm2_vl"})
    if (type == t) return true;
  return false;
}

// Every real config of a tower remat counts: its tower exactly, and remat's language model plus the
// tower is every parameter transformers built (Qwen, EXAONE 4.5, Mistral 3 with Pixtral, LFM2-VL).
// Qwen3.5's tower is counted in a note, not held: AutoModelForCausalLM builds its text-only class
// (reports/hf/steps-unseen11-h200.jsonl: Qwen3.6-35B-A3B's runs hold no tower).
TEST(HfVisionTower, QwenPixtralSiglip2RealConfigsAreExact) {
  int checked = 0;
  for (const auto& row : shape_rows()) {
    const std::string file = row.at("file");
    if (!row.contains("outside") || file.rfind("default:", 0) == 0 || !counted_type(row.at("model_type"))) continue;
    const ModelSpec m = model_as_built(test::model(kRoot + "examples/hf/vision/" + file), kHfFramework);
    EXPECT_DOUBLE_EQ(counted_tower(m), tower_of(row)) << file;
    EXPECT_DOUBLE_EQ(model_params(m, m.num_hidden_layers) + counted_tower(m), row.at("params").get<double>()) << file;
    if (text_only_causal_lm(row.at("model_type"))) EXPECT_EQ(m.idle_params, 0) << file;
    ++checked;
  }
  EXPECT_EQ(checked, 12);
}

// Gemma 4 31B-it's tower and embed_vision, every dimension in its file: 575,741,232 parameters, as
// transformers built them (vision-towers-shapes-h200.json). Gemma 4 E2B builds an audio tower too,
// which remat does not count: neither is counted there, and the note says so.
TEST(HfVisionTower, Gemma4VisionTowerWhereNoAudioTower) {
  const std::string dir = kRoot + "tests/data/hf_configs/";
  const ModelSpec m = model_as_built(test::model(dir + "gemma-4-31b-it.json"), kHfFramework);
  EXPECT_DOUBLE_EQ(m.idle_params, 575741232);
  EXPECT_DOUBLE_EQ(counted_tower(m), tower_of(shape_row("../../../tests/data/hf_configs/gemma-4-31b-it.json")));
  const ModelSpec e2b = model_as_built(test::model(dir + "gemma-4-e2b-it.json"), kHfFramework);
  EXPECT_EQ(e2b.idle_params, 0);
}

// Muse-Glimmer-30B's tower, adapter and projection: 1,921,845,760 parameters (its lm_head untied,
// outside the tower), as transformers built them. A position table whose two sizings disagree is not
// counted.
TEST(HfVisionTower, MuseGlimmerTowerWhereItsPositionsAgree) {
  const std::string file = kRoot + "tests/data/hf_configs/muse-glimmer-30b.json";
  const ModelSpec m = model_as_built(test::model(file), kHfFramework);
  EXPECT_DOUBLE_EQ(m.idle_params, 1921845760);
  EXPECT_DOUBLE_EQ(counted_tower(m), tower_of(shape_row("../../../tests/data/hf_configs/muse-glimmer-30b.json")));
  nlohmann::json j = nlohmann::json::parse(test::read_text(file));
  j["vision_config"]["pos_emb_width"] = 16;
  EXPECT_EQ(parse_hf_config(j.dump(), "muse.json").idle_params, 0);
}

// transformers' default configs (file "default:TYPE"): a vision_config that names no key is built
// with the vision config class's defaults. The language model is a real file's, its width the
// default text config's where the projector ends in it (Mistral 3: 5120, LFM2-VL: 2560); the tower
// is compared alone. Mistral3Config builds its default tower (vision_config null) with patch 14, not
// PixtralVisionConfig's 16: the file names it.
TEST(HfVisionTower, DefaultVisionConfigsAreExact) {
  const std::pair<const char*, const char*> kTextFrom[] = {
      {"qwen2_vl", "examples/hf/unseen11/realcfg/olmocr-7b-qwen2vl.json"},
      {"qwen2_5_vl", "tests/data/hf_configs/qwen2.5-vl-7b-instruct.json"},
      {"exaone4_5", "tests/data/hf_configs/exaone-4.5-33b.json"},
      {"qwen3_vl", "tests/data/hf_configs/cosmos-reason2-8b.json"},
      {"qwen3_vl_moe", "tests/data/hf_configs/qwen3-vl-30b-a3b-instruct.json"},
      {"qwen3_5", "tests/data/hf_configs/qwen3.5-9b.json"},
      {"qwen3_5_moe", "tests/data/hf_configs/qwen3.6-35b-a3b.json"},
      {"mistral3", "tests/data/hf_configs/devstral-small-2-24b.json"},
      {"lfm2_vl", "tests/data/hf_configs/lfm2.5-vl-1.6b.json"},
  };
  for (const auto& [type, from] : kTextFrom) {
    nlohmann::json j = nlohmann::json::parse(test::read_text(kRoot + from));
    j["vision_config"] = nlohmann::json::object();
    for (const char* key : {"multimodal_projector_bias", "spatial_merge_size", "vision_feature_layer", "projector_bias",
                            "projector_hidden_size", "projector_use_layernorm", "downsample_factor"})
      j.erase(key);
    if (std::string(type) == "mistral3") j["vision_config"]["patch_size"] = 14;
    if (std::string(type) == "lfm2_vl") j["text_config"]["hidden_size"] = 2560;
    const ModelSpec m = parse_hf_config(j.dump(), std::string(type) + ".json");
    EXPECT_DOUBLE_EQ(counted_tower(m), tower_of(shape_row(std::string("default:") + type))) << type;
  }
}

// Qwen2.5-VL-7B's tower by hand (h 1280, f 3420, 32 blocks, patch 14, temporal 2, merge 2, out
// 3584): the patch Conv3d 3 x 2 x 14 x 14 x 1280 = 1505280; a block: norm1 and norm2 (RMSNorms)
// 2560, qkv 1280 x 3840 + 3840, proj 1280^2 + 1280, gate/up/down with biases 3 x 1280 x 3420 +
// 2 x 3420 + 1280; the merger ln_q 1280, 5120^2 + 5120, 5120 x 3584 + 3584. The file keeps the
// language model's keys at the top: the tower is read beside them.
TEST(HfVisionTower, Qwen25VlByHand) {
  const ModelSpec m = test::model(kRoot + "tests/data/hf_configs/qwen2.5-vl-7b-instruct.json");
  const double block = 2560 + (1280.0 * 3840 + 3840) + (1280.0 * 1280 + 1280) + (3 * 1280.0 * 3420 + 2 * 3420 + 1280);
  const double merger = 1280 + (5120.0 * 5120 + 5120) + (5120.0 * 3584 + 3584);
  EXPECT_DOUBLE_EQ(m.idle_params, 1505280 + 32 * block + merger);
  EXPECT_DOUBLE_EQ(m.idle_params, 676550144.0);
  bool noted = false;
  for (const auto& note : m.notes) noted |= note.find("676550144 parameters") != std::string::npos;
  EXPECT_TRUE(noted);
}

// A Qwen tower's key of the wrong type is refused by its key, never read as its default.
TEST(HfVisionTower, WrongTypedQwenTowerKeyIsRefused) {
  nlohmann::json j =
      nlohmann::json::parse(test::read_text(kRoot + "tests/data/hf_configs/qwen2.5-vl-7b-instruct.json"));
  j["vision_config"]["depth"] = "x";
  EXPECT_NE(test::hf_rejection(j.dump(), "q.json").find("vision_config.depth"), std::string::npos);
  j = nlohmann::json::parse(test::read_text(kRoot + "tests/data/hf_configs/lightonocr-2-1b.json"));
  j["multimodal_projector_bias"] = "no";
  EXPECT_NE(test::hf_rejection(j.dump(), "l.json").find("multimodal_projector_bias"), std::string::npos);
}

// Under --framework hf the tower's weights are held (bf16 here), with no gradient or optimizer
// state; the generic profile plans the language model alone.
TEST(HfVisionTower, HeldAsWeightsUnderHfOnly) {
  const ModelSpec m = test::model(kRoot + "tests/data/hf_configs/gemma-3-4b-it.json");
  TrainingSpec t;
  t.mbs = t.gbs = 1, t.seq = 1024, t.precision = Precision::bf16, t.lora_rank = 16;
  const TrainingSpec hf = apply_framework(t, kHfFramework);
  const HardwareSpec hw = test::hardware("h200");
  ModelSpec without = m;
  without.idle_params = 0;
  const double with_tower = estimate(m, hw, hf, Plan{}, hw.hbm_bytes).stages[0].memory_bytes.weights;
  const double lm_only = estimate(without, hw, hf, Plan{}, hw.hbm_bytes).stages[0].memory_bytes.weights;
  EXPECT_DOUBLE_EQ(with_tower - lm_only, 2 * m.idle_params);
  const TrainingSpec generic = apply_framework(t, kGenericFramework);
  EXPECT_DOUBLE_EQ(estimate(m, hw, generic, Plan{}, hw.hbm_bytes).stages[0].memory_bytes.weights,
                   estimate(without, hw, generic, Plan{}, hw.hbm_bytes).stages[0].memory_bytes.weights);
}

// Sixteen checkpointed LoRA steps over families and modes with 2-4 sequences
// (reports/hf/steps-lora-replay2-h200.jsonl), blind after the replay term: within 1.44%. Gemma 3 4B
// built whole had its bytes before the step at -9.41% before its SigLIP tower was held: -0.12%.
TEST(HfVisionTower, ReplayStepsAcrossFamilies) {
  test::expect_steps_within("steps-lora-replay2-h200.jsonl", "h200", 0.5, 1.5, 16);
}

}  // namespace
}  // namespace remat
