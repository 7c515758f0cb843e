// Layouts that cannot fit are results, not errors (issue 13): plan, sweep,
// simulate, scenarios, estimate and compare exit 1 (or 0 where some plan
// fits) with finite numbers in --json, never 2 or 3. The smallest footprints
// asserted here are derived by hand from the parameter counts.
#include <gtest/gtest.h>

#include <unistd.h>
#include <sstream>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shell_run.hpp"
#include "test_helpers.hpp"

namespace {

using json = nlohmann::json;

struct CliRun {
  int exit_code = -1;
  std::string table;  // stdout
  std::string err;    // stderr
  json report;        // --json FILE
};

CliRun run(const std::vector<std::string>& args) {
  static int n = 0;
  // ctest runs each test in its own process, several at once
  const std::string base =
      testing::TempDir() + "remat_infeasible_" + std::to_string(getpid()) + "_" + std::to_string(n++);
  std::vector<std::string> full = args;
  full.insert(full.end(), {"--json", base + ".json"});
  const auto r = remat::test::run_shell(remat::test::remat_command(full) + " 2>" + base + ".err");
  CliRun out;
  out.exit_code = r.exit_code;
  out.table = r.out;
  out.err = remat::test::read_text(base + ".err");
  const std::string text = remat::test::read_text(base + ".json");
  out.report = json::parse(text, nullptr, false);
  std::remove((base + ".json").c_str());
  std::remove((base + ".err").c_str());
  return out;
}

// Paths of every null (what nlohmann writes for inf and NaN) or non-finite number.
void non_finite(const json& j, const std::string& path, std::vector<std::string>& bad) {
  if (j.is_null() || (j.is_number_float() && !std::isfinite(j.get<double>()))) bad.push_back(path);
  if (j.is_object())
    for (const auto& [k, v] : j.items()) non_finite(v, path + "." + k, bad);
  if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) non_finite(j[i], path + "[" + std::to_string(i) + "]", bad);
}

// Exit code as expected, a report that parses, nothing non-finite in it, nothing on stderr
// but notes (e.g. the uneven pipeline split used).
CliRun expect_result(const std::vector<std::string>& args, int exit_code) {
  std::string cmd;
  for (const auto& a : args) cmd += a + " ";
  CliRun r = run(args);
  EXPECT_EQ(r.exit_code, exit_code) << cmd << "\n" << r.err;
  EXPECT_TRUE(r.report.is_object()) << cmd;
  std::vector<std::string> bad;
  non_finite(r.report, "", bad);
  EXPECT_TRUE(bad.empty()) << cmd << ": " << (bad.empty() ? "" : bad.front());
  std::istringstream err(r.err);
  for (std::string line; std::getline(err, line);) EXPECT_EQ(line.rfind("note: ", 0), 0u) << cmd << ": " << line;
  return r;
}

constexpr int64_t kA100Budget = 77LL << 30;  // 80 GiB less the 3 GiB reserve

const std::vector<std::string> kV3Ep1 = {
    "--model", "deepseek-v3", "--pp", "16",         "--mbs",
    "1",       "--seq",       "4096", "--hardware", "a100-80gb-pcie"};  // tp 8, dp 1, ep 1: 256 experts per GPU

