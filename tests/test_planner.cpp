// The planner against an exhaustive search that evaluates every joint
// assignment of per-layer choices with `estimate` (models of up to 8 layers,
// 2-4 stages), and the budget properties the issue asks for.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "remat/cost/estimate.hpp"
#include "remat/search/layer_plan_text.hpp"
#include "remat/search/planner.hpp"
#include "remat/spec/framework.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

using test::small_dense;

// Every choice a layer can take under `o`, enumerated here independently of the planner.
std::vector<LayerChoice> universe(const LayerDef& layer, const SearchOptions& o) {
  const auto has = [&](Strategy s) {
    return std::find(o.strategies.begin(), o.strategies.end(), s) != o.strategies.end();
  };
  std::vector<BlockMode> modes = {BlockMode::keep};
  if (has(Strategy::standard)) modes.push_back(BlockMode::standard);
  if (has(Strategy::eagle)) modes.push_back(BlockMode::eagle);
  if (o.offload) modes.push_back(BlockMode::offload);
  std::vector<LayerChoice> out = {{LayerMode::keep, {}}};
  if (has(Strategy::full)) out.push_back({LayerMode::full, {}});
  if (has(Strategy::selective)) out.push_back({LayerMode::selective, {}});
  const size_t n = recompute_block_names(layer).size();
  size_t combos = 1;
  for (size_t i = 0; i < n; ++i) combos *= modes.size();
  for (size_t code = 1; code < combos; ++code) {
    LayerChoice c{LayerMode::blocks, {}};
    for (size_t i = 0, x = code; i < n; ++i, x /= modes.size()) c.blocks.push_back(modes[x % modes.size()]);
    out.push_back(c);
  }
  return out;
}

struct Point {
  double time_s, peak_bytes;
};

// Every joint assignment, evaluated by estimate.
std::vector<Point> exhaustive(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t,
                              const SearchOptions& o) {
  const LayerShapes shapes = build_shapes(m, rank_shape(with_defaults(t)));
  std::vector<std::vector<LayerChoice>> per_layer;
  for (int64_t g = 0; g < m.num_hidden_layers; ++g) per_layer.push_back(universe(shapes.at(m, g), o));
  std::vector<size_t> digit(per_layer.size(), 0);
  std::vector<Point> out;
  while (true) {
    Plan p;
    p.recompute_layers = {0};
    for (size_t g = 0; g < digit.size(); ++g) p.layer_overrides[int64_t(g)] = per_layer[g][digit[g]];
    const Estimate e = estimate(m, hw, t, p, 1e30);
    out.push_back({e.iteration.time_s, e.peak_memory_bytes});
    size_t i = 0;
    while (i < digit.size() && ++digit[i] == per_layer[i].size()) digit[i++] = 0;
    if (i == digit.size()) return out;
  }
}

double best_within(const std::vector<Point>& pts, double budget) {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& p : pts)
    if (p.peak_bytes <= budget) best = std::min(best, p.time_s);
  return best;
}

// `slower_at_most`: how much slower than the fastest fitting assignment the plan may be (0: exact).
void expect_planner_matches(const ModelSpec& m, const TrainingSpec& t, SearchOptions o,
                            const std::string& gpu = "h100-sxm", double slower_at_most = 0) {
  const HardwareSpec hw = apply_framework(test::hardware(gpu), t.framework);
  const auto pts = exhaustive(m, hw, t, o);
  double lo = 1e300, hi = 0;
  for (const auto& p : pts) lo = std::min(lo, p.peak_bytes), hi = std::max(hi, p.peak_bytes);
  for (double f : {0.0, 0.1, 0.25, 0.5, 0.75, 1.0}) {
    o.budget_bytes = lo + f * (hi - lo);
    const PlanSearchResult res = plan_search(m, hw, t, o);
    ASSERT_TRUE(res.best) << m.name << " budget fraction " << f;
    const double fastest_s = best_within(pts, o.budget_bytes);
    EXPECT_GE(res.best->time_s, fastest_s * (1 - 1e-9));
    EXPECT_LE(res.best->time_s, fastest_s * (1 + slower_at_most) + 1e-9 * fastest_s)
        << m.name << " budget fraction " << f << " (" << pts.size() << " assignments)";
    const Estimate e = estimate(m, hw, t, res.best_plan, o.budget_bytes);
    EXPECT_LE(e.peak_memory_bytes, o.budget_bytes);
    EXPECT_NEAR(e.peak_memory_bytes, res.best->peak_bytes, 1e-9 * e.peak_memory_bytes);  // as the report prints
    EXPECT_NEAR(e.iteration.time_s, res.best->time_s, 1e-9 * res.best->time_s);
  }
  o.budget_bytes = lo * 0.999;  // below the smallest footprint
  const PlanSearchResult none = plan_search(m, hw, t, o);
  EXPECT_FALSE(none.best);
  EXPECT_NE(none.reason.find("no plan fits"), std::string::npos);
  // the smallest footprint reported is the least peak of every assignment
  ASSERT_TRUE(none.shortfall);
  EXPECT_NEAR(none.shortfall->peak_bytes, lo, 1e-9 * lo) << m.name;
  EXPECT_NEAR(none.shortfall->smallest.peak_bytes, lo, 1e-9 * lo) << m.name;
  EXPECT_NEAR(estimate(m, hw, t, to_plan(none.shortfall->smallest, build_search_space(m, hw, t, o)), o.budget_bytes)
                  .peak_memory_bytes,
              lo, 1e-9 * lo);
}

