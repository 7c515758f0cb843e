// remat validate --megatron-log: the log reader, the rebuilt setup, the
// megatron-local profile's bytes by hand, and the committed Megatron-LM runs
// (reports/megatron/) against the issue's bounds.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>

#include <unistd.h>

#include "remat/cost/exact_blocks.hpp"
#include "remat/io/megatron_log.hpp"
#include "remat/spec/framework.hpp"
#include "remat/validate/megatron_report.hpp"
#include "shell_run.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kReports = std::string(REMAT_TEST_DATA) + "/../reports/megatron";
const std::string kNoneLog = kReports + "/logs/dense-tp1pp2-s4096-mbs1-gbs4-none.log";

MegatronLog read_log(const std::string& path) { return parse_megatron_log(test::read_text(path), path); }

std::string error_of(const std::string& text) {
  try {
    parse_megatron_log(text, "run.log");
  } catch (const InputError& e) {
    return e.problems().front().line();
  }
  return "";
}

// The .log files under `dirs` (below reports/megatron), sorted.
std::vector<std::string> logs_in(std::initializer_list<const char*> dirs) {
  std::vector<std::string> out;
  for (const char* dir : dirs)
    for (const auto& f : std::filesystem::directory_iterator(kReports + dir))
      if (f.path().extension() == ".log") out.push_back(f.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> committed_logs() { return logs_in({"/logs", "/plans"}); }

// Each log beside remat's prediction, named by its file name, as `validate --megatron-log` sets them.
std::vector<MegatronRun> runs_of(const std::vector<std::string>& paths, const HardwareSpec& hw) {
  std::vector<MegatronRun> runs;
  for (const auto& path : paths) {
    const MegatronLog log = read_log(path);
    runs.push_back({std::filesystem::path(path).filename().string(), compare_megatron(log, hw), log.device});
  }
  return runs;
}

// The logs under reports/megatron/logs with these names (no extension).
std::vector<std::string> named_logs(std::initializer_list<const char*> names) {
  std::vector<std::string> out;
  for (const char* name : names) out.push_back(kReports + "/logs/" + name + ".log");
  return out;
}

// The log file names a hardware file's megatron-local constants were fitted on.
std::set<std::string> fitted_logs(const FrameworkEfficiency& e) {
  std::set<std::string> fitted;
  std::istringstream names(e.calibrated_from);
  for (std::string n; names >> n;) fitted.insert(n);
  return fitted;
}

TEST(MegatronLog, ReadsArgumentsMemoryAndIterations) {
  const MegatronLog log = read_log(kNoneLog);
  EXPECT_EQ(log.args.at("num_layers"), "8");
  EXPECT_EQ(log.args.at("recompute_granularity"), "None");
  EXPECT_EQ(log.args.at("ddp_param_name_patterns_for_fp32_local_accumulation"), "[]");  // a name without dots
  EXPECT_EQ(log.device.rfind("NVIDIA H200", 0), 0u);
  ASSERT_EQ(log.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(log.ranks[0].max_allocated_MiB, 42348.86);
  EXPECT_DOUBLE_EQ(log.ranks[1].max_allocated_MiB, 35610.94);
  EXPECT_EQ(log.ranks[1].after_iteration, 6);
  ASSERT_EQ(log.iteration_ms.size(), 6u);
  int64_t timed = 0;
  // iterations 3-6: 601.9, 604.1, 601.3, 602.2 ms
  EXPECT_DOUBLE_EQ(steady_iteration_ms(log, &timed), (601.9 + 602.2) / 2);
  EXPECT_EQ(timed, 4);
}

// The harness's second line, "# host: {...}" (host_probe.py), says how fast the machine's host drives
// the GPU; it changes nothing remat reads and reaches validate's JSON as is.
TEST(MegatronLog, HostProbeLineIsKeptAndChangesNothingElse) {
  const std::string text = test::read_text(kNoneLog);
  const std::string probe = R"({"cpu": "Some CPU", "launch_us": 6.1, "sync_us": 21.5, "python_loop_ns": 25.0})";
  const size_t second_line = text.find('\n') + 1;
  const MegatronLog plain = read_log(kNoneLog);
  const MegatronLog log =
      parse_megatron_log(text.substr(0, second_line) + "# host: " + probe + "\n" + text.substr(second_line), "x.log");
  EXPECT_EQ(log.host, probe);
  EXPECT_EQ(plain.host, "");
  EXPECT_EQ(log.device, plain.device);
  EXPECT_EQ(log.args, plain.args);
  EXPECT_EQ(log.iteration_ms, plain.iteration_ms);
  const HardwareSpec hw = test::hardware("hardware/h200.yaml");
  const std::vector<MegatronRun> runs = {{"x.log", compare_megatron(log, hw), log.device, log.host},
                                         {"bad.log", compare_megatron(log, hw), log.device, "not json"}};
  const Json report = megatron_report(ReportMeta{}, runs, "h200");
  EXPECT_DOUBLE_EQ(report.at("runs").at(0).at("host").at("sync_us").get<double>(), 21.5);
  EXPECT_EQ(report.at("runs").at(1).at("host"), "not json");
}

// The harness probes the host again after each run ("# host after:"): validate reports how far the
// kernel launch time moved, and the table lists runs whose host moved 10% or more.
TEST(MegatronLog, HostProbedAfterTheRunShowsHowFarTheHostMoved) {
  const std::string text = test::read_text(kNoneLog);
  const size_t second_line = text.find('\n') + 1;
  const auto with_probes = [&](double before_us, double after_us) {
    const std::string lines =
        fmt::format("# host: {{\"launch_us\": {}}}\n# host after: {{\"launch_us\": {}}}\n", before_us, after_us);
    return parse_megatron_log(text.substr(0, second_line) + lines + text.substr(second_line), "x.log");
  };
  const MegatronLog slowed = with_probes(7.77, 9.23), steady = with_probes(8.0, 8.4);
  EXPECT_EQ(slowed.host_after, "{\"launch_us\": 9.23}");
  EXPECT_EQ(read_log(kNoneLog).host_after, "");
  const HardwareSpec hw = test::hardware("hardware/h200.yaml");
  const std::vector<MegatronRun> runs = {
      {"slowed.log", compare_megatron(slowed, hw), slowed.device, slowed.host, slowed.host_after},
      {"steady.log", compare_megatron(steady, hw), steady.device, steady.host, steady.host_after},
      {"plain.log", compare_megatron(steady, hw), steady.device, steady.host}};
  EXPECT_NEAR(host_drift(runs[0]).pct(), 100 * (9.23 / 7.77 - 1), 1e-9);
  EXPECT_TRUE(host_drift(runs[1]).known);
  EXPECT_FALSE(host_drift(runs[2]).known);
  const std::string table = megatron_table(runs, hw.name);
  EXPECT_NE(table.find("  slowed.log: 7.77 to 9.23 us (+18.8%)"), std::string::npos) << table;
  EXPECT_EQ(table.find("steady.log: 8.00"), std::string::npos);  // +5%: under the 10% noted
  const Json report = megatron_report(ReportMeta{}, runs, "h200");
  EXPECT_DOUBLE_EQ(report.at("runs").at(0).at("host_after").at("launch_us").get<double>(), 9.23);
  EXPECT_NEAR(report.at("runs").at(1).at("host_launch_change_pct").get<double>(), 5.0, 1e-9);
  EXPECT_FALSE(report.at("runs").at(2).contains("host_launch_change_pct"));
}

TEST(MegatronLog, TruncatedOrMalformedLogsNameTheLine) {
  const std::string text = test::read_text(kNoneLog);
  const size_t in_args = text.find("  num_layers ....");
  EXPECT_NE(error_of(text.substr(0, in_args)).find("the log ends inside the argument block (truncated)"),
            std::string::npos);
  const size_t third = text.find("iteration        4/");
  const std::string cut = text.substr(0, text.rfind('\n', third) + 1);
  EXPECT_NE(error_of(cut).find("the log ends after 3 of 6 iterations (truncated)"), std::string::npos);
  std::string bad = text;
  const size_t mem = bad.find("max allocated: 42348.86");
  bad.replace(mem, 23, "max allocated: lots");
  EXPECT_NE(error_of(bad).find("is a malformed memory report"), std::string::npos);
  EXPECT_EQ(error_of("hello\n"), "run.log: arguments: is not a Megatron-LM log: no '-- arguments --' block");
}

TEST(MegatronLog, RebuildsModelLayoutAndRecompute) {
  const MegatronSetup s = megatron_setup(read_log(kReports + "/logs/dense-tp1pp2-s4096-mbs1-gbs4-sel-attn-mlp.log"));
  EXPECT_EQ(s.model.hidden_size, 4096);
  EXPECT_EQ(s.model.num_key_value_heads, 8);
  EXPECT_EQ(s.model.vocab_size, 128256);  // 128255 padded to a multiple of 128
  EXPECT_FALSE(s.model.tie_word_embeddings);
  EXPECT_EQ(s.training.pp, 2);
  EXPECT_EQ(s.training.dp, 1);
  EXPECT_EQ(s.training.gbs, 4);
  EXPECT_EQ(s.training.zero_stage, 0);
  EXPECT_EQ(s.training.framework, kMegatronLocalFramework);
  ASSERT_TRUE(s.plan.megatron);
  EXPECT_EQ(s.recompute, "selective core_attn+mlp");
  const MegatronSetup moe = megatron_setup(read_log(kReports + "/logs/moe-tp1pp1ep2-s4096-mbs1-gbs4-none.log"));
  EXPECT_EQ(moe.model.n_routed_experts, 8);
  EXPECT_EQ(moe.model.num_experts_per_tok, 2);
  EXPECT_EQ(moe.model.moe_intermediate_size, 2048);
  EXPECT_EQ(moe.training.dp, 2);
  EXPECT_EQ(moe.training.ep, 2);
}

// Megatron-LM's own defaults (TransformerConfig.__post_init__, read from its
// source): selective with recompute_modules None recomputes core_attn, and the
// deprecated --moe-layer-recompute means selective with moe.
TEST(MegatronLog, AppliesMegatronsRecomputeDefaults) {
  MegatronLog log = read_log(kNoneLog);
  log.args["recompute_granularity"] = "selective";
  ASSERT_EQ(log.args.at("recompute_modules"), "None");
  const MegatronSetup plain = megatron_setup(log);
  EXPECT_EQ(plain.recompute, "selective core_attn");
  log.args["recompute_modules"] = "['core_attn']";
  const MegatronSetup named = megatron_setup(log);
  const HardwareSpec hw = test::hardware("h200");
  EXPECT_EQ(
      compare_megatron(log, hw).estimate.peak_memory_bytes,
      estimate(named.model, apply_framework(hw, kMegatronLocalFramework), named.training, plain.plan, hw.hbm_bytes)
          .peak_memory_bytes);

  MegatronLog moe = read_log(kReports + "/logs/moe-tp1pp1ep2-s4096-mbs1-gbs4-none.log");
  moe.args["moe_layer_recompute"] = "True";
  EXPECT_EQ(megatron_setup(moe).recompute, "selective core_attn+moe");
  moe.args["recompute_granularity"] = "selective";
  moe.args["recompute_modules"] = "['mlp']";
  EXPECT_EQ(megatron_setup(moe).recompute, "selective mlp+moe");
}

// Logs of uneven splits: the split Megatron-LM built from its flags, which the prediction uses.
TEST(MegatronLog, ReadsUnevenSplits) {
  MegatronLog log = read_log(kNoneLog);  // 8 layers on 2 stages
  log.args["decoder_first_pipeline_num_layers"] = "3";
  EXPECT_EQ(megatron_setup(log).training.layers_per_stage, (std::vector<int64_t>{3, 5}));
  const HardwareSpec hw = test::hardware("h200");
  const MegatronComparison uneven = compare_megatron(log, hw);
  EXPECT_EQ(uneven.estimate.stages[0].last_layer, 3);
  log.args["decoder_first_pipeline_num_layers"] = "None";
  log.args["pipeline_model_parallel_layout"] = "Et*5|t*3L";
  EXPECT_EQ(megatron_setup(log).training.layers_per_stage, (std::vector<int64_t>{5, 3}));
  log.args["pipeline_model_parallel_layout"] = "Et*5|t*2L";
  try {
    megatron_setup(log);
    FAIL() << "accepted a layout of 7 layers for 8";
  } catch (const InputError& e) {
    EXPECT_EQ(e.problems().front().line(), kNoneLog +
                                               ": --pipeline-model-parallel-layout: has 7 decoder layers (t); "
                                               "the model has 8 (got Et*5|t*2L)");
  }
}

// Runs with plain --recompute-granularity selective (and --recompute-activations), no modules
// named, on one H100 (reports/megatron/h100-sel/): Megatron-LM recomputes core_attn, and so does
// the prediction, within 2% of each measured peak.
TEST(MegatronRuns, PlainSelectiveRunsWithinTwoPercent) {
  const HardwareSpec hw = test::hardware("h100-sxm");
  int checked = 0;
  for (const auto& path : logs_in({"/h100-sel"})) {
    const MegatronLog log = read_log(path);
    const MegatronComparison c = compare_megatron(log, hw);
    if (path.find("-none") == std::string::npos) EXPECT_EQ(c.setup.recompute, "selective core_attn") << path;
    for (const MegatronRankRow& r : c.ranks) {
      EXPECT_LE(std::abs(r.predicted_peak_MiB / r.measured_max_allocated_MiB - 1), 0.02) << path;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 7);
}

TEST(MegatronLog, RefusesRecomputeSettingsItDoesNotModel) {
  const auto refusal = [](MegatronLog log) {
    try {
      megatron_setup(log);
    } catch (const InputError& e) {
      return e.problems().front().line();
    }
    return std::string("accepted");
  };
  MegatronLog log = read_log(kNoneLog);
  log.args["recompute_granularity"] = "full";
  log.args["recompute_method"] = "uniform";
  log.args["recompute_num_layers"] = "1";
  log.args["distribute_saved_activations"] = "True";
  EXPECT_EQ(refusal(log), kNoneLog +
                              ": distribute_saved_activations: remat does not model saved inputs split across "
                              "tp ranks (got True)");
  log.args["distribute_saved_activations"] = "False";
  log.args["moe_layer_recompute"] = "True";
  EXPECT_EQ(refusal(log),
            kNoneLog + ": moe_layer_recompute: Megatron-LM refuses it with full recompute granularity (got True)");
}

TEST(MegatronLog, RefusesWhatRemaDoesNotModelByName) {
  MegatronLog log = read_log(kNoneLog);
  log.args["transformer_impl"] = "transformer_engine";
  try {
    megatron_setup(log);
    FAIL() << "accepted transformer_engine";
  } catch (const InputError& e) {
    EXPECT_EQ(e.problems().front().line(), kNoneLog +
                                               ": transformer_impl: remat has a profile for --transformer-impl local "
                                               "only (got transformer_engine)");
  }
}

// LLaMA3-8B cut to 8 layers, tp 1 pp 2, one sequence of 4096, 4 microbatches,
// Megatron-LM local. U = s h 2 bytes = 32 MiB. Per layer (read from Megatron's
// code, checked against its allocator): input, normed input, q, repeated k
// and v, o (6U), the bf16 softmax (32 heads x s^2 x 2 = 32U), the MLP's
// input and normed input (2U), fc1's output (7U), silu (3.5U), the copied
// linear half (3.5U), the product (3.5U): 57.5U, plus two fp32 1/rms rows.
TEST(MegatronLocalProfile, StageBytesByHand) {
  const ModelSpec m = [] {
    ModelSpec x = test::model("llama3-8b");
    x.num_hidden_layers = 8;
    return x;
  }();
  TrainingSpec t = test::layout(1, 2, 1, 1, 1, 4096);
  t.gbs = 4;
  t = apply_framework(t, kMegatronLocalFramework);
  t.zero_stage = 0;
  Plan none;
  const Estimate e = estimate(m, test::hardware("h200"), t, none, 1e30);
  const double U = 4096.0 * 4096 * 2, rstd = 4096.0 * 4, MiB = 1024.0 * 1024;
  const StageMemory& s0 = e.stages[0].memory_bytes;
  EXPECT_DOUBLE_EQ(s0.activations, 2 * (4 * (57.5 * U + 2 * rstd) + U));  // 2 in flight, + the stage output
  EXPECT_DOUBLE_EQ(s0.transient_peak, 96 * U - (19.5 * U + rstd));        // 3 score tensors, MLP already freed
  EXPECT_DOUBLE_EQ(s0.runtime, 32 * 4096.0 * 4096 * 2 + 66 * MiB);        // QK^T buffer, workspaces
  const double params0 = 4 * 218112000.0 + 128256.0 * 4096;               // 4 layers + embedding
  EXPECT_DOUBLE_EQ(s0.weights + s0.gradients + s0.optimizer, 18 * params0);
  EXPECT_DOUBLE_EQ(s0.optimizer_step, 18 * params0 + s0.runtime + 4 * params0);
  EXPECT_DOUBLE_EQ(s0.peak, 18 * params0 + s0.runtime + s0.activations + s0.transient_peak);
  // measured on the H200: 42348.86 MiB max allocated
  EXPECT_NEAR(s0.peak / MiB, 42348.86, 0.001 * 42348.86);
  const StageMemory& s1 = e.stages[1].memory_bytes;
  // the loss: fp32 softmax and a bf16 copy or gradient, 6 bytes per logit, on the kept head input
  EXPECT_DOUBLE_EQ(s1.transient_peak, 6 * 4096.0 * 128256 + 3 * U + rstd);
}

// Megatron-LM's unfused expert MLP scales the SwiGLU output by each copy's router probability in
// fp32 and casts it back (mlp.py, per_token_scale): the down projection saves that product, one more
// bf16 tensor of K x tokens x moe_ffn per layer, and `moe_act` recompute discards it with the
// activation it came from. Counting it took the MoE peaks from 1.87% to 0.99% low at worst.
TEST(MegatronLocalMoe, ExpertsKeepTheProbabilityWeightedActivation) {
  const MegatronSetup setup = megatron_setup(read_log(kReports + "/logs/moe8x7-tp1pp2-s4096-mbs1-gbs4-none.log"));
  const RankShape r = rank_shape(setup.training);
  ASSERT_TRUE(r.glu_linear_copy);
  const Block routed = moe_routed_block(r, setup.model);
  EXPECT_DOUBLE_EQ(routed.tensor_bytes("experts_weighted"), 2 * 4096.0 * 14336 * 2);  // top 2 copies, bf16
  const auto down =
      std::find_if(routed.ops.begin(), routed.ops.end(), [](const OpDef& op) { return op.name == "experts_down"; });
  ASSERT_NE(down, routed.ops.end());
  EXPECT_EQ(down->saves, std::vector<std::string>{"experts_weighted"});
  RankShape other = r;  // profiles without the unfused GLU copy count no separate weighted tensor
  other.glu_linear_copy = false;
  EXPECT_DOUBLE_EQ(moe_routed_block(other, setup.model).tensor_bytes("experts_weighted"), 0);
}

// The issue's bounds on every run not fitted of the dense model and the Mixtral-shaped MoE. The
// small MoE's layers wait on the host (8 local 2048-wide experts run one after another from Python,
// the dispatcher syncs): remat flags them and they hold only looser bounds (a known gap,
// reports/megatron/README.md). The 4096- and 8192-wide experts of harness run 9, host-bound by
// remat's floor too and predicted before they ran, are held to the issue's bounds. The small MoE at
// s 2048 (harness run 13, predicted before it ran) is the furthest off: full uniform 1 +22.0%.
TEST(MegatronRuns, CommittedRunsWithinTheIssueBounds) {
  const HardwareSpec hw = test::hardware("hardware/h200.yaml");
  ASSERT_NE(hw.framework_fit(kMegatronLocalFramework), nullptr);
  const std::set<std::string> fitted = fitted_logs(hw.framework_fits.at(std::string(kMegatronLocalFramework)));
  EXPECT_EQ(fitted.size(), 9u);
  const std::vector<MegatronRun> runs = runs_of(committed_logs(), hw);
  ASSERT_EQ(runs.size(), 86u);
  const auto ratios = recompute_ratios(runs);
  int held_out = 0, ratio_checks = 0, small_moe_runs = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const MegatronComparison& c = runs[i].comparison;
    for (const auto& r : c.ranks) EXPECT_LE(std::fabs(r.error_pct()), 3.0) << runs[i].name << " rank " << r.rank;
    const bool small_moe = runs[i].name.rfind("moe-", 0) == 0;
    if (small_moe) EXPECT_GT(runs[i].host_bound_layers(), 0) << runs[i].name;
    if (!c.setup.model.is_moe()) EXPECT_EQ(runs[i].host_bound_layers(), 0) << runs[i].name;
    if (fitted.count(runs[i].name)) continue;
    ++held_out;
    const bool ratio = ratios[i].has_baseline && c.setup.recompute != "none";
    if (small_moe) {
      ++small_moe_runs;
      EXPECT_LE(std::fabs(c.time_error_pct()), 25.0) << runs[i].name;
      if (ratio) EXPECT_LE(std::fabs(ratios[i].error_pct()), 25.0) << runs[i].name;
      continue;
    }
    EXPECT_LE(std::fabs(c.time_error_pct()), 15.0) << runs[i].name;
    if (!ratio) continue;
    ++ratio_checks;
    EXPECT_LE(std::fabs(ratios[i].error_pct()), 5.0) << runs[i].name;
  }
  EXPECT_EQ(held_out, 77);
  EXPECT_EQ(small_moe_runs, 39);
  EXPECT_EQ(ratio_checks,
            22);  // 17, the 4096- and 8192-wide experts' full recompute (run 9), dense on one GPU (run 12)
}

// A recompute setting is set beside the no-recompute run of its own harness session only: the
// 2048-wide MoE's full recompute at pp 2 measured x1.55 over a none run of another session and
// x1.34 over one of its own.
TEST(MegatronRuns, RatiosPairRunsOfOneSession) {
  const HardwareSpec hw = test::hardware("hardware/h200.yaml");
  const std::vector<MegatronRun> runs =
      runs_of(named_logs({"moe-tp1pp2-s4096-mbs1-gbs4-none", "moe-tp1pp2-s4096-mbs1-gbs4-full-uniform1",
                          "moe-tp1pp2-s4096-mbs1-gbs4-none-rerun", "moe-tp1pp2-s4096-mbs1-gbs4-full-uniform1-rerun"}),
              hw);
  const auto ratios = recompute_ratios(runs);
  EXPECT_FALSE(ratios[1].has_baseline);  // its none run came from harness run 3, it from run 1
  ASSERT_TRUE(ratios[3].has_baseline);
  EXPECT_NEAR(ratios[3].measured, 404.45 / 301.4, 1e-3);
}

// Harness run 9 ran the small MoE's none, selective moe and full settings twice each on one GPU, and
// two expert widths: a recompute run is set beside the median of its session's none runs of the same
// model, and the 4096-wide experts' full recompute beside their own none run, not the 2048-wide one.
TEST(MegatronRuns, RepeatsShareOneBaselineAndReportTheirSpread) {
  const HardwareSpec hw = test::hardware("hardware/h200.yaml");
  const std::vector<MegatronRun> runs =
      runs_of(named_logs({"moe-tp1pp1-s4096-mbs1-gbs4-none-r2", "moe-tp1pp1-s4096-mbs1-gbs4-none-r3",
                          "moe-tp1pp1-s4096-mbs1-gbs4-sel-moe-r2", "moe-tp1pp1-s4096-mbs1-gbs4-sel-moe-r3",
                          "moe4096-tp1pp1-s4096-mbs1-gbs4-none", "moe4096-tp1pp1-s4096-mbs1-gbs4-full-uniform1"}),
              hw);
  const auto ratios = recompute_ratios(runs);
  ASSERT_TRUE(ratios[2].has_baseline);
  EXPECT_EQ(ratios[2].baseline_runs, 2);
  EXPECT_NEAR(ratios[2].measured, 464.45 / ((406.15 + 385.05) / 2), 1e-3);  // harness medians, summary.json
  EXPECT_NEAR(ratios[3].measured, 478.9 / ((406.15 + 385.05) / 2), 1e-3);
  ASSERT_TRUE(ratios[5].has_baseline);
  EXPECT_EQ(ratios[5].baseline_runs, 1);
  EXPECT_NEAR(ratios[5].measured, 608.35 / 458.7, 1e-3);
  const auto repeats = session_repeats(runs);
  ASSERT_EQ(repeats.size(), 2u);
  EXPECT_EQ(repeats[0].runs, (std::vector<size_t>{0, 1}));
  EXPECT_NEAR(repeats[0].spread_pct(), 100 * (406.15 / 385.05 - 1), 1e-3);
  EXPECT_EQ(repeats[1].runs, (std::vector<size_t>{2, 3}));
  const std::string table = megatron_table(runs, hw.name);
  EXPECT_NE(table.find("385.1 to 406.1 ms (5.5% apart)"), std::string::npos) << table;
}

// validate --svg: one point per rank (peak), per run (time) and per recompute run beside a none run
// of its session (time over none), coloured GPU-bound or host-bound, dashed at the issue's bounds.
TEST(MegatronRuns, PlotHasAPointPerRankRunAndRatio) {
  const HardwareSpec hw = test::hardware("hardware/h200.yaml");
  const std::vector<MegatronRun> runs = runs_of(committed_logs(), hw);
  const auto ratios = recompute_ratios(runs);
  size_t points = 0, host_bound_points = 0, ratio_points = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const bool ratio = ratios[i].has_baseline && runs[i].comparison.setup.recompute != "none";
    const size_t n = runs[i].comparison.ranks.size() + 1 + (ratio ? 1 : 0);
    points += n;
    ratio_points += ratio ? 1 : 0;
    host_bound_points += runs[i].host_bound_layers() > 0 ? n : 0;
  }
  EXPECT_EQ(points, 127u + 86u + 42u);  // ranks, runs, and 17 + 25 ratios (the CLI summary's counts)
  EXPECT_EQ(ratio_points, 42u);
  const std::string svg = megatron_svg(runs, hw.name);
  const auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = svg.find(what); at != std::string::npos; at = svg.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<circle"), points);
  EXPECT_EQ(count("fill=\"#f28e2b\" fill-opacity"), host_bound_points);  // the second colour
  EXPECT_GT(host_bound_points, 0u);
  EXPECT_EQ(count("class=\"band\""), 6u);
  for (const char* title : {"peak, max allocated (GiB)", "iteration time (ms)", "time over none, same session"})
    EXPECT_NE(svg.find(title), std::string::npos) << title;
}

TEST(MegatronRuns, CalibrateReproducesTheCommittedConstants) {
  HardwareSpec hw = test::hardware("hardware/h200.yaml");
  const FrameworkEfficiency committed = hw.framework_fits.at(std::string(kMegatronLocalFramework));
  hw.framework_fits.erase(std::string(kMegatronLocalFramework));
  std::vector<MegatronLog> logs;
  for (const auto& n : fitted_logs(committed)) logs.push_back(read_log(kReports + "/logs/" + n));
  double rms = 0;
  const FrameworkEfficiency fit = fit_megatron_local(logs, hw, &rms);
  EXPECT_NEAR(fit.gemm_scale, committed.gemm_scale, 0.0005);
  EXPECT_NEAR(fit.memory_bound_scale, committed.memory_bound_scale, 0.0005);
  EXPECT_NEAR(fit.layer_overhead_s * 1e6, committed.layer_overhead_s * 1e6, 0.5);
  EXPECT_NEAR(fit.moe_layer_host_s * 1e6, committed.moe_layer_host_s * 1e6, 0.5);
  EXPECT_LT(rms, 0.06);
}

// The flag sets remat prints today for the README examples and the harness layouts are the ones
// committed, and Megatron-LM's own parse_args / validate_args / TransformerConfig accepted every one
// of them (reports/megatron/flags-remat.jsonl, written on the GPU machine by check_flags.py).
TEST(MegatronFlags, EveryPrintedSetIsCommittedAndAccepted) {
  const std::string root = std::string(REMAT_TEST_DATA) + "/..";
  // a name of this process's own: other checkouts' test runs share the temporary directory
  const std::string fresh = testing::TempDir() + "/remat_flag_sets_" + std::to_string(getpid()) + ".txt";
  const test::ShellResult r = test::run_shell("bash " + root + "/examples/megatron/emit_flag_sets.sh " +
                                              std::string(REMAT_BINARY) + " " + fresh + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string committed = test::read_text(root + "/examples/megatron/remat_flag_sets.txt");
  std::istringstream now(test::read_text(fresh)), then(committed);
  for (int line = 1;; ++line) {
    std::string printed, recorded;
    const bool more_printed = bool(std::getline(now, printed)), more_recorded = bool(std::getline(then, recorded));
    if (!more_printed && !more_recorded) break;
    if (printed == recorded) continue;
    size_t at = 0;
    while (at < printed.size() && at < recorded.size() && printed[at] == recorded[at]) ++at;
    const size_t from = at > 120 ? at - 120 : 0;
    ADD_FAILURE() << "line " << line << " differs: rerun examples/megatron/emit_flag_sets.sh, then check_flags.py "
                  << "on the GPU machine\n  printed:  ..." << printed.substr(from, 240) << "\n  recorded: ..."
                  << recorded.substr(from, 240);
  }
  std::set<std::string> accepted;
  std::istringstream record(test::read_text(kReports + "/flags-remat.jsonl"));
  for (std::string line; std::getline(record, line);) {
    const Json j = Json::parse(line);
    if (j.at("accepted").get<bool>())
      accepted.insert(std::to_string(j.at("gpus").get<int64_t>()) + " " + j.at("flags").get<std::string>());
  }
  int sets = 0;
  std::istringstream lines(committed);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    ++sets;
    line.erase(std::remove(line.begin(), line.end(), '\''), line.end());  // shell quoting of --moe-layer-freq
    EXPECT_TRUE(accepted.count(line)) << line.substr(0, 200);
  }
  EXPECT_EQ(sets, 174);
}

// Where Megatron-LM's source (.megatron, git-ignored) and a PyTorch are at hand (the GPU machine, or
// Debian's python3-torch through examples/megatron/cpu_checks), every set remat prints goes through
// Megatron's own checks here; elsewhere (CI) the committed record above stands in.
TEST(MegatronFlags, PrintedSetsPassMegatronsOwnChecksWhereItsSourceIsHere) {
  const std::string root = std::string(REMAT_TEST_DATA) + "/..";
  const char* from_env = std::getenv("REMAT_MEGATRON_PYTHON");
  const std::string python = from_env ? from_env : "/usr/bin/python3";
  if (!std::filesystem::exists(root + "/.megatron/megatron/training/arguments.py"))
    GTEST_SKIP() << "no Megatron-LM source in .megatron";
  if (test::run_shell(python + " -c 'import torch' 2>/dev/null").exit_code != 0)
    GTEST_SKIP() << python << " has no PyTorch (set REMAT_MEGATRON_PYTHON)";
  const std::string sets = testing::TempDir() + "/printed_flag_sets_" + std::to_string(getpid()) + ".txt";
  ASSERT_EQ(test::run_shell("bash " + root + "/examples/megatron/emit_flag_sets.sh " + std::string(REMAT_BINARY) + " " +
                            sets + " >/dev/null 2>&1")
                .exit_code,
            0);
  const test::ShellResult r =
      test::run_shell("PYTHONPATH=" + root + "/examples/megatron/cpu_checks:" + root + "/.megatron " + python + " " +
                      root + "/examples/megatron/check_flags.py " + sets + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  int checked = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line); ++checked)
    EXPECT_TRUE(Json::parse(line).at("accepted").get<bool>()) << line.substr(0, 400);
  EXPECT_EQ(checked, 174);
}

// What CI runs: the committed logs through the CLI, and a truncated one.
TEST(MegatronCliValidate, CommittedLogsAndATruncatedOne) {
  std::vector<std::string> args = {"validate", "--hardware", std::string(REMAT_TEST_DATA) + "/../hardware/h200.yaml"};
  for (const auto& log : committed_logs()) args.insert(args.end(), {"--megatron-log", log});
  const test::ShellResult ok = test::run_shell(test::remat_command(args) + " 2>&1");
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("38 runs GPU-bound: peak (max allocated) within 0.99% (65 ranks); iteration time within "
                        "11.6%; time of each recompute setting over none within 4.8% (17 runs)"),
            std::string::npos)
      << ok.out;
  const std::string cut = testing::TempDir() + "/truncated.log";
  const std::string text = test::read_text(kNoneLog);
  std::ofstream(cut) << text.substr(0, text.find("iteration        2/"));
  const test::ShellResult bad = test::run_shell(
      test::remat_command({"validate", "--hardware", "h200", "--megatron-log", cut}) + " 2>&1 >/dev/null");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("the log ends after 1 of 6 iterations (truncated)"), std::string::npos) << bad.out;
  // An H200 log and an H100 log with no --hardware: one file would price both, so exit 2 naming the second.
  const std::string h100_log = kReports + "/h100/logs/moe-tp1pp1-s4096-mbs1-gbs4-none-a.log";
  const test::ShellResult mixed = test::run_shell(
      test::remat_command({"validate", "--megatron-log", kNoneLog, "--megatron-log", h100_log}) + " 2>&1 >/dev/null");
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.out.find(h100_log + ": # device: is another GPU than the first log's"), std::string::npos)
      << mixed.out;
  EXPECT_EQ(std::count(mixed.out.begin(), mixed.out.end(), '\n'), 1) << mixed.out;
}

