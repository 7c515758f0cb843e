// The pipeline split search against brute force over every split, and
// Megatron-LM's split flags read and written.
#include <gtest/gtest.h>

#include <functional>

#include "remat/search/megatron_runnable.hpp"
#include "remat/search/search_space.hpp"
#include "remat/search/split_search.hpp"
#include "remat/search/sweep.hpp"
#include "remat/spec/framework.hpp"
#include "remat/spec/pipeline_split.hpp"
#include "remat/spec/problems.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

// Every composition of `layers` into `pp` positive parts.
void each_split(int64_t layers, int64_t pp, const std::function<void(const std::vector<int64_t>&)>& f) {
  std::vector<int64_t> v;
  std::function<void(int64_t, int64_t)> rec = [&](int64_t left, int64_t stages) {
    if (stages == 1) {
      v.push_back(left), f(v), v.pop_back();
      return;
    }
    for (int64_t k = 1; k <= left - (stages - 1); ++k) v.push_back(k), rec(left - k, stages - 1), v.pop_back();
  };
  rec(layers, pp);
}

Estimate run(const ModelSpec& m, const HardwareSpec& hw, TrainingSpec t, const Plan& p, std::vector<int64_t> split,
             double budget) {
  t.layers_per_stage = std::move(split);
  return estimate(m, hw, t, p, budget);
}

TEST(SplitSearch, BestSplitIsBruteForceOptimal) {
  const HardwareSpec hw = apply_framework(test::hardware("h100-sxm"), kMegatronLocalFramework);
  std::vector<Plan> plans(4);
  plans[1].megatron = MegatronRecompute{MegatronGranularity::full, MegatronMethod::block, 1, 0};
  plans[2].megatron = MegatronRecompute{MegatronGranularity::full, MegatronMethod::uniform, 2, 0};
  plans[3].megatron = MegatronRecompute{MegatronGranularity::selective, MegatronMethod::uniform, 0, kCoreAttn};
  int cases = 0, fitting = 0, uneven_best = 0;
  for (int64_t layers : {5, 7, 9})
    for (int64_t pp : {2, 3, 4}) {
      const ModelSpec m = test::small_dense(layers);
      TrainingSpec t = apply_framework(test::layout(1, pp, 1, 1, 1, 4096), kMegatronLocalFramework);
      t.gbs = 8;
      for (const Plan& plan : plans) {
        // budgets from roomy to tight: the peak of the even-ish default split, scaled
        const double base = estimate(m, hw, t, plan, 1e30).peak_memory_bytes;
        for (double scale : {2.0, 1.0, 0.9, 0.8}) {
          const double budget = base * scale;
          double brute = 1e300, brute_peak = 1e300;
          std::vector<int64_t> brute_split;
          each_split(layers, pp, [&](const std::vector<int64_t>& v) {
            const Estimate e = run(m, hw, t, plan, v, budget);
            brute_peak = std::min(brute_peak, e.peak_memory_bytes);
            if (e.fits && e.iteration.time_s < brute) brute = e.iteration.time_s, brute_split = v;
          });
          const SplitChoice got = best_split(m, hw, t, plan, budget);
          const Estimate e = run(m, hw, t, plan, got.layers_per_stage, budget);
          const std::string what = "layers " + std::to_string(layers) + " pp " + std::to_string(pp) + " plan " +
                                   describe(plan.megatron.value_or(MegatronRecompute{})) + " budget x" +
                                   std::to_string(scale) + " split " + split_text(got.layers_per_stage);
          ++cases;
          if (brute_split.empty()) {
            EXPECT_FALSE(got.fits) << what;
            EXPECT_DOUBLE_EQ(e.peak_memory_bytes, brute_peak) << what;
            continue;
          }
          ++fitting;
          ASSERT_TRUE(got.fits) << what;
          EXPECT_TRUE(e.fits) << what;
          EXPECT_NEAR(e.iteration.time_s, brute, 1e-12 * brute) << what << " brute " << split_text(brute_split);
          uneven_best += layers % pp != 0 || brute_split != std::vector<int64_t>(size_t(pp), layers / pp);
        }
      }
    }
  EXPECT_EQ(cases, 3 * 3 * 4 * 4);
  EXPECT_GT(fitting, cases / 2);
  EXPECT_GT(uneven_best, 0);
}