SearchOptions with(std::vector<Strategy> s, bool offload) {
  SearchOptions o;
  o.strategies = std::move(s);
  o.offload = offload;
  return o;
}

TEST(PlannerExhaustive, FourLayersTwoStagesFullEagleOffload) {
  expect_planner_matches(small_dense(4), test::layout(1, 2, 1, 1, 2, 2048),
                         with({Strategy::full, Strategy::eagle}, true));
}

TEST(PlannerExhaustive, SixLayersThreeStagesFullStandard) {
  expect_planner_matches(small_dense(6), test::layout(1, 3, 1, 1, 2, 2048),
                         with({Strategy::full, Strategy::standard}, false));
}

TEST(PlannerExhaustive, EightLayersFourStagesEagle) {
  expect_planner_matches(small_dense(8), test::layout(1, 4, 1, 1, 1, 4096), with({Strategy::eagle}, false));
}

TEST(PlannerExhaustive, MlaMoeToyTwoStagesStandardEagle) {
  const ModelSpec toy = test::model("moe-mla-moe-toy");
  expect_planner_matches(toy, test::layout(1, 2, 1, 1, 1, 4096), with({Strategy::standard, Strategy::eagle}, false));
}

TEST(PlannerExhaustive, TensorParallelWithOffloadOverPcie) {
  // tp 4 on A100 PCIe: the NVLink bridge joins pairs only, so tp collectives
  // and offload copies share the host link
  expect_planner_matches(small_dense(4), test::layout(4, 2, 1, 1, 2, 2048),
                         with({Strategy::eagle, Strategy::full}, true), "a100-80gb-pcie");
}

// Megatron-LM's local implementation frees a stage's layers in backward order, so a layer's working
// set sits on less than the whole stage's kept bytes. The planner prices its plan as estimate does
// (it added the layers last to first and printed a peak up to 0.7 GiB above the table's for
// LLaMA3-70B), every plan fits, and the search, which prunes without the layers' order, stays within
// 1% of the fastest assignment (0.95% at a quarter of the budget range here).
TEST(PlannerExhaustive, MegatronLocalOrderedBackward) {
  TrainingSpec t = apply_framework(test::layout(1, 2, 1, 1, 2, 2048), kMegatronLocalFramework);
  t.framework = kMegatronLocalFramework;
  ASSERT_TRUE(t.ordered_backward);
  expect_planner_matches(small_dense(4), t, with({Strategy::full, Strategy::eagle}, true), "h200", 0.01);
}

TEST(PlannerBudget, LoweringTheBudgetNeverYieldsAFasterPlan) {
  const ModelSpec m = test::model("llama3-70b");
  const HardwareSpec hw = test::hardware("a100-80gb-pcie");
  const TrainingSpec t = test::layout(8, 4, 1, 1, 4, 4096);
  double last = 0;
  for (double gib = 80; gib >= 40; gib -= 2.5) {
    SearchOptions o;
    o.budget_bytes = gib * 1024 * 1024 * 1024;
    const PlanSearchResult res = plan_search(m, hw, t, o);
    if (!res.best) {
      last = std::numeric_limits<double>::infinity();
      continue;
    }
    EXPECT_GE(res.best->time_s, last * (1 - 1e-12)) << gib << " GiB";
    EXPECT_LE(estimate(m, hw, t, res.best_plan, o.budget_bytes).peak_memory_bytes, o.budget_bytes) << gib;
    last = res.best->time_s;
  }
}

