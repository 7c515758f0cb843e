// The event simulator against the analytical model, and its schedules.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "remat/sim/schedule.hpp"
#include "remat/sim/simulate.hpp"
#include "remat/spec/framework.hpp"
#include "remat/spec/problems.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const Strategy kAll[] = {Strategy::none,     Strategy::full,  Strategy::selective,
                         Strategy::standard, Strategy::eagle, Strategy::offload};

std::vector<std::string> model_names() {
  std::vector<std::string> out;
  for (const auto& s : builtin_specs())
    if (std::string(s.kind) == "models") out.push_back(s.name);
  return out;
}

// tp 1, mbs 1, seq 4096; MoE models spread experts over 8 data-parallel ranks.
TrainingSpec sweep_layout(const ModelSpec& m, int64_t pp) {
  const int64_t ep = m.is_moe() ? 8 : 1;
  return test::layout(1, pp, ep, ep, 1, 4096);
}

Simulation run(const ModelSpec& m, const TrainingSpec& t, Strategy s, std::vector<int64_t> r = {},
               std::vector<int64_t> o = {}) {
  Plan p;
  p.strategy = s;
  p.recompute_layers = std::move(r);
  p.offload_layers = std::move(o);
  return simulate(m, test::hardware("h100-sxm"), t, p);
}

double rel(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1.0); }

TEST(Simulate, PeakPerStageMatchesEstimateForEveryModelStrategyAndPp) {
  double worst_peak = 0, worst_time = 0;
  std::string worst_peak_case, worst_time_case;
  for (const auto& name : model_names()) {
    const ModelSpec m = test::model(name);
    for (int64_t pp : {1, 2, 4, 8, 16}) {
      if (pp > m.num_hidden_layers) continue;
      const TrainingSpec t = sweep_layout(m, pp);
      for (Strategy s : kAll) {
        const Simulation sim = run(m, t, s);
        ASSERT_EQ(sim.stages.size(), size_t(pp));
        for (size_t i = 0; i < sim.stages.size(); ++i) {
          const double est = sim.estimate.stages[i].memory_bytes.peak;
          if (rel(sim.stages[i].peak.bytes, est) > worst_peak)
            worst_peak = rel(sim.stages[i].peak.bytes, est),
            worst_peak_case = name + " pp " + std::to_string(pp) + " " + to_string(s) + " stage " + std::to_string(i);
          EXPECT_LT(rel(sim.stages[i].peak.bytes, est), 0.01)
              << name << " pp " << pp << " " << to_string(s) << " stage " << i << " sim " << sim.stages[i].peak.bytes
              << " est " << est;
        }
        if (s != Strategy::offload) {
          if (rel(sim.iteration_s, sim.estimate.iteration.time_s) > worst_time)
            worst_time = rel(sim.iteration_s, sim.estimate.iteration.time_s),
            worst_time_case = name + " pp " + std::to_string(pp) + " " + to_string(s);
          EXPECT_LT(rel(sim.iteration_s, sim.estimate.iteration.time_s), 0.02)
              << name << " pp " << pp << " " << to_string(s) << " sim " << sim.iteration_s << " est "
              << sim.estimate.iteration.time_s;
        }
      }
    }
  }
  std::printf("max relative difference: peak %.3g (%s), time %.3g (%s)\n", worst_peak, worst_peak_case.c_str(),
              worst_time, worst_time_case.c_str());
}

TEST(Simulate, OneFOneBOrderAndInterleavedCounts) {
  const auto s = pipeline_schedule(4, 8, 1);
  // stage 0: 3 warm-up forwards, then F3 B0 F4 B1 ... and the drain
  const std::vector<std::pair<bool, int64_t>> want = {{true, 0},  {true, 1}, {true, 2},  {true, 3},
                                                      {false, 0}, {true, 4}, {false, 1}, {true, 5}};
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(s[0][k].forward, want[k].first) << k;
    EXPECT_EQ(s[0][k].microbatch, want[k].second) << k;
  }
  EXPECT_EQ(s[3][0].forward, true);
  EXPECT_EQ(s[3][1].forward, false);  // the last stage has no warm-up
  const auto iv = pipeline_schedule(4, 8, 2);
  for (const auto& stage : iv) EXPECT_EQ(stage.size(), size_t(2 * 8 * 2));  // F and B per microbatch and chunk
  EXPECT_EQ(iv[0][4].chunk, 1);  // after p microbatches on chunk 0 comes chunk 1
}

