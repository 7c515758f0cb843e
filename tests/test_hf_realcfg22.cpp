// Real-config set 22 (examples/hf/unseen22/realcfg/, 30 files a helper collected from aiconfigurator,
// sgl-project/ome, LLM-TPU, LLMServingSim, inference-sim and a course repository's Hub downloads):
// of the 27 transformers 5.17 builds without remote code (param-counts-realcfg22-h200.jsonl), 26
// loaded to the parameter as first loaded; ERNIE-4.5-21B-A3B was 1,728 short (27 MoE layers' score
// correction bias, a parameter that never trains) and is exact now. None refused.
// Magistral Small 2509's count here is its text_config built alone (MistralForCausalLM, an untied
// head); the harness builds the file's Mistral3ForConditionalGeneration, whose config class ties
// the head where the file does not say (probes/cut_counts.py, steps-random-blind7-h200.jsonl), and
// remat counts that model: 671,088,640 fewer.
#include <gtest/gtest.h>

#include <string>

#include "hf_measured.hpp"

namespace remat {
namespace {

TEST(HfRealConfigs22, CountsAsTransformersBuildsThem) {
  const auto [exact, refused] =
      test::tally_real_configs("22", [](const std::string& why) { ADD_FAILURE() << "refused: " << why; },
                               {{"magistral-small-2509.json", 23572403200.0 - 671088640.0}});
  EXPECT_EQ(exact, 26);
  EXPECT_EQ(refused, 0);
}

}  // namespace
}  // namespace remat
