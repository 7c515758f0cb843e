// PEFT's all-linear on multimodal wrappers adapts their towers' linear modules too, which a text-only
// step holds and never trains. examples/hf/all_linear/tower_probe.py applied it to 20 wrappers as
// transformers 5.17 builds them (tower-probe-h200.jsonl: each adapted module outside the language
// model's layers, and PEFT's trainable count); 13 steps were written and priced before they ran
// (examples/hf/vision/cases_all_linear_blind.json, predicted_all_linear_blind.tsv).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "hf_measured.hpp"
#include "remat/cost/streambp.hpp"
#include "remat/spec/lora_placement.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kRoot = std::string(REMAT_TEST_DATA) + "/../";

// Every wrapper the probe built: remat's tower adapters at rank 16 equal to the adapters PEFT put
// outside the language model's layers, and with the layers' adapters equal to PEFT's trainable count;
// or all-linear refused, naming what remat lacks.
TEST(HfTowerAdapters, EqualToPeftsOnEveryProbedWrapper) {
  std::ifstream lines(kRoot + "reports/hf/tower-probe-h200.jsonl");
  std::set<std::string> exact, refused;
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json row = nlohmann::json::parse(line);
    const std::string name = row.at("name").get<std::string>();
    if (row.contains("error")) continue;  // transformers refused the cut (Gemma 4 E2B: a sliding layer last)
    ModelSpec m = test::model(kRoot + row.at("config").get<std::string>());
    m.set_layer_count(row.at("layers").get<int64_t>());
    const ResolvedLoraTargets resolved = resolve_lora_targets(m, {"all-linear"});
    if (!resolved.refusal.empty()) {
      refused.insert(name);
      continue;
    }
    const double towers = 16 * resolved.targets.tower_adapter_width;
    EXPECT_DOUBLE_EQ(towers, row.at("outside_adapter_params").get<double>()) << name;
    TrainingSpec t = test::hf_training(1024, 16);
    t.lora_targets = resolved.targets;
    double layers = 0;
    for (int64_t g = 0; g < m.num_hidden_layers; ++g)
      layers += lora_layer_params(m, t, 1, g) + lora_held_layer_params(m, t, g);
    // the cuts of a flat LLaVA file (LlavaConfig builds its default 32-layer text_config) and of
    // Gemma 4 31B (transformers makes the last of the 2 layers global) are not remat's layers
    if (name != "llava_orig" && name != "gemma4_31b")
      EXPECT_DOUBLE_EQ(towers + layers, row.at("trainable_params").get<double>()) << name;
    exact.insert(name);
  }
  // Qwen3-VL-MoE's among them: PEFT adapts neither its router nor its stacked experts
  EXPECT_EQ(exact.size(), 19u);
  EXPECT_TRUE(refused.empty());
}

// Llama 3.2 Vision's cross-attention layer (layer 3 of the 6-layer cut): PEFT puts adapters on its
// cross_attn.q/k/v/o_proj and its MLP by the same names (1,310,720 at rank 16 of all-linear's 5,242,880
// on 4 layers: peft-all-linear-types-h200.jsonl); the skipped layer never trains them. Held, they bring
// the bytes before the 90B's MLP-adapter step from -0.49% to within 0.01% (steps-unseen16-h200.jsonl).
TEST(HfTowerAdapters, MllamaCrossLayersHoldTheirAdapters) {
  const ModelSpec m = test::model(kRoot + "examples/hf/mllama/llama-3.2-11b-vision-6l.json");
  ASSERT_TRUE(m.layer_is_skipped_cross_attention(3));
  TrainingSpec t = test::hf_training(1024, 16);
  t.lora_targets = resolve_lora_targets(m, {"all-linear"}).targets;
  EXPECT_DOUBLE_EQ(lora_layer_params(m, t, 1, 3), 0);
  EXPECT_DOUBLE_EQ(lora_held_layer_params(m, t, 3),
                   16.0 * (2 * (4096 + 4096) + 2 * (4096 + 1024) + 3 * (4096 + 14336)));
  int steps = 0;
  for (const HfComparison& c : test::measured_hf_steps("steps-unseen16-h200.jsonl", "h200"))
    if (c.measured.case_name.starts_with("llama-3.2-90b-vision-instruct-4l-lora")) {
      EXPECT_LT(std::abs(c.before_error_pct()), 0.01) << c.measured.case_name;
      ++steps;
    }
  EXPECT_EQ(steps, 1);
}