std::vector<std::string> with(std::string sub, std::vector<std::string> args, std::vector<std::string> more = {}) {
  args.insert(args.begin(), std::move(sub));
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// DeepSeek-V3, tp 8, ep 1, stage 1 = layers 4-7 (all MoE). Per layer, on one tp rank:
//   MLA: q down 7168*1536 + norm 1536 + q up 1536*128*192/8 = 15,730,176
//        kv down 7168*576 + norm 512 + kv up 512*128*256/8 = 6,226,432
//        o 128*128*7168/8 = 14,680,064; input norm 7168 -> 36,643,840
//   dense rest: ffn norm 7168 + router 7168*256 + shared 3*7168*2048/8 = 7,347,200 -> 43,991,040 dense
//   routed experts (ep 1: all 256): 3*7168*2048*256 = 11,274,289,152
// 4 layers: dense 175,964,160, expert 45,097,156,608, total 45,273,120,768 parameters.
// weights 2 B, fp32 grads 4 B, optimizer 12 B sharded over dp 1 (dense) and dp*tp/ep = 8 (experts).
TEST(Infeasible, DeepSeekV3Ep1PlanExitsOneWithTheSmallestFootprint) {
  const CliRun r = expect_result(with("plan", kV3Ep1), 1);
  const json& j = r.report;
  EXPECT_FALSE(j["fits"].get<bool>());
  const json& s = j["smallest_footprint"];
  EXPECT_EQ(s["stage"], 1);
  EXPECT_EQ(s["memory_bytes"]["weights"], 2 * 45273120768LL);
  EXPECT_EQ(s["memory_bytes"]["gradients"], 4 * 45273120768LL);
  EXPECT_EQ(s["memory_bytes"]["optimizer"], 12 * 175964160LL + 45097156608LL * 12 / 8);
  EXPECT_EQ(s["budget_bytes"], kA100Budget);
  EXPECT_EQ(s["cause"], "static_state");
  EXPECT_EQ(s["over_budget_bytes"].get<int64_t>(), s["memory_bytes"]["peak"].get<int64_t>() - kA100Budget);
  EXPECT_EQ(s["candidate"]["mode"], "per-layer");  // the per-layer search keeps the fewest bytes
  EXPECT_EQ(s["why"],
            "on stage 1 weights 84.33 + gradients 168.66 + optimizer state 64.97 GiB = 317.95 GiB alone exceed the "
            "budget");
  // the report's stages are the smallest footprint's, estimated: stage 1 as above
  ASSERT_EQ(j["stages"].size(), 16u);
  EXPECT_EQ(j["stages"][1]["memory_bytes"]["peak"], s["memory_bytes"]["peak"]);
  EXPECT_EQ(j["peak_memory_bytes"], s["memory_bytes"]["peak"]);
  EXPECT_NE(r.table.find("no plan fits: the smallest footprint searched (per-layer mixed) peaks at 318.46 GiB on "
                         "stage 1, over the budget of 77.00 GiB: on stage 1 weights 84.33 + gradients 168.66 + "
                         "optimizer state 64.97 GiB = 317.95 GiB alone exceed the budget\n"),
            std::string::npos)
      << r.table;
  EXPECT_NE(r.table.find("smallest footprint (per-layer, mixed): stage 1 peaks at 318.46 GiB, 241.46 GiB over the "
                         "budget of 77.00 GiB"),
            std::string::npos);
  for (const auto& c : j["rejected"]) EXPECT_TRUE(c["time_s"].is_number()) << c.dump();
}

// DeepSeek-V2 (60 layers over 16 stages: stage 1 = layers 4-7, MoE), tp 8, ep 1. Per layer:
//   MLA: 5120*1536 + 1536 + 1536*128*192/8 + 5120*576 + 512 + 512*128*256/8 + 128*128*5120/8 + 5120 = 28,122,112
//   ffn norm 5120 + router 5120*160 + 2 shared 3*5120*1536*2/8 = 6,722,560 -> dense 34,844,672
//   routed experts 3*5120*1536*160 = 3,774,873,600
TEST(Infeasible, DeepSeekV2Ep1PlanExitsOne) {
  std::vector<std::string> args = kV3Ep1;
  args[1] = "deepseek-v2";
  const CliRun r = expect_result(with("plan", args), 1);
  const json& s = r.report["smallest_footprint"];
  EXPECT_EQ(s["stage"], 1);
  EXPECT_EQ(s["memory_bytes"]["weights"], 2 * 4 * (34844672LL + 3774873600LL));
  EXPECT_EQ(s["memory_bytes"]["optimizer"], 12 * 4 * 34844672LL + 4 * 3774873600LL * 12 / 8);
  EXPECT_EQ(s["cause"], "static_state");
  EXPECT_NE(r.table.find("alone exceed the budget"), std::string::npos);
}

// LLaMA3-70B, tp 8 pp 4, only the per-layer search without offload (the
// issue's third command). Stage 0 = embedding + layers 0-19; per layer
// (8192*(64+16)*128 + 64*128*8192)/8 + 8192 + 8192 + 3*8192*28672/8 = 106,971,136,
// embedding 128256*8192/8 = 131,334,144: 2,270,756,864 parameters, 18 B each
// (38.07 GiB). Its smallest footprint keeps every layer's input (full
// recompute): 2.50 GiB for 4 microbatches in flight and a 0.82 GiB layer
// backward on top, 41.39 GiB. Three budgets, three causes.
TEST(Infeasible, PerLayerOnlyNamesWhatExceedsTheBudget) {
  const int64_t params = 2270756864LL;
  for (const auto& [gib, cause] : std::vector<std::pair<std::string, std::string>>{
           {"30", "static_state"}, {"38.5", "transient"}, {"40", "activations"}}) {
    const CliRun r =
        expect_result({"plan", "--no-offload", "--no-uniform-r", "--no-per-stage-r", "--memory-budget-GiB", gib}, 1);
    const json& s = r.report["smallest_footprint"];
    EXPECT_EQ(s["stage"], 0) << gib;
    EXPECT_EQ(s["memory_bytes"]["weights"], 2 * params) << gib;
    EXPECT_EQ(s["memory_bytes"]["gradients"], 4 * params) << gib;
    EXPECT_EQ(s["memory_bytes"]["optimizer"], 12 * params) << gib;
    EXPECT_EQ(s["in_flight_microbatches"], 4);
    EXPECT_EQ(s["transient"], "layer_backward");
    EXPECT_EQ(s["cause"], cause) << gib;
    // stage 0 at its smallest; stages that fit take their fastest assignment
    EXPECT_EQ(s["candidate"]["layer_plan"].get<std::string>().rfind("0-19:full;", 0), 0u) << gib;
    EXPECT_EQ(r.report["frontier"].size(), 1u);
  }
}

TEST(Infeasible, SweepCountsLayoutsThatCannotFitByCause) {
  // tp 8 over 16 GPUs: pp 1 (dp 2) and pp 2 (dp 1), ep 1: every layout holds all 256 experts
  CliRun r = expect_result({"sweep", "--model", "deepseek-v3", "--gpus", "16", "--tps", "8", "--eps", "1", "--mbss",
                            "1", "--strategies", "full", "--per-layer"},
                           1);
  EXPECT_EQ(r.report["evaluated"], 2);
  EXPECT_EQ(r.report["feasible"], 0);
  EXPECT_EQ(
      r.report["infeasible_by_reason"],
      json({{"does not fit the memory budget: weights, gradients and optimizer state alone exceed the budget", 2}}));
  // no tp of 2 or 4 divides 3 GPUs
  r = expect_result({"sweep", "--gpus", "3", "--tps", "2,4"}, 1);
  EXPECT_EQ(r.report["evaluated"], 0);
  EXPECT_EQ(r.report["gpus_without_layout"], json({3}));
  EXPECT_NE(r.table.find("--gpus 3: no layout of the swept tp, pp and ep sizes"), std::string::npos);
  // pp = layers: one LLaMA3-8B layer per GPU fits without recompute; full's best plan recomputes
  // nothing, so it is the none row, listed once
  r = expect_result({"sweep", "--model", "llama3-8b", "--gpus", "32", "--tps", "1", "--pps", "32", "--mbss", "1",
                     "--strategies", "none,full"},
                    0);
  EXPECT_EQ(r.report["feasible"], 1);
}

TEST(Infeasible, ScenariosSimulateCompareEstimateExitOne) {
  CliRun r = expect_result(with("scenarios", kV3Ep1), 1);
  for (const auto& sc : r.report["scenarios"])
    for (const auto& row : sc["rows"]) EXPECT_FALSE(row["fits"].get<bool>());
  EXPECT_EQ(r.report["scenarios"][1]["rows"][1]["reason"].get<std::string>().rfind("no R fits; lowest peak at R = ", 0),
            0u);
  r = expect_result(with("simulate", kV3Ep1), 1);
  EXPECT_FALSE(r.report["simulation"]["fits"].get<bool>());
  EXPECT_EQ(r.report["simulation"]["budget_bytes"], kA100Budget);
  EXPECT_NE(r.table.find("stage 1 does not fit: peak "), std::string::npos);
  r = expect_result(with("compare", kV3Ep1), 1);
  EXPECT_NE(r.table.find("no strategy fits"), std::string::npos);
  expect_result(with("estimate", kV3Ep1, {"--strategy", "full"}), 1);
  // the default layout fits under full recompute
  r = expect_result({"simulate", "--strategy", "full"}, 0);
  EXPECT_TRUE(r.report["simulation"]["fits"].get<bool>());
}

TEST(Infeasible, BudgetsOfOneGiBAndBelow) {
  CliRun r = expect_result({"plan", "--memory-budget-GiB", "0.5"}, 1);
  EXPECT_EQ(r.report["smallest_footprint"]["cause"], "static_state");
  EXPECT_EQ(r.report["smallest_footprint"]["budget_bytes"], 1LL << 29);
  expect_result({"plan", "--model", "deepseek-v3", "--num-layers", "63", "--tp", "1", "--pp", "16", "--dp", "128",
                 "--ep", "64", "--mbs", "1", "--memory-budget-GiB", "1"},
                1);
  expect_result({"plan", "--memory-budget-GiB", "1", "--no-per-layer"}, 1);
  r = expect_result({"scenarios", "--memory-budget-GiB", "1"}, 1);
  EXPECT_EQ(r.report["scenarios"][0]["rows"][0]["reason"],
            "at R = 0: stage 0 peaks at 80.31 GiB, over the budget of 1.00 GiB");
  expect_result({"sweep", "--gpus", "32", "--mbss", "1", "--memory-budget-GiB", "1"}, 1);
}

TEST(Infeasible, PipelineAsDeepAsTheModelAndHugeMicrobatches) {
  // DeepSeek-V3, one layer per stage, ep 1: a MoE layer's 256 experts alone are 21 GiB of weights
  expect_result({"plan", "--model", "deepseek-v3", "--tp", "1", "--pp", "61", "--dp", "1", "--ep", "1", "--mbs", "1"},
                1);
  // LLaMA3-70B, one layer per stage on tp 8: about 2 GiB per GPU
  for (const char* sub : {"plan", "compare", "scenarios"})
    expect_result({sub, "--model", "llama3-70b", "--tp", "8", "--pp", "80", "--mbs", "1"}, 0);
  // mbs 64 of 1M tokens: one layer's input alone is 64 * 2^20 * 4096 * 2 B = 512 GiB
  const std::vector<std::string> huge = {"--model", "llama3-8b", "--tp", "1",     "--pp",
                                         "32",      "--mbs",     "64",   "--seq", "1048576"};
  for (const char* sub : {"plan", "estimate", "compare", "scenarios", "simulate"}) expect_result(with(sub, huge), 1);
}

TEST(Infeasible, NothingToSearchIsBadInput) {
  const CliRun r = run({"plan", "--no-uniform-r", "--no-per-stage-r", "--no-per-layer"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: command line: --no-uniform-r --no-per-stage-r --no-per-layer: leave nothing to search\n");
}

// The RTX 3090 file has no network (network_GBps 0): 16 GPUs in pipeline
// would send between nodes over a zero-bandwidth link (an infinite time before).
TEST(Infeasible, LayoutNeedingANetworkTheHardwareLacksIsBadInput) {
  const CliRun r = run({"estimate", "--model", "llama3-8b", "--tp", "8", "--pp", "2", "--hardware", "rtx-3090"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "error: hardware/rtx-3090.yaml (built-in): network_GBps: none, but pipeline sends among tp x pp x dp = 16 "
            "GPUs would cross nodes of 8 GPUs (got 0)\n");
  // sweep counts such layouts among the infeasible: tp 1, 2, 4, 8 over 16 GPUs with pp > 1
  const CliRun s = expect_result({"sweep", "--model", "llama3-8b", "--gpus", "16", "--hardware", "rtx-3090", "--mbss",
                                  "1", "--strategies", "full"},
                                 0);
  // pp divisors of 16/tp up to 32 layers, pp > 1: tp 1: 4, tp 2: 3, tp 4: 2, tp 8: 1
  EXPECT_EQ(s.report["infeasible_by_reason"]
                    ["network_GBps none, but pipeline sends among tp x pp x dp = 16 GPUs would cross nodes of 8 GPUs"],
            10);
}

}  // namespace
