// The per-layer search of one stage (best_stage_plan) against brute force over the same search
// space: every assignment of the stage's options, priced with stage_totals, at random budgets.
// The search prunes partial plans by bounds and skips options it can rule out; these tests fail
// if any of that ever loses the fastest fitting plan (or its lowest peak among equally fast).
//
// A stage with exactly one offloaded layer needs no second staging buffer (stage_totals). The
// search once pruned such plans by plans offloading two layers that then did not fit, and, held
// to the time of such a plan (its own pair family's, or the caller's), returned nothing at
// budgets a plan fitted (DeepSeek-V3 below). Its states now count offloaded layers; each budget
// is searched with no known time and with the fastest fitting plan's time as the known one.
#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <random>

#include "brute_force_stage.hpp"
#include "hf_measured.hpp"
#include "remat/search/layer_dp.hpp"
#include "remat/search/search_space.hpp"
#include "remat/spec/framework.hpp"
#include "remat/spec/lora_placement.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

using test::every_assignment;
using test::Priced;

// The fastest that fits, then the lowest peak among equally fast; empty when none fits.
std::optional<Priced> fastest_within(const std::vector<Priced>& all, double budget_bytes) {
  std::optional<Priced> best;
  for (const Priced& p : all)
    if (p.peak_bytes <= budget_bytes &&
        (!best || p.time_s < best->time_s || (p.time_s == best->time_s && p.peak_bytes < best->peak_bytes)))
      best = p;
  return best;
}

void expect_space_matches_brute_force(const SearchSpace& sp, const std::string& name, uint32_t seed, int budgets) {
  int searched = 0;
  std::mt19937 rng(seed);
  for (size_t stage = 0; stage < sp.stages.size(); ++stage) {
    const std::vector<Priced> all = every_assignment(sp, stage);
    double lo = std::numeric_limits<double>::infinity(), hi = 0;
    for (const Priced& p : all) lo = std::min(lo, p.peak_bytes), hi = std::max(hi, p.peak_bytes);
    std::uniform_real_distribution<double> fraction(-0.05, 1.05);
    for (int i = 0; i < budgets; ++i) {
      const double budget = lo + fraction(rng) * (hi - lo);
      const std::optional<Priced> fastest = fastest_within(all, budget);
      for (const double known_s : {std::numeric_limits<double>::infinity(), fastest ? fastest->time_s : 0.0}) {
        const std::optional<StagePlan> got = best_stage_plan(sp, stage, budget, known_s);
        SCOPED_TRACE(name + " stage " + std::to_string(stage) + " budget " + std::to_string(budget) + " of [" +
                     std::to_string(lo) + ", " + std::to_string(hi) + "], " + std::to_string(all.size()) +
                     " assignments, known " + std::to_string(known_s));
        if (!fastest) continue;
        ++searched;
        ASSERT_TRUE(got);
        EXPECT_LE(got->totals.peak_bytes, budget);
        EXPECT_GE(got->totals.microbatch_s, fastest->time_s * (1 - 1e-12));
        EXPECT_LE(got->totals.microbatch_s, fastest->time_s * (1 + 1e-12));
        if (got->totals.microbatch_s == fastest->time_s) EXPECT_LE(got->totals.peak_bytes, fastest->peak_bytes);
      }
      if (!fastest) EXPECT_FALSE(best_stage_plan(sp, stage, budget));
    }
  }
  EXPECT_GT(searched, 0) << name << ": no budget a plan fits";
}

void expect_search_matches_brute_force(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, uint32_t seed,
                                       int budgets) {
  expect_space_matches_brute_force(build_search_space(m, hw, t, SearchOptions{}), m.name, seed, budgets);
}

TEST(LayerSearchBruteForce, DenseStagesOfTwoToFourLayers) {
  const HardwareSpec h100 = test::hardware("h100-sxm");
  expect_search_matches_brute_force(test::small_dense(4), h100, test::layout(1, 2, 1, 1, 2, 2048), 1, 40);
  expect_search_matches_brute_force(test::small_dense(6), h100, test::layout(1, 2, 1, 1, 1, 4096), 2, 25);
  expect_search_matches_brute_force(test::small_dense(4), h100, test::layout(1, 1, 1, 1, 4, 1024), 3, 25);
}

TEST(LayerSearchBruteForce, OffloadOverASharedPcieLink) {
  // tp 4 on A100 PCIe: collectives and offload copies share the host link, so copies can show
  expect_search_matches_brute_force(test::small_dense(4), test::hardware("a100-80gb-pcie"),
                                    test::layout(4, 2, 1, 1, 2, 2048), 4, 40);
  expect_search_matches_brute_force(test::small_dense(3), test::hardware("a100-80gb-pcie"),
                                    test::layout(2, 1, 1, 1, 8, 4096), 5, 40);
}