// LLaVA 1.5 (CLIP), Gemma 3 (SigLIP; also q_proj and v_proj alone, which reach the tower's too),
// Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Mistral 3 (Pixtral: Devstral 2, LightOnOCR 2), LFM2.5-VL (SigLIP2),
// GLM-4.1V, Voxtral, Qwen2-Audio and Gemma 4 31B; none, non-reentrant and reentrant; bf16 and mixed;
// SFT, DPO and GRPO. As first compared 12 were within 0.36%; Qwen2-Audio's was +18.5%: its class
// computes its own loss on the bf16 logits (ModelLogits::own_bf16_loss), now -0.30%. GLM-4.1V's third
// non-reentrant step raised SystemError in torch's replay; its second is compared.
TEST(HfTowerAdapters, BlindVisionSteps) {
  test::expect_steps_within("steps-vision-all-linear-blind-h200.jsonl", "h200", 0.4, 0.4, 13);
}

// A second blind set after all-linear was priced on Llama 3.2 Vision, Llama 4 and Emu3: Emu3, Llama 3.2
// Vision (reentrant, mixed, 8k), Qwen2.5-VL (mixed DPO), LFM2.5-VL (reentrant, rank 32, 8k), Gemma 3 27B
// (GRPO): within 0.81% as first compared. Llama 4 Scout's step raised in PEFT's router adapter (its
// router returns a tuple), as PhiMoE's did; remat refuses it now. The all-linear step on Llama 3.2
// Vision measured while remat refused it (steps-all-linear-mllama-h200.jsonl): +0.57%.
TEST(HfTowerAdapters, BlindAllLinearSteps2) {
  test::expect_steps_within("steps-vision-all-linear-blind2-h200.jsonl", "h200", 0.3, 0.9, 5);
  test::expect_steps_within("steps-all-linear-mllama-h200.jsonl", "h200", 0.1, 0.6, 1);
  const ModelSpec scout = test::model(kRoot + "examples/hf/unseen15/realcfg/llama-4-scout-fp8-dynamic-isim.json");
  EXPECT_NE(resolve_lora_targets(scout, {"all-linear"}).refusal.find("raises in the forward pass"), std::string::npos);
}

// MiniCPM-V 4.6 (its SigLIP layers, window merger and downsample MLPs) and MuSE-Glimmer (its patch
// embedding, layers, adapter and projection) list their towers' modules now (examples/hf/tower_lora/):
// all-linear non-reentrant and reentrant DPO, q_proj and v_proj reaching the tower's and the window
// merger's, and fc1 and fc2, which reach only the tower's, beside down_proj. PEFT's trainable count
// equals remat's on each; peaks within 0.74% as first compared.
TEST(HfTowerAdapters, BlindTowerSteps) {
  test::expect_steps_within("steps-tower-lora-h200.jsonl", "h200", 0.7, 0.75, 4);
  std::ifstream lines(kRoot + "reports/hf/steps-tower-lora-h200.jsonl");
  int counted = 0;
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json row = nlohmann::json::parse(line);
    if (row.at("step") != 3) continue;
    ModelSpec m = test::model(kRoot + row.at("config").get<std::string>());
    m.set_layer_count(row.at("num_hidden_layers").get<int64_t>());
    const ResolvedLoraTargets resolved = resolve_lora_targets(m, row.at("lora_targets"));
    TrainingSpec t = test::hf_training(1024, row.at("lora_rank").get<int64_t>());
    t.lora_targets = resolved.targets;
    double params = double(t.lora_rank) * resolved.targets.tower_adapter_width;
    for (int64_t g = 0; g < m.num_hidden_layers; ++g)
      params += lora_layer_params(m, t, 1, g) + lora_held_layer_params(m, t, g);
    EXPECT_DOUBLE_EQ(params, row.at("trainable_params").get<double>()) << row.at("case");
    ++counted;
  }
  EXPECT_EQ(counted, 4);
}

}  // namespace
}  // namespace remat
