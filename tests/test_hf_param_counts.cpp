// Every measured hf step records the parameters its model holds (model.parameters()) and those
// requiring a gradient; remat's count of the same model (the cut language model, the encoders held
// beside it, PEFT's adapters trained and held) must equal both. Two misses this check would have
// caught (random blind sets 4 and 5): a Gemma 4 cut ends on a full-attention layer (55,050,752
// parameters short at one layer of Gemma-4-31B), and a Mistral 3 file without vision_config builds
// the default Pixtral tower and projector (428,472,320 parameters uncounted).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <utility>

#include "hf_measured.hpp"

namespace remat {
namespace {

// Configs whose counts differ by a few parameters that carry no figure remat prices to 0.01%:
// {remat's total - the run's, remat's trained - the run's}, as measured.
const std::map<std::string, std::vector<std::pair<double, double>>> kKnownDifferences = {
    {"examples/hf/classic/openai-gpt-shape.json", {{1536, 1536}}},
    {"examples/hf/new_attention/laguna-4l.json", {{-768, 0}}},
    {"tests/data/hf_configs/laguna-s-2.1-fp8.json", {{-256, 0}, {-512, 0}}},
    {"examples/hf/new_attention/mimo-v2-flash-3l.json", {{-128, 0}}},
    {"examples/hf/new_attention/mimo-v2-flash-64experts-3l.json", {{-128, -128}}},
    {"examples/hf/step/step3p5-flash-4l-shape.json", {{-652186, -652186}, {-655258, -3072}}},
    {"examples/hf/step/step3p5-flash-6l-shape.json", {{-652186, -652186}, {-655258, -3072}}},
    {"examples/hf/unseen9/afmoe-4l.json", {{-192, 0}}},
    {"examples/hf/unseen9/apertus-4l.json", {{-8, -8}, {-8, 0}}},
    // FuyuForCausalLM's vision_embed_tokens (30 x 30 x 3 -> 4096, with bias): held, never run
    {"tests/data/hf_configs/fuyu-8b.json", {{-11063296, 0}}},
    // Qwen2-Audio's encoder keeps its sinusoidal positions (1500 x 1280) as a frozen parameter
    {"tests/data/hf_configs/qwen2-audio-7b-instruct.json", {{0, 1920000}}},
};

std::string hardware_of(const std::string& file) {
  return file.find("h100") != std::string::npos ? "h100-sxm" : "h200";
}

TEST(HfParamCounts, EveryMeasuredStepHoldsTheParametersRematCounts) {
  const std::filesystem::path dir = std::filesystem::path(REMAT_TEST_DATA) / ".." / "reports" / "hf";
  int recorded = 0, equal = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("steps-", 0) != 0 || entry.path().extension() != ".jsonl") continue;
    for (const HfComparison& c : test::measured_hf_steps(name, hardware_of(name))) {
      if (!c.params_recorded()) continue;
      ++recorded;
      if (c.params_equal()) {
        ++equal;
        continue;
      }
      const std::pair<double, double> diff{c.predicted_params - c.measured.params,
                                           c.predicted_trainable_params - c.measured.trainable_params};
      const auto known = kKnownDifferences.find(c.measured.config);
      const bool listed = known != kKnownDifferences.end() &&
                          std::find(known->second.begin(), known->second.end(), diff) != known->second.end();
      EXPECT_TRUE(listed) << name << " " << c.measured.case_name << ": remat " << c.predicted_params << " / "
                          << c.predicted_trainable_params << ", the run " << c.measured.params << " / "
                          << c.measured.trainable_params;
    }
  }
  EXPECT_GE(recorded, 1509);
  EXPECT_GE(equal, 1469);
}

}  // namespace
}  // namespace remat
