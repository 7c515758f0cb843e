// The relaxed completion bound of the per-layer search (src/search/completion_bound.cpp): the
// curve of least cost by kept bytes against hand-derived values, and the time bound against
// brute force over every completion of small random stages (it must never exceed the fastest
// completion that fits, or the search would drop the best plan).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "remat/search/completion_bound.hpp"

namespace remat {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(CompletionBound, CurveFollowsTheLowerHullOfTheOptions) {
  // options (kept, cost): (6, 5) lies above the hull (0, 10) - (4, 4) - (10, 0)
  KeptCostCurve curve;
  curve.add_layers({{0, 10}, {4, 4}, {10, 0}, {6, 5}}, 2);
  curve.finish();
  // two layers: from (0, 20), slope -1.5 for 8 bytes, then -2/3 for 12 bytes
  EXPECT_EQ(curve.at(-2), kInf);
  EXPECT_DOUBLE_EQ(curve.at(0), 20);
  EXPECT_DOUBLE_EQ(curve.at(4), 14);
  EXPECT_DOUBLE_EQ(curve.at(8), 8);
  EXPECT_DOUBLE_EQ(curve.at(14), 4);
  EXPECT_DOUBLE_EQ(curve.at(20), 0);
  EXPECT_DOUBLE_EQ(curve.at(30), 0);
}

TEST(CompletionBound, CurveOfMixedLayersTakesTheSteepestSegmentsFirst) {
  // a layer (kept, cost) (2, 6) - (6, 0): slope -1.5; another (1, 3) - (3, 2): slope -0.5
  KeptCostCurve curve;
  curve.add_layers({{2, 6}, {6, 0}}, 1);
  curve.add_layers({{1, 3}, {3, 2}}, 1);
  curve.finish();
  EXPECT_EQ(curve.at(1.5), kInf);    // both keep at least 3 (a byte of slack for rounding)
  EXPECT_DOUBLE_EQ(curve.at(3), 9);  // 6 + 3
  EXPECT_DOUBLE_EQ(curve.at(5), 6);  // the first layer's segment first
  EXPECT_DOUBLE_EQ(curve.at(7), 3);
  EXPECT_DOUBLE_EQ(curve.at(8), 2.5);
  EXPECT_DOUBLE_EQ(curve.at(9), 2);
}

TEST(CompletionBound, OneLayerLeftHalfRecomputedInTheRelaxation) {
  // the last layer keeps 10 bytes for free or recomputes 1 s keeping none; 5 bytes of room:
  // the relaxation recomputes half of it
  LayerCost keep, recompute;
  keep.kept_bytes = 10;
  recompute.recompute_s = 1;
  StageCompletions curves({0, 0}, {{&keep, &recompute}}, 1e9);
  const StageTimeShape shape{2.0, 1.0, 1.0, 1e9};
  EXPECT_DOUBLE_EQ(completion_lower_s(shape, curves.after(0), 0.25, 0, 5), 2.0 + 0.25 + 0.5 * (1 - 1e-9));
  EXPECT_DOUBLE_EQ(completion_lower_s(shape, curves.after(0), 0.25, 0, 12), 2.25);  // keeps it
  EXPECT_EQ(completion_lower_s(shape, curves.after(0), 0.25, 0, -2), kInf);
  EXPECT_DOUBLE_EQ(completion_lower_s(shape, curves.after(1), 0.25, 0, 0), 2.25);  // nothing after the last
}

// floor + rc + exposed copy time, as stage_totals prices a stage
double stage_time_s(const StageTimeShape& s, double rc_s, double off_bytes) {
  const double c = off_bytes / s.copy_bytes_per_s;
  return s.floor_s + rc_s + std::max(0.0, c - s.fwd_window_s) + std::max(0.0, c - s.bwd_window_s - rc_s);
}

TEST(CompletionBound, NeverAboveTheFastestCompletionThatFits) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> unit(0, 1);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t layers = 1 + size_t(trial % 4), options = 2 + size_t(trial % 3);
    std::vector<LayerCost> costs(options);
    for (LayerCost& c : costs) {
      c.kept_bytes = std::floor(unit(rng) * 100);
      c.recompute_s = unit(rng) < 0.3 ? 0 : unit(rng) * 0.2;
      c.offload_bytes = unit(rng) < 0.5 ? 0 : std::floor(unit(rng) * 100);
    }
    std::vector<const LayerCost*> admitted;
    for (const LayerCost& c : costs) admitted.push_back(&c);
    const StageTimeShape shape{1.0, unit(rng) * 0.3, unit(rng) * 0.3, 200 + unit(rng) * 800};
    const std::vector<int> kinds(layers + 1, 0);  // a first layer decided, `layers` after it
    StageCompletions curves(kinds, {admitted}, shape.copy_bytes_per_s);
    const double rc0 = unit(rng) * 0.1, off0 = std::floor(unit(rng) * 50),
                 room = std::floor(unit(rng) * 60 * double(layers));
    double fastest = kInf;
    std::vector<size_t> pick(layers, 0);
    while (true) {  // every assignment of the later layers
      double kept = 0, rc = rc0, off = off0;
      for (size_t p : pick) kept += costs[p].kept_bytes, rc += costs[p].recompute_s, off += costs[p].offload_bytes;
      if (kept <= room) fastest = std::min(fastest, stage_time_s(shape, rc, off));
      size_t i = 0;
      while (i < layers && ++pick[i] == options) pick[i++] = 0;
      if (i == layers) break;
    }
    const double bound = completion_lower_s(shape, curves.after(0), rc0, off0, room);
    if (fastest == kInf) continue;  // any bound holds
    EXPECT_LE(bound, fastest * (1 + 1e-12)) << "trial " << trial;
    EXPECT_GE(bound, stage_time_s(shape, rc0, off0) * (1 - 1e-12)) << "trial " << trial;  // at least the partial plan's
  }
}

}  // namespace
}  // namespace remat
