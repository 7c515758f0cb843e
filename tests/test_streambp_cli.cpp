// `remat plan --maximize`, `estimate --strategy streambp` and the issue-6 flags from the command line.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shell_run.hpp"

namespace {

struct Output {
  int exit_code = -1;
  std::string text;
};

// Runs remat; stdout, or stderr with `errors`.
Output remat(const std::string& args, bool errors = false) {
  const auto r = remat::test::run_shell(remat::test::shell_quote(REMAT_BINARY) + " " + args +
                                        (errors ? " 2>&1 1>/dev/null" : " 2>/dev/null"));
  return {r.exit_code, r.out};
}

const std::string kOneGpu = "--model qwen3-8b --hardware rtx-3090 --tp 1 --pp 1 --mbs 1 --lora-rank 32";

TEST(StreamBpCli, MaximizeSeqOrdersTheStrategies) {
  const Output o = remat("plan " + kOneGpu + " --maximize seq --format json");
  ASSERT_EQ(o.exit_code, 0) << o.text;
  const auto j = nlohmann::json::parse(o.text);
  ASSERT_EQ(j["results"].size(), 3u);
  EXPECT_EQ(j["results"][0]["strategy"], "none");
  EXPECT_EQ(j["results"][1]["strategy"], "full");
  EXPECT_EQ(j["results"][2]["strategy"], "streambp");
  const int64_t none = j["results"][0]["value"], full = j["results"][1]["value"], sbp = j["results"][2]["value"];
  EXPECT_GT(none, 0);
  EXPECT_GT(full, none);
  EXPECT_GT(sbp, full);
  EXPECT_DOUBLE_EQ(j["streambp_over_full"].get<double>(), double(sbp) / double(full));
  // the longest sequence fits, one more token does not
  for (int64_t seq : {full, full + 1}) {
    const Output e = remat("estimate " + kOneGpu + " --strategy full --seq " + std::to_string(seq) + " --format json");
    EXPECT_EQ(nlohmann::json::parse(e.text)["fits"].get<bool>(), seq == full) << seq;
  }
}

// --framework hf runs none and full only: --maximize prices those two and says StreamBP is not run,
// and the longest sequence is the one `estimate --framework hf` fits.
TEST(StreamBpCli, MaximizeUnderHfPricesOnlyWhatTheProfileRuns) {
  const std::string hf = kOneGpu + " --framework hf --precision bf16 --replay early-stop";
  const Output o = remat("plan " + hf + " --maximize seq --format json");
  ASSERT_EQ(o.exit_code, 0) << o.text;
  const auto j = nlohmann::json::parse(o.text);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][1]["strategy"], "full");
  EXPECT_FALSE(j.contains("streambp_over_full"));
  const int64_t full = j["results"][1]["value"];
  for (int64_t seq : {full, full + 1}) {
    const Output e = remat("estimate " + hf + " --strategy full --seq " + std::to_string(seq) + " --format json");
    EXPECT_EQ(nlohmann::json::parse(e.text)["fits"].get<bool>(), seq == full) << seq;
  }
  EXPECT_NE(remat("plan " + hf + " --maximize seq").text.find("streambp: not run by the hf profile"),
            std::string::npos);
}

TEST(StreamBpCli, MaximizeMbsAndZero2) {
  const Output o = remat(
      "plan --model qwen3-8b --hardware a800-80gb --tp 1 --pp 1 --dp 8 --zero-stage 2 --seq 4096 "
      "--precision bf16 --maximize mbs --format json");
  ASSERT_EQ(o.exit_code, 0) << o.text;
  const auto j = nlohmann::json::parse(o.text);
  EXPECT_GE(j["results"][2]["value"].get<int64_t>(), j["results"][1]["value"].get<int64_t>());
}

TEST(StreamBpCli, BadValuesNameTheFlag) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"estimate --streambp-chunks 0", "error: command line: --streambp-chunks: must be at least 1 (got 0)\n"},
      {"estimate --lm-head-chunks -3", "error: command line: --lm-head-chunks: must be at least 1 (got -3)\n"},
      {"estimate --objective ppo", "error: command line: --objective: must be sft, grpo or dpo (got ppo)\n"},
      {"estimate --objective grpo --grpo-group 0", "error: command line: --grpo-group: must be at least 1 (got 0)\n"},
      {"estimate --lora-rank -1", "error: command line: --lora-rank: must be at least 0 (got -1)\n"},
      {"plan --maximize tokens", "error: command line: --maximize: must be seq or mbs (got tokens)\n"},
  };
  for (const auto& [args, message] : cases) {
    const Output o = remat(args, true);
    EXPECT_EQ(o.exit_code, 2) << args;
    EXPECT_EQ(o.text, message) << args;
  }
}

TEST(StreamBpCli, EstimateStreamBpRuns) {
  const Output o = remat("estimate " + kOneGpu +
                         " --seq 8192 --strategy streambp --streambp-chunks 16 "
                         "--lm-head-chunks 82 --objective dpo --format json");
  ASSERT_EQ(o.exit_code, 0) << o.text;
  const auto j = nlohmann::json::parse(o.text);
  EXPECT_EQ(j["training"]["streambp_chunks"], 16);
  EXPECT_EQ(j["training"]["objective"], "dpo");
  EXPECT_EQ(j["plan"]["strategy"], "streambp");
}

}  // namespace