// Harness runs 10 and 11, one H100 each (reports/megatron/h100): LLaMA3-8B's layer shape cut to 4
// layers, and the small MoE (8 experts of 2048, and of 4096), on one GPU. megatron-local's time
// constants for the H100 were fitted on its 6 runs without recompute; the 9 recompute runs are held
// out to the issue's bounds. Memory has no fitted constant: every run.
TEST(MegatronRuns, H100FitOnItsNoneRunsHoldsOnItsRecomputeRuns) {
  const HardwareSpec hw = test::hardware("hardware/h100-sxm.yaml");
  ASSERT_NE(hw.framework_fit(kMegatronLocalFramework), nullptr);
  EXPECT_TRUE(hw.framework_fits.at(std::string(kMegatronLocalFramework)).has_moe_layer_host);
  const std::set<std::string> fitted = fitted_logs(hw.framework_fits.at(std::string(kMegatronLocalFramework)));
  EXPECT_EQ(fitted.size(), 6u);
  const std::vector<MegatronRun> runs = runs_of(logs_in({"/h100/logs"}), hw);
  std::vector<MegatronLog> fit_logs;
  for (const auto& n : fitted) fit_logs.push_back(read_log(kReports + "/h100/logs/" + n));
  for (const auto& run : runs) EXPECT_NE(run.session.find("H100"), std::string::npos) << run.name;
  ASSERT_EQ(runs.size(), 15u);
  ASSERT_EQ(fit_logs.size(), 6u);
  const auto ratios = recompute_ratios(runs);
  int held_out = 0, host_bound = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const MegatronComparison& c = runs[i].comparison;
    for (const auto& r : c.ranks) EXPECT_LE(std::fabs(r.error_pct()), 0.7) << runs[i].name;  // 0.62% worst
    if (runs[i].host_bound_layers() > 0) ++host_bound;
    if (fitted.count(runs[i].name)) continue;
    ++held_out;
    EXPECT_LE(std::fabs(c.time_error_pct()), 15.0) << runs[i].name;  // 8.7% worst
    ASSERT_TRUE(ratios[i].has_baseline) << runs[i].name;
    EXPECT_LE(std::fabs(ratios[i].error_pct()), 5.0) << runs[i].name;  // 2.8% worst
  }
  EXPECT_EQ(held_out, 9);
  EXPECT_EQ(host_bound, 5);  // every small-MoE run
  HardwareSpec bare = hw;
  bare.framework_fits.erase(std::string(kMegatronLocalFramework));
  double rms = 0;
  const FrameworkEfficiency fit = fit_megatron_local(fit_logs, bare, &rms);
  EXPECT_TRUE(fit.has_moe_layer_host);
  EXPECT_NEAR(fit.gemm_scale, hw.framework_fits.at(std::string(kMegatronLocalFramework)).gemm_scale, 0.0005);
  EXPECT_NEAR(fit.memory_bound_scale, hw.framework_fits.at(std::string(kMegatronLocalFramework)).memory_bound_scale,
              0.0005);
  EXPECT_NEAR(fit.layer_overhead_s * 1e6,
              hw.framework_fits.at(std::string(kMegatronLocalFramework)).layer_overhead_s * 1e6, 0.5);
  EXPECT_NEAR(fit.moe_layer_host_s * 1e6,
              hw.framework_fits.at(std::string(kMegatronLocalFramework)).moe_layer_host_s * 1e6, 0.5);
  EXPECT_LT(rms, 0.05);
}

