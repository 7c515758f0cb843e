// remat estimate's compute, without process start-up and file reading.
#include <benchmark/benchmark.h>

#include "remat/cost/estimate.hpp"
#include "remat/cost/modules.hpp"
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

}  // namespace

BENCHMARK_MAIN();