TEST(LayerSearchBruteForce, MlaMoeToy) {
  expect_search_matches_brute_force(test::model("moe-mla-moe-toy"), test::hardware("h100-sxm"),
                                    test::layout(1, 2, 1, 1, 1, 4096), 6, 30);
}

TEST(LayerSearchBruteForce, DeepSeekV3DenseAndMoeStages) {
  // three dense layers (33 options each) on one stage, three MoE layers (85 options each) on the other
  ModelSpec m = test::model("deepseek-v3");
  m.num_hidden_layers = 6;
  expect_search_matches_brute_force(m, test::hardware("a100-80gb-pcie"), test::layout(1, 2, 16, 8, 1, 4096), 7, 12);
}

// Stages whose fastest fitting plan often offloads exactly one layer (no staging buffer), at
// budgets where the search returned nothing before its states counted offloaded layers: a
// DeepSeek-V2 stage of one dense and one MoE layer, a dense stage of four layers on a 24 GB GPU,
// and Qwen3-8B at tp 2 on stages of three layers.
TEST(LayerSearchBruteForce, OneOffloadedLayerNeedsNoStagingBuffer) {
  ModelSpec v2 = test::model("deepseek-v2");
  v2.num_hidden_layers = 4;
  expect_search_matches_brute_force(v2, test::hardware("h100-sxm"), test::layout(1, 2, 16, 8, 1, 4096), 8, 30);
  expect_search_matches_brute_force(test::small_dense(8), test::hardware("rtx-3090"), test::layout(1, 2, 1, 1, 2, 2048),
                                    9, 30);
  ModelSpec qwen = test::model("qwen3-8b");
  qwen.num_hidden_layers = 6;
  expect_search_matches_brute_force(qwen, test::hardware("h100-sxm"), test::layout(2, 2, 1, 1, 1, 8192), 10, 30);
}

// Under ordered backward (Megatron-LM's local implementation, Hugging Face's eager autograd) a
// layer's backward runs after the later layers' backward freed their saved tensors, so the
// stage's peak depends on where each layer's kept bytes and working set sit (stage_totals). The
// search bounded each pass's kept bytes by its worst transient wherever it sat and pruned partial
// plans on (kept, recompute, offload) alone: on the stages below it returned nothing in 80 of the
// searches where a plan fitted (small_dense(4) on the H200 was the first found: stage 0 at 16 of
// 87 fitting budgets) and a slower plan in 38 (up to 3% slower). Its states now carry the ordered
// transient, and it is exact here too: the same checks as above (fastest, lowest peak on ties).
TrainingSpec framework_layout(const char* framework, int64_t tp, int64_t pp, int64_t dp, int64_t ep, int64_t mbs,
                              int64_t seq) {
  TrainingSpec t = apply_framework(test::layout(tp, pp, dp, ep, mbs, seq), framework);
  t.framework = framework;
  return t;
}

TEST(LayerSearchBruteForce, MegatronLocalOrderedBackward) {
  const char* fw = kMegatronLocalFramework;
  const HardwareSpec h200 = apply_framework(test::hardware("h200"), fw);
  const HardwareSpec pcie = apply_framework(test::hardware("a100-80gb-pcie"), fw);
  ASSERT_TRUE(framework_layout(fw, 1, 2, 1, 1, 2, 2048).ordered_backward);
  expect_search_matches_brute_force(test::small_dense(4), h200, framework_layout(fw, 1, 2, 1, 1, 2, 2048), 11, 40);
  expect_search_matches_brute_force(test::small_dense(3), h200, framework_layout(fw, 1, 1, 1, 1, 2, 2048), 12, 40);
  expect_search_matches_brute_force(test::small_dense(5), h200, framework_layout(fw, 1, 1, 1, 1, 1, 2048), 13, 40);
  expect_search_matches_brute_force(test::small_dense(5), pcie, framework_layout(fw, 2, 2, 1, 1, 2, 4096), 14, 40);
  expect_search_matches_brute_force(test::small_dense(8), h200, framework_layout(fw, 1, 2, 1, 1, 1, 2048), 15, 40);
  expect_search_matches_brute_force(test::model("moe-mla-moe-toy"), h200, framework_layout(fw, 1, 2, 1, 1, 1, 4096), 16,
                                    30);
  ModelSpec qwen = test::model("qwen3-8b");
  qwen.num_hidden_layers = 5;
  expect_search_matches_brute_force(qwen, h200, framework_layout(fw, 2, 2, 1, 1, 1, 8192), 17, 40);
}