// A hardware file without a megatron-local fit, or with one that saw no MoE run, says so for the
// framework's times instead of pricing them silently.
TEST(MegatronFramework, UnfittedTimesAreNamed) {
  const ModelSpec dense = test::model("llama3-8b"), moe = test::model("deepseek-v2");
  const auto a100 =
      framework_time_gaps(test::hardware("a100-80gb-sxm"), kMegatronLocalFramework, dense, TrainingSpec{});
  ASSERT_EQ(a100.size(), 1u);
  EXPECT_NE(a100[0].find("no megatron-local time fit for A100 80GB SXM"), std::string::npos);
  EXPECT_TRUE(framework_time_gaps(test::hardware("a100-80gb-sxm"), kGenericFramework, dense, TrainingSpec{}).empty());
  HardwareSpec dense_fit = test::hardware("hardware/h100-sxm.yaml");
  EXPECT_TRUE(framework_time_gaps(dense_fit, kMegatronLocalFramework, moe, TrainingSpec{}).empty());
  dense_fit.framework_fits.at(std::string(kMegatronLocalFramework)).has_moe_layer_host =
      false;  // as calibrate leaves it from dense runs only
  EXPECT_TRUE(framework_time_gaps(dense_fit, kMegatronLocalFramework, dense, TrainingSpec{}).empty());
  const auto dense_fit_moe = framework_time_gaps(dense_fit, kMegatronLocalFramework, moe, TrainingSpec{});
  ASSERT_EQ(dense_fit_moe.size(), 1u);
  EXPECT_NE(dense_fit_moe[0].find("the megatron-local fit for H100 SXM had no MoE run"), std::string::npos);
  EXPECT_TRUE(
      framework_time_gaps(test::hardware("hardware/h200.yaml"), kMegatronLocalFramework, moe, TrainingSpec{}).empty());
}

