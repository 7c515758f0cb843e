// Properties that must hold for every model in models/.
#include <gtest/gtest.h>

#include "remat/cost/estimate.hpp"
#include "remat/cost/modules.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

std::vector<std::string> model_names() {
  std::vector<std::string> out;
  for (const auto& s : builtin_specs())
    if (std::string(s.kind) == "models") out.push_back(s.name);
  return out;
}

TrainingSpec small_layout(const ModelSpec& m, int64_t mbs, int64_t seq) {
  const int64_t ep = m.is_moe() ? 2 : 1;
  return test::layout(1, 2, 2, ep, mbs, seq);
}

Estimate run(const ModelSpec& m, const TrainingSpec& t, Strategy s, std::vector<int64_t> r = {}) {
  Plan p;
  p.strategy = s;
  p.recompute_layers = std::move(r);
  return estimate(m, test::hardware("h100-sxm"), t, p, 1e30);
}

const Strategy kAll[] = {Strategy::none,     Strategy::full,  Strategy::selective,
                         Strategy::standard, Strategy::eagle, Strategy::offload};

TEST(Properties, MemoryNeverFallsAsMbsOrSeqGrows) {
  for (const auto& name : model_names()) {
    const ModelSpec m = test::model(name);
    for (Strategy s : kAll) {
      double last = 0;
      for (int64_t mbs : {1, 2, 4}) {
        const double peak = run(m, small_layout(m, mbs, 1024), s).peak_memory_bytes;
        EXPECT_GE(peak, last) << name << " " << to_string(s) << " mbs " << mbs;
        last = peak;
      }
      last = 0;
      for (int64_t seq : {512, 1024, 4096, 8192}) {
        const double peak = run(m, small_layout(m, 1, seq), s).peak_memory_bytes;
        EXPECT_GE(peak, last) << name << " " << to_string(s) << " seq " << seq;
        last = peak;
      }
    }
  }
}

TEST(Properties, FullKeepsLessThanStandardKeepsLessThanNone) {
  for (const auto& name : model_names()) {
    const ModelSpec m = test::model(name);
    const TrainingSpec t = small_layout(m, 1, 4096);
    for (size_t i = 0; i < 2; ++i) {
      const double full = run(m, t, Strategy::full).stages[i].memory_bytes.activations;
      const double standard = run(m, t, Strategy::standard).stages[i].memory_bytes.activations;
      const double none = run(m, t, Strategy::none).stages[i].memory_bytes.activations;
      EXPECT_LE(full, standard) << name;
      EXPECT_LE(standard, none) << name;
      EXPECT_LT(full, none) << name;
    }
  }
}

TEST(Properties, EagleNeverMoreFlopsThanStandard) {
  for (const auto& name : model_names()) {
    const ModelSpec m = test::model(name);
    const TrainingSpec t = small_layout(m, 1, 4096);
    const Estimate eagle = run(m, t, Strategy::eagle), standard = run(m, t, Strategy::standard);
    for (size_t i = 0; i < eagle.stages.size(); ++i)
      EXPECT_LE(eagle.stages[i].flops.recompute, standard.stages[i].flops.recompute) << name;
    for (const auto& row : module_rows(m, test::hardware("h100-sxm"), t, Formulas::exact)) {
      if (row.strategy != "eagle") continue;
      for (const auto& other : module_rows(m, test::hardware("h100-sxm"), t, Formulas::exact))
        if (other.block == row.block && other.strategy == "standard")
          EXPECT_LE(row.total_flops(), other.total_flops()) << name << " " << row.block;
    }
  }
}

TEST(Properties, StageMemoryFallsAsRGrows) {
  for (const auto& name : model_names()) {
    const ModelSpec m = test::model(name);
    const TrainingSpec t = small_layout(m, 1, 4096);
    const int64_t layers = m.num_hidden_layers / 2;
    for (Strategy s : {Strategy::full, Strategy::standard, Strategy::eagle, Strategy::offload}) {
      double last = 1e300;
      for (int64_t r = 0; r <= layers; ++r) {
        const double peak = run(m, t, s, {r}).stages[0].memory_bytes.peak;
        EXPECT_LE(peak, last) << name << " " << to_string(s) << " R " << r;
        last = peak;
      }
    }
  }
}

TEST(Properties, RecomputeCostsTimeAndFullCostsMost) {
  const ModelSpec m = test::model("llama3-70b");
  const TrainingSpec t = test::layout(8, 4, 1, 1, 4, 4096);
  const double none = run(m, t, Strategy::none).iteration.time_s;
  const double eagle = run(m, t, Strategy::eagle).iteration.time_s;
  const double standard = run(m, t, Strategy::standard).iteration.time_s;
  const double full = run(m, t, Strategy::full).iteration.time_s;
  EXPECT_LT(none, eagle);
  EXPECT_LT(eagle, standard);
  EXPECT_LT(standard, full);
}

TEST(Properties, FullKeepsKorthikantiTwoSbhPerLayer) {
  // full recompute keeps the layer input: 2 s b h bytes per layer, / t under sp
  const ModelSpec m = test::model("llama3-70b");
  const TrainingSpec t = test::layout(8, 4, 1, 1, 4, 4096);
  const Estimate e = run(m, t, Strategy::full);
  const double per_layer = 2.0 * 4096 * 4 * 8192 / 8;
  EXPECT_DOUBLE_EQ(e.stages[3].memory_bytes.activations, 20 * per_layer * 1);  // last stage: 1 in flight
  EXPECT_DOUBLE_EQ(e.stages[0].memory_bytes.activations, 20 * per_layer * 4);  // first: p - 0 = 4
}

}  // namespace
}  // namespace remat
