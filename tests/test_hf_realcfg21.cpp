// Real-config set 21 (examples/hf/unseen21/realcfg/, 30 files a helper collected from aiconfigurator,
// LLM-TPU, tt-forge-models and an AXERA port; two model types new to the corpus, minimax_m3_vl and
// deepseek_v4's Pro): of the 23 transformers 5.17 builds without remote code
// (param-counts-realcfg21-h200.jsonl), 22 load to the parameter (20 before DeepSeek-V4 was built),
// none is silently wrong.
#include <gtest/gtest.h>

#include <string>

#include "hf_measured.hpp"

namespace remat {
namespace {

// DeepSeek-V4 Flash and Pro load to the parameter (284,332,230,231 and 1,572,997,179,491); MiniMax-M3's
// vision-language model is refused with its construct named; the flat Step-3.7-Flash file is read at the top, as set
// 16's was (81 x 4096 x 2 more for its larger vocabulary than transformers' default text config).
TEST(HfRealConfigs21, CountsAsTransformersBuildsThem) {
  const auto [exact, refused] = test::tally_real_configs(
      "21", [](const std::string& why) { EXPECT_NE(why.find("block-sparse attention"), std::string::npos) << why; },
      {{"step-3.7-flash.json", 195843833088.0 + 81 * 4096 * 2}});
  EXPECT_EQ(exact, 22);
  EXPECT_EQ(refused, 1);
}

}  // namespace
}  // namespace remat
