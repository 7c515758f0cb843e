// remat estimate's compute, without process start-up and file reading.
#include <benchmark/benchmark.h>

#include "remat/cost/estimate.hpp"
#include "remat/cost/modules.hpp"
#include "remat/search/planner.hpp"
#include "remat/search/sweep.hpp"
#include "remat/spec/framework.hpp"
#include "test_helpers.hpp"

namespace {

using namespace remat;

void estimate_deepseek_v3_pp16(benchmark::State& state) {
  ModelSpec m = test::model("deepseek-v3");
  m.num_hidden_layers = 63;
  const HardwareSpec hw = test::hardware("a100-80gb-pcie");
  const TrainingSpec t = test::layout(1, 16, 128, 64, 1, 4096);
  Plan p;
  p.strategy = Strategy::eagle;
  p.recompute_layers = {4, 4, 4, 4, 3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 0};
  for (auto _ : state) benchmark::DoNotOptimize(estimate(m, hw, t, p, default_budget_bytes(hw)));
}
BENCHMARK(estimate_deepseek_v3_pp16)->Unit(benchmark::kMicrosecond);

void modules_llama3_70b(benchmark::State& state) {
  const ModelSpec m = test::model("llama3-70b");
  const HardwareSpec hw = test::hardware("a100-80gb-pcie");
  const TrainingSpec t = test::layout(8, 4, 1, 1, 4, 4096);
  for (auto _ : state) benchmark::DoNotOptimize(module_rows(m, hw, t, Formulas::exact));
}
BENCHMARK(modules_llama3_70b)->Unit(benchmark::kMicrosecond);

// remat plan's search (uniform R, per-stage R and the per-layer DP over keep/standard/eagle/offload
// per block, for all four strategies) of `t` within `budget_bytes` (default: the GPU's).
void run_plan_search(benchmark::State& state, const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t,
                     double budget_bytes = 0) {
  SearchOptions o;
  o.budget_bytes = budget_bytes > 0 ? budget_bytes : default_budget_bytes(hw);
  for (auto _ : state) benchmark::DoNotOptimize(plan_search(m, hw, t, o));
}

void plan_deepseek_v3_pp16(benchmark::State& state) {
  ModelSpec m = test::model("deepseek-v3");
  m.num_hidden_layers = 63;
  run_plan_search(state, m, test::hardware("a100-80gb-pcie"), test::layout(1, 16, 128, 64, 1, 4096));
}
BENCHMARK(plan_deepseek_v3_pp16)->Unit(benchmark::kMillisecond);

void plan_llama3_70b_tp8_pp4(benchmark::State& state) {
  run_plan_search(state, test::model("llama3-70b"), test::hardware("a100-80gb-pcie"), test::layout(8, 4, 1, 1, 4, 4096),
                  50.0 * 1024 * 1024 * 1024);
}
BENCHMARK(plan_llama3_70b_tp8_pp4)->Unit(benchmark::kMillisecond);

// Deep stages: LLaMA3-8B with 2,000 layers on pp 16 (125 layers a stage, the CLI's defaults
// otherwise), whose exact per-layer search was refused after ~20 s; the counts search plans every
// stage (include/remat/search/counts_search.hpp).
void plan_llama3_8b_2000_layers_pp16(benchmark::State& state) {
  ModelSpec m = test::model("llama3-8b");
  m.num_hidden_layers = 2000;
  run_plan_search(state, m, test::hardware("a100-80gb-pcie"), test::layout(8, 16, 1, 1, 4, 4096));
}
BENCHMARK(plan_llama3_8b_2000_layers_pp16)->Unit(benchmark::kMillisecond);

// Under ordered backward (Megatron-LM local) the per-layer search also carries each plan's
// ordered transient: the slowest per-layer search of the issue-26 cases (13.6 s at 7938d06's parent).
void plan_llama3_70b_megatron_local_tp8_pp2(benchmark::State& state) {
  const ModelSpec m = test::model("llama3-70b");
  const HardwareSpec hw = apply_framework(test::hardware("h200"), kMegatronLocalFramework);
  TrainingSpec t = apply_framework(test::layout(8, 2, 1, 1, 1, 8192), kMegatronLocalFramework);
  t.framework = kMegatronLocalFramework;
  run_plan_search(state, m, hw, t);
}
BENCHMARK(plan_llama3_70b_megatron_local_tp8_pp2)->Unit(benchmark::kMillisecond)->Iterations(1);

// remat sweep over DeepSeek-V3 layouts on `gpus` (tp 1-8, every pp and ep, mbs 1-8, five
// strategies) as the CLI runs it: the layouts that could reach the first 20 rows on their best split.
// Counters: the layouts enumerated, and those planned (the others fail validation first, such as a
// global batch that mbs x dp does not divide).
void sweep_deepseek_v3_on(benchmark::State& state, std::vector<int64_t> gpus, int64_t gbs = 8192) {
  ModelSpec m = test::model("deepseek-v3");
  m.num_hidden_layers = 63;
  const HardwareSpec hw = test::hardware("a100-80gb-pcie");
  TrainingSpec base;
  base.gbs = gbs;
  SweepSpace sp;
  sp.gpus = std::move(gpus);
  sp.split_top = 20;
  int64_t layouts = 0, planned = 0;
  for (auto _ : state) {
    const SweepResult r = sweep(m, hw, base, sp, default_budget_bytes(hw));
    layouts = planned = r.evaluated;
    for (const auto& [why, n] : r.infeasible_by_reason)
      if (why.rfind("does not fit", 0) != 0) planned -= n;
    benchmark::DoNotOptimize(r);
  }
  state.counters["layouts"] = double(layouts);
  state.counters["planned"] = double(planned);
}

// 12,160 layouts on 1024, 2048 and 4096 GPUs.
void sweep_deepseek_v3(benchmark::State& state) { sweep_deepseek_v3_on(state, {1024, 2048, 4096}); }
BENCHMARK(sweep_deepseek_v3)->Unit(benchmark::kMillisecond)->Iterations(1);

// 76,080 layouts on 14 GPU counts from 256 to 32768.
void sweep_deepseek_v3_76k(benchmark::State& state) {
  sweep_deepseek_v3_on(state, {256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768});
}
BENCHMARK(sweep_deepseek_v3_76k)->Unit(benchmark::kMillisecond)->Iterations(1);

// 139,720 layouts of DeepSeek-V3's own global batch (15,360 sequences) on 21 GPU counts from 256
// to 8192 (2^k times 1, 1.25, 1.5 and 1.875), of which 114,620 are planned.
void sweep_deepseek_v3_100k(benchmark::State& state) {
  sweep_deepseek_v3_on(state, {256,  320,  384,  480,  512,  640,  768,  960,  1024, 1280, 1536,
                               1920, 2048, 2560, 3072, 3840, 4096, 5120, 6144, 7680, 8192},
                       15360);
}
BENCHMARK(sweep_deepseek_v3_100k)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
