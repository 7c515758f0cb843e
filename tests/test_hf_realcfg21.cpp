// Real-config set 21 (examples/hf/unseen21/realcfg/, 30 files a helper collected from aiconfigurator,
// LLM-TPU, tt-forge-models and an AXERA port; two model types new to the corpus, minimax_m3_vl and
// deepseek_v4's Pro): of the 23 transformers 5.17 builds without remote code
// (param-counts-realcfg21-h200.jsonl), 20 load to the parameter, none is silently wrong.
#include <gtest/gtest.h>

#include <string>

#include "hf_measured.hpp"

namespace remat {
namespace {

// DeepSeek-V4 Flash and Pro and MiniMax-M3's vision-language model are refused with their constructs
// named; the flat Step-3.7-Flash file is read at the top, as set 16's was (81 x 4096 x 2 more for its
// larger vocabulary than transformers' default text config).
TEST(HfRealConfigs21, CountsAsTransformersBuildsThem) {
  const auto [exact, refused] =
      test::tally_real_configs("21",
                               [](const std::string& why) {
                                 const bool named = why.find("compressed sparse attention") != std::string::npos ||
                                                    why.find("block-sparse attention") != std::string::npos;
                                 EXPECT_TRUE(named) << why;
                               },
                               {{"step-3.7-flash.json", 195843833088.0 + 81 * 4096 * 2}});
  EXPECT_EQ(exact, 20);
  EXPECT_EQ(refused, 3);
}

}  // namespace
}  // namespace remat