std::string refusal(const MegatronSplitText& text, int64_t layers, int64_t pp, int64_t mtp = 0) {
  try {
    megatron_layers_per_stage(text, layers, pp, "command line", mtp);
  } catch (const InputError& e) {
    return e.problems().front().line();
  }
  return "accepted";
}

TEST(SplitFlags, WrittenAsMegatronReadsThem) {
  EXPECT_EQ(split_text({6, 8, 8, 8, 7}), "6,8x3,7");
  const MegatronSplitFlags even = megatron_split_flags({8, 8, 8, 8});
  EXPECT_EQ(even.first_stage_layers + even.last_stage_layers, 0);
  EXPECT_EQ(even.layout, "");
  const MegatronSplitFlags first = megatron_split_flags({6, 8, 8, 8});
  EXPECT_EQ(first.first_stage_layers, 6);
  EXPECT_EQ(first.last_stage_layers, 0);
  const MegatronSplitFlags last = megatron_split_flags({8, 8, 8, 1});
  EXPECT_EQ(last.last_stage_layers, 1);
  EXPECT_EQ(last.first_stage_layers, 0);
  const MegatronSplitFlags both = megatron_split_flags({6, 8, 8, 7});
  EXPECT_EQ(both.first_stage_layers, 6);
  EXPECT_EQ(both.last_stage_layers, 7);
  std::vector<int64_t> odd = {6};
  for (int i = 0; i < 14; ++i) odd.push_back(8);
  odd.push_back(7);
  odd[3] = 9;  // no longer expressible by first/last
  const MegatronSplitFlags layout = megatron_split_flags(odd);
  EXPECT_EQ(layout.layout, "Et*6|t*8|t*8|t*9|(t*8|)*11t*7L");
  EXPECT_EQ(megatron_layers_per_stage({"", "", layout.layout}, 126, 16), odd);
  EXPECT_EQ(pipeline_layout_text({1, 2}), "Et|t*2L");
  // multi-token prediction layers go on the last stage, before the loss
  EXPECT_EQ(pipeline_layout_text({2, 3, 1}, 1), "Et*2|t*3|tmL");
  EXPECT_EQ(megatron_layers_per_stage({"", "", "Et*2|t*3|tmL"}, 6, 3, "command line", 1),
            (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(refusal({"", "", "Et*2|t*3|tL"}, 6, 3, 1),
            "command line: --pipeline-model-parallel-layout: has 0 MTP layers (m); the model has 1 (got Et*2|t*3|tL)");
  EXPECT_EQ(megatron_layers_per_stage({"", "", "Et|t*2L"}, 3, 2), (std::vector<int64_t>{1, 2}));
  // Megatron's own example grammar: commas are cosmetic, (..)*n and x*n repeat
  EXPECT_EQ(megatron_layers_per_stage({"", "", "Ettt|(tt|)*2,t,tL"}, 9, 4), (std::vector<int64_t>{3, 2, 2, 2}));
  EXPECT_EQ(megatron_layers_per_stage({"6", "", ""}, 126, 16).back(), 8);
  EXPECT_EQ(megatron_layers_per_stage({"", "1", ""}, 61, 16),
            (std::vector<int64_t>{4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1}));
  EXPECT_EQ(megatron_layers_per_stage({"6", "8", ""}, 126, 16)[1], 8);
}

TEST(SplitFlags, RefusedAsMegatronRefusesThem) {
  EXPECT_EQ(refusal({"5", "", ""}, 126, 16),
            "command line: --decoder-first-pipeline-num-layers: leaves 121 of the 126 layers for 15 other stages: "
            "Megatron-LM needs an equal count >= 1 on each (got 5)");
  EXPECT_EQ(refusal({"0", "", ""}, 126, 16),
            "command line: --decoder-first-pipeline-num-layers: must be an integer >= 1 (got 0)");
  EXPECT_EQ(
      refusal({"", "", "Et*3|t*3"}, 6, 2),
      "command line: --pipeline-model-parallel-layout: must begin with E and end with L, once each (got Et*3|t*3)");
  EXPECT_EQ(
      refusal({"", "", "Et*3|t*2L"}, 6, 2),
      "command line: --pipeline-model-parallel-layout: has 5 decoder layers (t); the model has 6 (got Et*3|t*2L)");
  EXPECT_EQ(refusal({"", "", "Et*6|L"}, 6, 2),
            "command line: --pipeline-model-parallel-layout: has a stage without decoder layers, which remat does "
            "not model (got Et*6|L)");
  EXPECT_EQ(refusal({"", "", "Et*2|t*2|t*2L"}, 6, 2),
            "command line: --pipeline-model-parallel-layout: has 3 stages; remat models one per pipeline rank (pp = "
            "2, no virtual stages) (got Et*2|t*2|t*2L)");
  EXPECT_EQ(refusal({"3", "", "Et*3|t*3L"}, 6, 2),
            "command line: --pipeline-model-parallel-layout: cannot be given with "
            "--decoder-first/last-pipeline-num-layers (Megatron-LM refuses both) (got Et*3|t*3L)");
  EXPECT_EQ(refusal({"", "", "Et*99999999999|t*3L"}, 6, 2),
            "command line: --pipeline-model-parallel-layout: unrolls to more than 1000000 symbols (got "
            "Et*99999999999|t*3L)");
  EXPECT_EQ(refusal({"", "", "E(t*999|)*9999t*3L"}, 6, 2),
            "command line: --pipeline-model-parallel-layout: unrolls to more than 1000000 symbols (got "
            "E(t*999|)*9999t*3L)");
  EXPECT_EQ(refusal({"", "", "Et*3|x*3L"}, 6, 2),
            "command line: --pipeline-model-parallel-layout: has 'x', not one of E, L, t, m, |, (, ), *, digits (got "
            "Et*3|x*3L)");
}

}  // namespace
}  // namespace remat