TEST(Simulate, InterleavingShrinksTheBubbleAndHoldsMoreOnStageZero) {
  const ModelSpec m = test::model("llama3-70b");
  const TrainingSpec t = test::layout(8, 4, 1, 1, 1, 4096);
  Plan p;
  p.strategy = Strategy::full;
  const HardwareSpec hw = test::hardware("h100-sxm");
  const Simulation one = simulate(m, hw, t, p), two = simulate(m, hw, t, p, {2, 8});
  EXPECT_LT(two.iteration_s, one.iteration_s);
  // Megatron's interleaved warm-up holds (p-1)*2 + (v-1)*p + 1 = 11 chunk-microbatches on stage 0 vs 4 x 2 chunks
  EXPECT_GT(two.stages[0].peak.by_category[size_t(MemCategory::activations)],
            one.stages[0].peak.by_category[size_t(MemCategory::activations)]);
  EXPECT_THROW(simulate(m, hw, test::layout(8, 4, 1, 1, 1, 4096), p, {0, 8}), InputError);
}

TEST(Simulate, PeakListsWhatIsAlive) {
  const ModelSpec m = test::model("llama3-70b");
  Plan p;
  p.strategy = Strategy::full;
  const Simulation sim = simulate(m, test::hardware("a100-80gb-pcie"), test::layout(8, 4, 1, 1, 4, 4096), p);
  // stage 0 peaks in the first backward (microbatch 0's last layer) with 4 microbatches in flight
  const StagePeak& pk = sim.stages[0].peak;
  double sum = 0;
  for (double b : pk.by_category) sum += b;
  EXPECT_NEAR(sum, pk.bytes, 1);
  EXPECT_EQ(pk.top[0].name, "optimizer state");
  bool working = false;
  for (const auto& b : pk.top) working = working || b.name == "working mb0 L19";
  EXPECT_TRUE(working);
  EXPECT_NEAR(pk.by_category[size_t(MemCategory::activations)], sim.estimate.stages[0].memory_bytes.activations, 1);
}

// Under --framework megatron-local the simulator holds the profile's runtime buffers all iteration
// and the optimizer step's temporary while the step runs, so it peaks where estimate does: in a
// backward without recompute, at the optimizer step with full recompute.
// The dense model cut to 8 layers and the Mixtral-shaped MoE of the Megatron-LM runs (pp 2).
TEST(Simulate, MegatronLocalPeaksWhereEstimateDoes) {
  ModelSpec dense = test::model("llama3-8b");
  dense.num_hidden_layers = 8;
  const ModelSpec moe = test::model(std::string(REMAT_TEST_DATA) + "/../examples/megatron/moe-8x7-4l.yaml");
  const HardwareSpec hw = apply_framework(test::hardware("h200"), kMegatronLocalFramework);
  for (const auto& [m, seq] : {std::pair{dense, 4096}, std::pair{moe, 8192}}) {
    TrainingSpec t = test::layout(1, 2, 1, 1, 1, seq);
    t.gbs = 4;
    t = apply_framework(t, kMegatronLocalFramework);
    t.zero_stage = 0;
    for (Strategy s : {Strategy::none, Strategy::full, Strategy::selective}) {
      Plan p;
      p.strategy = s;
      const Simulation sim = simulate(m, hw, t, p);
      for (size_t i = 0; i < sim.stages.size(); ++i) {
        const std::string where = m.name + " " + to_string(s) + " stage " + std::to_string(i);
        const StageMemory& est = sim.estimate.stages[i].memory_bytes;
        const StagePeak& pk = sim.stages[i].peak;
        EXPECT_NEAR(pk.bytes, est.peak, 0.002 * est.peak) << where;
        EXPECT_DOUBLE_EQ(pk.by_category[size_t(MemCategory::runtime)], est.runtime);
        bool step_temp = false;
        for (const auto& b : pk.top) step_temp = step_temp || b.name == "optimizer step temporary";
        EXPECT_EQ(step_temp, est.optimizer_step >= est.peak - 1) << where;
      }
    }
  }
}

TEST(Simulate, DeepSeekV3Pp16With64MicrobatchesUnderOneSecond) {
  const ModelSpec m = test::model("deepseek-v3");
  ModelSpec m63 = m;
  m63.num_hidden_layers = 63;
  TrainingSpec t = test::layout(1, 16, 128, 64, 1, 4096);
  t.gbs = 8192;
  Plan p;
  p.strategy = Strategy::full;
  const auto start = std::chrono::steady_clock::now();
  const Simulation sim = simulate(m63, test::hardware("h100-sxm"), t, p);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(sim.microbatches, 64);
  EXPECT_LT(s, 1.0);
  std::printf("deepseek-v3 pp 16, 64 microbatches: %zu events, %.3f s\n", sim.events.size(), s);
}

}  // namespace
}  // namespace remat