TEST(PlannerBudget, PerStageRIsNeverSlowerThanUniformR) {
  const ModelSpec m = test::model("llama3-70b");
  SearchOptions o;
  o.budget_bytes = 70.0 * 1024 * 1024 * 1024;
  o.per_layer = false;
  const PlanSearchResult res = plan_search(m, test::hardware("a100-80gb-pcie"), test::layout(8, 4, 1, 1, 4, 4096), o);
  for (const auto& u : res.best_by_strategy)
    for (const auto& s : res.best_by_strategy)
      if (u.strategy == s.strategy && u.mode == SearchMode::uniform_r && s.mode == SearchMode::per_stage_r)
        EXPECT_LE(s.time_s, u.time_s) << to_string(u.strategy);
}

TEST(PlannerFrontier, NonDominatedAndSorted) {
  SearchOptions o;
  o.budget_bytes = 77.0 * 1024 * 1024 * 1024;
  const PlanSearchResult res =
      plan_search(test::model("llama3-70b"), test::hardware("a100-80gb-pcie"), test::layout(8, 4, 1, 1, 4, 4096), o);
  ASSERT_GE(res.frontier.size(), 3u);
  for (size_t i = 1; i < res.frontier.size(); ++i) {
    EXPECT_GT(res.frontier[i].peak_bytes, res.frontier[i - 1].peak_bytes);
    EXPECT_LT(res.frontier[i].time_s, res.frontier[i - 1].time_s);
  }
  EXPECT_GT(res.over_budget, 0);
  for (const auto& c : res.rejected) EXPECT_FALSE(c.reason.empty());
}

TEST(LayerPlanText, RoundTrip) {
  const ModelSpec m = test::model("deepseek-v3");
  const TrainingSpec t = test::layout(1, 16, 64, 64, 1, 4096);
  const auto parsed = parse_layer_plan("0-2:full;3:attn=eagle,moe.routed=offload;4-5:eagle", m, t);
  ASSERT_EQ(parsed.size(), 6u);
  EXPECT_EQ(parsed.at(0).mode, LayerMode::full);
  const LayerChoice& l3 = parsed.at(3);
  ASSERT_EQ(l3.blocks.size(), 4u);  // mla.down, mla.up_attn, moe.shared, moe.routed
  EXPECT_EQ(l3.blocks[0], BlockMode::eagle);
  EXPECT_EQ(l3.blocks[1], BlockMode::eagle);
  EXPECT_EQ(l3.blocks[2], BlockMode::keep);
  EXPECT_EQ(l3.blocks[3], BlockMode::offload);
  std::vector<LayerChoice> v;
  for (const auto& [g, c] : parsed) v.push_back(c);
  EXPECT_EQ(format_layer_plan(v, 0, m, t), "0-2:full;3:mla.down=eagle,mla.up_attn=eagle,moe.routed=offload;4-5:eagle");
}

// A per-layer plan's stages report what its choices do: R counts the layers that recompute
// anything, offl those that offload anything (one layer may do both).
TEST(LayerPlanText, StagesCountRecomputedAndOffloadedLayers) {
  const ModelSpec m = small_dense(8);
  const TrainingSpec t = test::layout(1, 2, 1, 1, 1, 4096);
  Plan p;
  p.layer_overrides = parse_layer_plan("0:full;1:attn=eagle,mlp=offload;2:mlp=offload;3:keep;4-7:keep", m, t);
  const Estimate e = estimate(m, test::hardware("h100-sxm"), t, p, 1e30);
  ASSERT_EQ(e.stages.size(), 2u);
  EXPECT_EQ(e.stages[0].recompute_layers, 2);  // layers 0 and 1
  EXPECT_EQ(e.stages[0].offload_layers, 2);    // layers 1 and 2
  EXPECT_EQ(e.stages[1].recompute_layers, 0);  // all kept, not R = all layers
  EXPECT_EQ(e.stages[1].offload_layers, 0);
}

}  // namespace
}  // namespace remat