namespace remat {
namespace {

// The cases: Llama-3.1-405B (126 layers) and DeepSeek-R1 (61) on 16 stages of H100s.
// The Megatron-runnable plan fits, on its own split, and is no slower than the splits a user
// would try by hand (first stage 6, or last stage 1, with a full block recompute).
TEST(SplitSearch, BigModelsOnSixteenStagesFitOnTheirBestSplit) {
  const std::string data = std::string(REMAT_TEST_DATA) + "/data/";
  const HardwareSpec hw = test::hardware("h100-sxm");
  const double budget = default_budget_bytes(hw);
  struct Case {
    std::string model;
    TrainingSpec t;
    MegatronSplitText by_hand;
    MegatronRecompute setting;
  };
  TrainingSpec llama = test::layout(8, 16, 1, 1, 4, 8192);
  TrainingSpec r1 = test::layout(4, 16, 16, 64, 4, 4096);
  const Case cases[] = {
      {"llama-3.1-405b-config.json", llama, {"6", "", ""}, {MegatronGranularity::full, MegatronMethod::block, 7, 0}},
      {"llama-3.1-405b-config.json", llama, {"6", "", ""}, {MegatronGranularity::full, MegatronMethod::uniform, 1, 0}},
      {"hf_configs/deepseek-v3.json", r1, {"", "1", ""}, {MegatronGranularity::full, MegatronMethod::block, 2, 0}}};
  for (const Case& c : cases) {
    const ModelSpec m = test::model(data + c.model);
    const RunnablePlan rp = runnable_megatron_plan(m, hw, c.t, {budget, true});
    ASSERT_TRUE(rp.best) << c.model << ": " << rp.reason;
    TrainingSpec by_hand = c.t;
    by_hand.layers_per_stage = megatron_layers_per_stage(c.by_hand, m.num_hidden_layers, c.t.pp);
    Plan p;
    p.megatron = c.setting;
    const Estimate hand = estimate(m, hw, by_hand, p, budget);
    EXPECT_LE(rp.best->time_s, hand.iteration.time_s) << c.model << " " << describe(c.setting);
    EXPECT_LE(rp.best->peak_bytes, budget);
    EXPECT_NE(rp.split.layers_per_stage, megatron_split(m, c.t).layers_per_stage) << c.model;
  }
}

}  // namespace
}  // namespace remat