// calibrate --megatron-log over dense runs only writes no MoE host time: the file keeps a comment in
// its place, loads, and the CLI line says it was not fitted.
TEST(MegatronFramework, CalibrateWithoutMoeRunsLeavesTheMoeHostTimeOut) {
  const std::string out = ::testing::TempDir() + "h100-refit.yaml";
  std::vector<std::string> args = {"calibrate", "--hardware", "h100-sxm", "--out", out, "--megatron-log"};
  for (const char* n : {"s2048-mbs1-gbs8", "s4096-mbs1-gbs4", "s4096-mbs2-gbs4", "s8192-mbs1-gbs2"})
    args.push_back(kReports + "/h100/logs/dense4-tp1pp1-" + n + "-none.log");
  const test::ShellResult r = test::run_shell(test::remat_command(args) + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("gemm_scale 0.788, memory_bound_scale 0.700"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("moe_layer_host not fitted (no MoE run)"), std::string::npos) << r.out;
  const HardwareSpec refit = test::hardware(out);
  EXPECT_NE(refit.framework_fit(kMegatronLocalFramework), nullptr);
  EXPECT_FALSE(refit.framework_fits.at(std::string(kMegatronLocalFramework)).has_moe_layer_host);
  // the file's other frameworks' entries stay as they were (the hf profile's measured attention)
  const FrameworkEfficiency* hf = refit.framework_fit(kHfFramework);
  ASSERT_NE(hf, nullptr);
  EXPECT_EQ(hf->attention.size(),
            test::hardware("hardware/h100-sxm.yaml").framework_fit(kHfFramework)->attention.size());
  EXPECT_EQ(hf->attention.size(), 20u);
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("    # moe_layer_host_us: not fitted, no MoE run among these\n"), std::string::npos);
}

// The committed validate tables (reports/megatron/validate-h200.txt, h100/validate-h100.txt) are what
// `remat validate --megatron-log` prints from the committed logs today.
TEST(MegatronRuns, CommittedTablesAreWhatValidatePrints) {
  for (const auto& [dir, logs, table] : {std::tuple{kReports, "logs/*.log plans/*.log", "validate-h200.txt"},
                                         std::tuple{kReports + "/h100", "logs/*.log", "validate-h100.txt"}}) {
    const test::ShellResult r = test::run_shell("cd " + test::shell_quote(dir) + " && " +
                                                test::shell_quote(REMAT_BINARY) + " validate --megatron-log " + logs);
    ASSERT_EQ(r.exit_code, 0) << dir;
    std::ifstream in(dir + "/" + table);
    const std::string committed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(r.out, committed) << table;
  }
}

}  // namespace
}  // namespace remat
