// A lower bound on what the layers after a position still add to a stage's time, given how
// many bytes they may keep: the per-layer search (layer_dp.cpp) drops a partial plan whose
// completions cannot all fit without more recompute or offload than the best plan known.
#pragma once
#include <array>
#include <map>
#include <vector>

#include "remat/cost/layer_cost.hpp"

namespace remat {

using KeptCostPoints = std::vector<std::pair<double, double>>;  // (kept bytes, cost)

// The least cost a run of layers can add while keeping at most `x` bytes, over convex
// combinations of each layer's options (the linear relaxation of the choice): convex and
// non-increasing in x, +infinity below the least the layers can keep.
class KeptCostCurve {
 public:
  // Adds `copies` layers whose options cost `points` (kept bytes, cost) each.
  void add_layers(KeptCostPoints points, double copies);
  // The same with the options' falling lower hull (add_layers finds it).
  void add_hull(const KeptCostPoints& hull, double copies);
  void finish();  // call once after the last add_layers
  void clear();   // back to no layers, keeping the memory
  double at(double kept_bytes) const;

 private:
  double least_kept_ = 0, cost_at_least_ = 0;
  std::vector<std::pair<double, double>> segments_;  // (slope < 0, kept length), steepest first
  std::vector<double> ends_kept_, ends_cost_;        // cumulative, after each segment
};

// Per stage position, the curves of the layers after it for the costs a stage's time grows
// with: recompute seconds + lambda x offload copy seconds, for each lambda of kCostMixes, and the
// copy seconds alone.
inline constexpr std::array<double, 16> kCostMixes = {0,    0.03125, 0.0625, 0.09375, 0.125, 0.15625, 0.1875, 0.21875,
                                                      0.25, 0.3125,  0.375,  0.5,     0.75,  1,       2,      4};
struct CompletionCurves {
  std::array<KeptCostCurve, kCostMixes.size()> mixed;
  KeptCostCurve copy_s;
};

// The time of a plan of the stage is floor + max(rc, rc + c - fwd window, c - bwd window,
// 2c - both windows) for its recompute rc and copy time c (stage_totals). Every convex mix of
// those pieces is at most their max and grows linearly in the later layers' costs, so its least
// value over completions keeping at most `room_kept_bytes` bounds the time from below; the
// bound is the largest over the mixes whose direction is one of the curves'.
struct StageTimeShape {
  double floor_s = 0, fwd_window_s = 0, bwd_window_s = 0, copy_bytes_per_s = 1;
};
// `best_mix` (when given): which mix gave the bound, for mix_lower_s.
double completion_lower_s(const StageTimeShape& shape, const CompletionCurves& after, double rc_s, double off_bytes,
                          double room_kept_bytes, int* best_mix = nullptr);
// The bound of one mix alone (-1: recompute with nothing more), a cheaper and weaker bound.
double mix_lower_s(const StageTimeShape& shape, const CompletionCurves& after, int mix, double rc_s, double off_bytes,
                   double room_kept_bytes);

// The curves after each layer of a stage (layer j: the layers j + 1 ...), from the options each
// layer's kind admits, each built the first time it is asked for. One object serves a stage's
// passes in turn (reset): a kind's hulls are kept while its admitted options stay the same, and
// the curves' memory is reused.
class StageCompletions {
 public:
  StageCompletions() = default;
  StageCompletions(const std::vector<int>& kinds, const std::vector<std::vector<const LayerCost*>>& admitted_by_kind,
                   double copy_bytes_per_s);
  void reset(const std::vector<int>& kinds, const std::vector<std::vector<const LayerCost*>>& admitted_by_kind,
             double copy_bytes_per_s);
  const CompletionCurves& after(size_t layer);

 private:
  void build_hulls();
  std::vector<int> kinds_;
  std::vector<std::vector<const LayerCost*>> admitted_by_kind_;
  double copy_bytes_per_s_ = 1;
  using KindHulls = std::array<KeptCostPoints, kCostMixes.size() + 1>;  // per cost (last: copy alone)
  std::vector<const KindHulls*> hulls_;                                 // per kind, in known_hulls_
  // per kind, the hulls of every admitted list seen since the copy rate was set
  std::vector<std::map<std::vector<const LayerCost*>, KindHulls>> known_hulls_;
  std::vector<std::vector<double>> counts_after_;  // per layer, per kind
  std::vector<CompletionCurves> curves_;
  std::vector<bool> built_;
  bool hulls_ready_ = false;
};

}  // namespace remat