namespace remat {
namespace {

// Every way to give each stage of `split` its own R (0 .. its layers).
void each_r(const std::vector<int64_t>& split, const std::function<void(const std::vector<int64_t>&)>& f) {
  std::vector<int64_t> r(split.size(), 0);
  for (;;) {
    f(r);
    size_t i = 0;
    while (i < r.size() && r[i] == split[i]) r[i++] = 0;
    if (i == r.size()) return;
    ++r[i];
  }
}

// The sweep's split search (each stage its own layer count and R) against brute force over
// every split and every per-stage R, priced by estimate, under megatron-local and hf.
TEST(SplitSearch, SplitAndPerStageRIsBruteForceOptimal) {
  int cases = 0, fitting = 0, recomputing = 0;
  for (const char* fw : {kMegatronLocalFramework, "hf"})
    for (int64_t layers : {5, 7})
      for (int64_t pp : {2, 3})
        for (Strategy s : {Strategy::none, Strategy::full, Strategy::eagle}) {
          const HardwareSpec hw = apply_framework(test::hardware("h100-sxm"), fw);
          const ModelSpec m = test::small_dense(layers);
          TrainingSpec t = apply_framework(test::layout(1, pp, 1, 1, 1, 4096), fw);
          t.gbs = 8;
          t = with_defaults(t);
          Plan none;
          const double base = estimate(m, hw, t, none, 1e30).peak_memory_bytes;
          for (double scale : {1.5, 0.9, 0.75}) {
            const double budget = base * scale;
            double brute = 1e300;
            each_split(layers, pp, [&](const std::vector<int64_t>& v) {
              each_r(v, [&](const std::vector<int64_t>& r) {
                if (s == Strategy::none && r != std::vector<int64_t>(r.size(), 0)) return;
                Plan p;
                p.strategy = s, p.recompute_layers = r;
                const Estimate e = run(m, hw, t, p, v, budget);
                if (e.fits) brute = std::min(brute, e.iteration.time_s);
              });
            });
            SearchOptions o;
            o.per_layer = false;
            const SplitPlan got = best_split_and_r(build_search_space(m, hw, t, o), s, budget);
            const std::string what = std::string(fw) + " layers " + std::to_string(layers) + " pp " +
                                     std::to_string(pp) + " " + to_string(s) + " budget x" + std::to_string(scale) +
                                     " split " + split_text(got.layers_per_stage);
            ++cases;
            if (brute == 1e300) {
              EXPECT_FALSE(got.fits) << what;
              continue;
            }
            ++fitting;
            ASSERT_TRUE(got.fits) << what;
            Plan p;
            p.strategy = s, p.recompute_layers = got.recompute_layers;
            const Estimate e = run(m, hw, t, p, got.layers_per_stage, budget);
            EXPECT_TRUE(e.fits) << what;
            EXPECT_NEAR(e.iteration.time_s, brute, 1e-12 * brute) << what;
            for (int64_t r : got.recompute_layers) recomputing += r > 0;
          }
        }
  EXPECT_EQ(cases, 2 * 2 * 2 * 3 * 3);
  EXPECT_GT(fitting, cases / 2);
  EXPECT_GT(recomputing, 0);
}

}  // namespace
}  // namespace remat

namespace remat {
namespace {

// sweep --split-top N: its first N rows are those of replanning every layout on its best split,
// in the same order with the same numbers (the bound only skips layouts that cannot reach them),
// and some of them are on a split other than the default.
TEST(SplitSearch, SweepTopRowsAreThoseOfSearchingEverySplit) {
  ModelSpec m = test::model("llama3-8b");
  m.num_hidden_layers = 14;
  const HardwareSpec hw = test::hardware("h100-sxm");
  TrainingSpec base;
  base.gbs = 64, base.seq = 8192;
  SweepSpace sp;
  sp.gpus = {8, 16};
  sp.mbs = {1, 2};
  sp.threads = 2;
  const double budget = 20.0 * 1024 * 1024 * 1024;  // tight: the best layout is pp 2 on an uneven split
  const int64_t top = 8;
  sp.split_top = top;
  const SweepResult some = sweep(m, hw, base, sp, budget);
  sp.split_top = 1'000'000;
  const SweepResult all = sweep(m, hw, base, sp, budget);
  sp.split_top = 0;
  const SweepResult none = sweep(m, hw, base, sp, budget);
  ASSERT_GE(some.rows.size(), size_t(top));
  int searched = 0;
  for (size_t i = 0; i < size_t(top); ++i) {
    EXPECT_EQ(some.rows[i].tokens_per_s, all.rows[i].tokens_per_s) << i;
    EXPECT_EQ(some.rows[i].layout.layers_per_stage, all.rows[i].layout.layers_per_stage) << i;
    searched += some.rows[i].split_searched;
  }
  EXPECT_GT(searched, 0);
  EXPECT_GT(all.rows.front().tokens_per_s, none.rows.front().tokens_per_s);
  EXPECT_GE(all.rows.size(), none.rows.size());
}

}  // namespace
}  // namespace remat