TEST(LayerSearchBruteForce, HfOrderedBackward) {
  const char* fw = kHfFramework;
  const HardwareSpec h100 = apply_framework(test::hardware("h100-sxm"), fw);
  ASSERT_TRUE(framework_layout(fw, 1, 1, 1, 1, 2, 2048).ordered_backward);
  expect_search_matches_brute_force(test::small_dense(4), h100, framework_layout(fw, 1, 1, 1, 1, 2, 2048), 18, 40);
  expect_search_matches_brute_force(test::small_dense(8), h100, framework_layout(fw, 1, 2, 1, 1, 1, 2048), 19, 40);
  expect_search_matches_brute_force(test::model("moe-mla-moe-toy"), h100, framework_layout(fw, 1, 1, 1, 1, 1, 4096), 20,
                                    30);
  ModelSpec qwen = test::model("qwen3-8b");
  qwen.num_hidden_layers = 4;
  expect_search_matches_brute_force(qwen, h100, framework_layout(fw, 1, 1, 1, 1, 1, 4096), 21, 30);
}

// Wizard-Vicuna-30B cut to 3 layers, mixed GRPO 4 x 6144 with fp32 rank-64 adapters and dropout on its
// MLP: a kept layer's forward holds its adapters' fp32 copies of act (LayerCost::forward_peak_bytes).
// Here that sets no peak (the head's and the backward's working sets are larger), so the kept options'
// forward peaks are raised until it sets some: the search still finds brute force's fastest plan
// within each budget, pricing both by stage_totals.
TEST(LayerSearchBruteForce, HfKeptLayerForwardPeak) {
  const char* fw = kHfFramework;
  const HardwareSpec h200 = apply_framework(test::hardware("h200"), fw);
  ModelSpec m =
      test::hf_model_as_built(std::string(REMAT_TEST_DATA) + "/data/hf_configs/wizard-vicuna-30b-uncensored.json");
  m.num_hidden_layers = 3;
  TrainingSpec t = test::layout(1, 1, 1, 1, 4, 6144);
  t.precision = Precision::mixed;
  t = apply_framework(t, fw);
  t.framework = fw;
  t.lora_rank = 64, t.lora_dropout = 0.05, t.lora_adapter_bytes = 4;
  t.lora_targets = resolve_lora_targets(m, {"gate_proj", "up_proj", "down_proj"}).targets;
  const SearchSpace sp = build_search_space(m, h200, t, SearchOptions{});
  for (const double raised : {1.0, 1.5, 2.0}) {
    SearchSpace scaled = sp, without = sp;
    size_t kept_options = 0;
    for (auto& kind : scaled.options)
      for (auto& option : kind)
        kept_options += option.cost.forward_peak_bytes > 0, option.cost.forward_peak_bytes *= raised;
    for (auto& kind : without.options)
      for (auto& option : kind) option.cost.forward_peak_bytes = 0;
    EXPECT_GT(kept_options, 0u);
    const std::vector<test::Priced> with_forward = test::every_assignment(scaled, 0);
    const std::vector<test::Priced> without_forward = test::every_assignment(without, 0);
    size_t bound = 0;
    for (size_t i = 0; i < with_forward.size(); ++i)
      bound += with_forward[i].peak_bytes > without_forward[i].peak_bytes;
    if (raised > 1) EXPECT_GT(bound, 0u) << raised;
    expect_space_matches_brute_force(scaled, m.name + " x" + std::to_string(raised), 22, 60);
  }
}

// plan's stages are searched on worker threads; once one stage's search is refused, the others'
// results are not used, and the caller stops them (best_stage_plan's `stop`).
TEST(LayerSearch, AStoppedSearchReturnsNothing) {
  const SearchSpace sp = build_search_space(test::small_dense(8), test::hardware("h100-sxm"),
                                            test::layout(1, 2, 1, 1, 2, 2048), SearchOptions{});
  const double budget = 1e15;  // everything fits
  std::atomic<bool> stop{false};
  const std::optional<StagePlan> running =
      best_stage_plan(sp, 0, budget, std::numeric_limits<double>::infinity(), &stop);
  ASSERT_TRUE(running);
  EXPECT_EQ(running->per_layer.size(), 4u);
  stop.store(true);
  EXPECT_FALSE(best_stage_plan(sp, 0, budget, std::numeric_limits<double>::infinity(), &stop));
}

}  // namespace
}  // namespace remat
