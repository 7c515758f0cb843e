// The remat binary: the bad-input catalogue, exit codes, deterministic reports.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "shell_run.hpp"

namespace {

using Result = remat::test::ShellResult;

// Runs remat with `args`; captures stderr (or stdout with `stdout_too`).
Result run(const std::vector<std::string>& args, bool capture_stdout = false) {
  using namespace remat::test;
  return run_shell(remat_command(args) + (capture_stdout ? " 2>/dev/null" : " 2>&1 1>/dev/null"));
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

TEST(BadInputCatalogue, EveryCaseExactMessageAndExitCode) {
  const std::string dir = std::string(REMAT_TEST_DATA) + "/bad_inputs";
  std::ifstream in(dir + "/cases.json");
  ASSERT_TRUE(in) << "missing " << dir << "/cases.json";
  const auto cases = nlohmann::json::parse(in);
  ASSERT_GE(cases.size(), 15u);
  for (const auto& c : cases) {
    std::vector<std::string> args;
    for (const auto& a : c["args"]) args.push_back(replace_all(a.get<std::string>(), "@", dir));
    const Result r = run(args);
    EXPECT_EQ(r.exit_code, c["exit"].get<int>()) << c["name"];
    EXPECT_EQ(r.out, replace_all(c["stderr"].get<std::string>(), "@", dir)) << c["name"];
  }
}

TEST(Cli, DefaultJobPrintsStrategyTable) {
  const Result r = run({}, true);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("LLaMA3-70B on A100 80GB PCIe  tp 8 pp 4 dp 1"), std::string::npos) << r.out;
  for (const char* s : {"none", "full", "selective", "standard", "eagle", "offload"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

TEST(Cli, EstimateExitsOneWhenPlanDoesNotFit) {
  EXPECT_EQ(run({"estimate", "--strategy", "none"}).exit_code, 1);  // the default layout needs recompute
  EXPECT_EQ(run({"estimate", "--strategy", "full"}).exit_code, 0);
  EXPECT_EQ(run({"estimate", "--strategy", "full", "--memory-budget-GiB", "10"}).exit_code, 1);
}

TEST(Cli, ReportsAreDeterministicAndCarryTheContract) {
  const std::vector<std::string> args = {"estimate", "--strategy", "eagle", "--recompute-layers",
                                         "9,9,8,4",  "--json",     "-"};
  const Result a = run(args, true), b = run(args, true);
  ASSERT_EQ(a.exit_code, 0);
  EXPECT_EQ(a.out, b.out);
  const auto j = nlohmann::json::parse(a.out);
  EXPECT_EQ(j["meta"]["schema_version"], "1.0");
  EXPECT_EQ(j["meta"]["inputs"][0]["sha256"].get<std::string>().size(), 64u);
  ASSERT_EQ(j["stages"].size(), 4u);
  EXPECT_EQ(j["stages"][0]["recompute"]["layers"], 9);
  EXPECT_EQ(j["stages"][3]["recompute"]["layers"], 4);
  EXPECT_EQ(j["stages"][2]["in_flight_microbatches"], 2);
  for (const char* key : {"weights", "gradients", "optimizer", "activations", "transient_peak", "peak"})
    EXPECT_TRUE(j["stages"][1]["memory_bytes"][key].is_number_integer()) << key;
  for (const char* key : {"time_s", "mfu", "tokens_per_s", "model_flops", "hardware_flops", "bubble_fraction"})
    EXPECT_TRUE(j["iteration"][key].is_number()) << key;
  EXPECT_TRUE(j["fits"].is_boolean());
}

TEST(Cli, ModulesBothFormulaSets) {
  for (const char* f : {"paper", "exact"}) {
    const Result r = run({"modules", "--formulas", f, "--json", "-"}, true);
    ASSERT_EQ(r.exit_code, 0) << f;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_FALSE(j["modules"].empty());
    EXPECT_EQ(j["modules"][0]["formulas"], f);
    const auto& flops = j["modules"][0]["flops"];
    EXPECT_DOUBLE_EQ(flops["total"].get<double>(), flops["forward"].get<double>() + flops["backward"].get<double>() +
                                                       flops["recompute"].get<double>());
  }
}

TEST(Cli, PlanBelowTheSmallestFootprintExitsOneWithTheReason) {
  const Result r = run({"plan", "--memory-budget-GiB", "30"}, true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("no plan fits"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("over the budget of 30.00 GiB"), std::string::npos) << r.out;
  const Result ok = run({"plan", "--json", "-"}, true);
  ASSERT_EQ(ok.exit_code, 0);
  const auto j = nlohmann::json::parse(ok.out);
  EXPECT_TRUE(j["fits"].get<bool>());
  EXPECT_FALSE(j["megatron"]["flags"].empty() && j["megatron"]["notes"].empty());
  EXPECT_GE(j["frontier"].size(), 3u);
  EXPECT_LE(j["peak_memory_bytes"].get<double>(), j["search"]["budget_bytes"].get<double>());
}

TEST(Cli, SweepRanksByTokensPerSecond) {
  const Result r = run({"sweep", "--gpus", "32", "--mbss", "1,2", "--json", "-"}, true);
  ASSERT_EQ(r.exit_code, 0);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["evaluated"], 180);  // (tp 1,2,4,8 x their pp divisors = 18 layouts) x 2 mbs x 5 strategies
  ASSERT_FALSE(j["rows"].empty());
  for (size_t i = 1; i < j["rows"].size(); ++i)
    EXPECT_GE(std::stod(j["rows"][i - 1]["tokens_per_s"].get<std::string>()),
              std::stod(j["rows"][i]["tokens_per_s"].get<std::string>()));
}

// Worker threads split the layouts; the rows, their order and the rejection counts are the same
// for any count (the MoE model's ep axis gives parts of uneven work).
TEST(Cli, SweepThreadsDoNotChangeTheResult) {
  std::string reports[3];
  int i = 0;
  for (const char* threads : {"1", "3", "0"}) {
    const Result r = run({"sweep", "--model", "deepseek-v2", "--hardware", "h200", "--gpus", "64,128", "--mbss", "1,2",
                          "--threads", threads, "--json", "-"},
                         true);
    ASSERT_EQ(r.exit_code, 0) << threads;
    reports[i++] = r.out;
  }
  EXPECT_GT(nlohmann::json::parse(reports[0])["evaluated"].get<int>(), 1000);
  EXPECT_EQ(reports[1], reports[0]);
  EXPECT_EQ(reports[2], reports[0]);
}

// plan searches its stages, and the split Megatron-LM runs beside the default one, on worker
// threads; the report is the same for any count (four stages, a second split 18,21,21,20).
TEST(Cli, PlanThreadsDoNotChangeThePlan) {
  std::string reports[2];
  int i = 0;
  for (const char* threads : {"1", "3"}) {
    const Result r = run({"plan", "--model", "llama3-70b", "--framework", "megatron-local", "--tp", "8", "--pp", "4",
                          "--seq", "4096", "--hardware", "h200", "--threads", threads, "--json", "-"},
                         true);
    ASSERT_EQ(r.exit_code, 0) << threads;
    reports[i++] = r.out;
  }
  const auto j = nlohmann::json::parse(reports[0]);
  EXPECT_EQ(j["best"]["mode"], "per-layer");
  EXPECT_EQ(reports[1], reports[0]);
}

TEST(Cli, HfConfigAsModel) {
  const Result r = run({"estimate", "--model", std::string(REMAT_TEST_DATA) + "/data/llama3-8b-config.json", "--tp",
                        "1", "--pp", "1", "--hardware", "h100-sxm", "--mbs", "1", "--json", "-"},
                       true);
  ASSERT_EQ(r.exit_code, 1);  // 8B with Adam on one 80 GB GPU: 144 GB of weights and state
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"]["num_hidden_layers"], 32);
  EXPECT_EQ(j["stages"][0]["memory_bytes"]["weights"], 2 * 8030261248LL);
}

}  // namespace

// An MoE whose experts' forward is shorter than the framework's host time gets a note that its time
// follows the host (reports/megatron, harness runs 13-15), on stderr, without changing the exit code.
TEST(Cli, EstimateNotesHostBoundMoeLayers) {
  const std::string model = std::string(REMAT_TEST_DATA) + "/../examples/megatron/moe-8x7-4l.yaml";
  const Result r = run({"estimate", "--model", model, "--hardware", "h200", "--framework", "megatron-local", "--tp",
                        "1", "--pp", "2", "--mbs", "1", "--gbs", "4", "--seq", "4096", "--strategy", "none"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("note: 4 MoE layers' forward waits on the framework's host (6.5 ms a pass"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("host-bound time follows the host's speed"), std::string::npos) << r.out;
}

// A model whose transformers class has no sdpa path (MiMo-V2-Flash, GPT-OSS) runs eager under --framework
// hf, as transformers falls back to it: the default then, with a note; --attention sdpa is refused.
TEST(Cli, HfRunsEagerOnlyModelsEager) {
  const std::string model = std::string(REMAT_TEST_DATA) + "/../examples/hf/new_attention/mimo-v2-flash-3l.json";
  const std::vector<std::string> args = {"estimate", "--model",     model, "--framework", "hf",  "--seq",
                                         "2048",     "--mbs",       "1",   "--tp",        "1",   "--pp",
                                         "1",        "--lora-rank", "16",  "--hardware",  "h200"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> all = args;
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  };
  const Result refused = run(with({"--attention", "sdpa"}));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.out.find("error: command line: --attention: is not how hf runs this model"), std::string::npos)
      << refused.out;
  const Result noted = run(args);
  EXPECT_EQ(noted.exit_code, 0) << noted.out;
  EXPECT_NE(noted.out.find("note: --attention eager: transformers runs this model with eager attention only"),
            std::string::npos)
      << noted.out;
  const auto by_default = nlohmann::json::parse(run(with({"--json", "-"}), true).out);
  const auto eager = nlohmann::json::parse(run(with({"--attention", "eager", "--json", "-"}), true).out);
  EXPECT_EQ(by_default["stages"][0]["memory_bytes"]["peak"], eager["stages"][0]["memory_bytes"]["peak"]);
  EXPECT_GT(by_default["stages"][0]["memory_bytes"]["peak"].get<double>(), 0);
}

// OpenAI GPT's transformers class has no gradient checkpointing: under hf a recompute strategy is
// refused, and plan searches and prints none (no checkpoint-interval rows).
TEST(Cli, HfRefusesRecomputeWhereTheModelClassHasNone) {
  const std::string model = std::string(REMAT_TEST_DATA) + "/../examples/hf/classic/openai-gpt-shape.json";
  const std::vector<std::string> common = {"--model", model,  "--framework", "hf",   "--seq",
                                           "512",     "--tp", "1",           "--pp", "1"};
  std::vector<std::string> estimate = {"estimate", "--strategy", "full"};
  estimate.insert(estimate.end(), common.begin(), common.end());
  const Result refused = run(estimate);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.out.find("does not support gradient checkpointing"), std::string::npos) << refused.out;
  std::vector<std::string> plan = {"plan"};
  plan.insert(plan.end(), common.begin(), common.end());
  const Result planned = run(plan, true);
  EXPECT_EQ(planned.exit_code, 0) << planned.out;
  EXPECT_NE(planned.out.find("uniform-R      none"), std::string::npos) << planned.out;
  EXPECT_EQ(planned.out.find("full"), std::string::npos) << planned.out;
  EXPECT_EQ(planned.out.find("checkpoint every k layers"), std::string::npos) << planned.out;
}

namespace {

// A layout value the user never typed is remat's default (tp 8 pp 4): where the model cannot take
// it, it is halved until the model does, with a note; a typed value is refused as it stands.
TEST(FirstUse, DefaultLayoutFitsTheModel) {
  const std::string phi4 = std::string(REMAT_TEST_DATA) + "/data/hf_configs/phi-4.json";
  const Result untyped = run({"estimate", "--model", phi4, "--format", "json"}, /*capture_stdout=*/false);
  EXPECT_NE(untyped.exit_code, 2) << untyped.out;  // 1: it does not fit the A100 at mbs 4
  EXPECT_NE(untyped.out.find("note: --tp not given: 2, as remat's default 8 fails \"must divide num_key_value_heads = "
                             "10\"; give --tp to choose\n"),
            std::string::npos)
      << untyped.out;
  const Result report = run({"estimate", "--model", phi4, "--format", "json"}, /*capture_stdout=*/true);
  const auto layout = nlohmann::json::parse(report.out).at("training");
  EXPECT_EQ(layout.at("tp"), 2);
  EXPECT_EQ(layout.at("pp"), 4);
  // two layers: pp 4 halves to 2, and the head count 12 takes tp 4
  const std::string gpt2 = std::string(REMAT_TEST_DATA) + "/data/hf_configs/gpt2.json";
  const Result shallow = run({"estimate", "--model", gpt2, "--num-layers", "2", "--seq", "1024"});
  EXPECT_EQ(shallow.exit_code, 0) << shallow.out;
  EXPECT_NE(shallow.out.find("note: --pp not given: 2, as remat's default 4 fails \"must not exceed the number of "
                             "layers = 2\""),
            std::string::npos)
      << shallow.out;
  const Result shallow_report =
      run({"estimate", "--model", gpt2, "--num-layers", "2", "--seq", "1024", "--format", "json"}, true);
  EXPECT_EQ(nlohmann::json::parse(shallow_report.out).at("training").at("tp"), 4);
  EXPECT_EQ(nlohmann::json::parse(shallow_report.out).at("training").at("pp"), 2);
  const Result typed = run({"estimate", "--model", phi4, "--tp", "8"});
  EXPECT_EQ(typed.out, "error: command line: --tp: must divide num_key_value_heads = 10 (got 8)\n");
}

// GPT-2's position table has n_positions = 1024 rows: an untyped --seq is that, with a note; a typed
// longer one is refused, and --maximize seq searches no further than the table.
TEST(FirstUse, DefaultSequenceFitsAPositionTable) {
  const std::string gpt2 = std::string(REMAT_TEST_DATA) + "/data/hf_configs/gpt2.json";
  const Result untyped = run({"estimate", "--model", gpt2, "--framework", "hf", "--format", "json"}, false);
  EXPECT_EQ(untyped.exit_code, 0) << untyped.out;
  EXPECT_NE(untyped.out.find("note: --seq not given: 1024, the model's n_positions, as remat's default 4096 exceeds "
                             "its position table; give --seq to choose\n"),
            std::string::npos)
      << untyped.out;
  const Result report = run({"estimate", "--model", gpt2, "--framework", "hf", "--format", "json"}, true);
  EXPECT_EQ(nlohmann::json::parse(report.out).at("training").at("seq"), 1024);
  const Result typed = run({"estimate", "--model", gpt2, "--framework", "hf", "--seq", "2048"});
  EXPECT_EQ(typed.exit_code, 2) << typed.out;
  const Result longest =
      run({"plan", "--model", gpt2, "--framework", "hf", "--maximize", "seq", "--format", "json"}, true);
  ASSERT_EQ(longest.exit_code, 0) << longest.out;
  const nlohmann::json results = nlohmann::json::parse(longest.out).at("results");
  for (const auto& row : results) EXPECT_EQ(row.at("value"), 1024) << row;
}

}  // namespace

namespace {

// A profile's vocabulary: the hf profile runs no recompute or gradient checkpointing of whole
// layers; a strategy it does not run is refused where typed and left out of compare.
TEST(ProfileVocabulary, HfRefusesWhatItDoesNotRun) {
  const std::vector<std::string> hf = {"--framework", "hf",   "--model", "llama3-8b", "--tp",
                                       "1",           "--pp", "1",       "--mbs",     "1"};
  auto with = [&](std::vector<std::string> head) {
    head.insert(head.end(), hf.begin(), hf.end());
    return head;
  };
  const Result est = run(with({"estimate", "--strategy", "eagle"}));
  EXPECT_EQ(est.exit_code, 2);
  EXPECT_EQ(est.out, "error: command line: --strategy: the hf profile runs only none, full (got eagle)\n");
  const Result plan = run(with({"plan", "--strategies", "full,eagle"}));
  EXPECT_EQ(plan.out, "error: command line: --strategies: the hf profile runs only none, full (got eagle)\n");
  const Result compare = run(with({"compare", "--format", "json"}), true);
  const auto j = nlohmann::json::parse(compare.out);
  ASSERT_EQ(j["estimates"].size(), 2u);
  EXPECT_EQ(j["estimates"][0]["plan"]["strategy"], "none");
  EXPECT_EQ(j["estimates"][1]["plan"]["strategy"], "full");
  EXPECT_EQ(j["training"]["framework"], "hf");
}

}  // namespace
