#include "remat/search/layer_dp.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace remat {

namespace {

// Partial sums over the layers decided so far.
struct State {
  double kept = 0, rc = 0, off = 0;
  int parent = -1;  // index in the previous layer's states
  int option = -1;  // option taken at this layer
};

// Drops every state another state matches or beats on kept, recompute and
// offload. Sorted by kept, a state is beaten iff an earlier one has both
// recompute and offload no larger: a staircase over (rc -> least off) answers that.
std::vector<State> pareto(std::vector<State> states) {
  std::sort(states.begin(), states.end(), [](const State& a, const State& b) {
    if (a.kept != b.kept) return a.kept < b.kept;
    if (a.rc != b.rc) return a.rc < b.rc;
    return a.off < b.off;
  });
  std::vector<State> out;
  std::map<double, double> stairs;  // rc ascending, off strictly descending
  for (const State& s : states) {
    auto it = stairs.upper_bound(s.rc);
    if (it != stairs.begin() && std::prev(it)->second <= s.off) continue;
    out.push_back(s);
    auto erase_from = stairs.lower_bound(s.rc);
    while (erase_from != stairs.end() && erase_from->second >= s.off) erase_from = stairs.erase(erase_from);
    stairs[s.rc] = s.off;
  }
  return out;
}

struct Bounds {
  double kept_cap = 0;   // largest kept sum that fits
  double transient = 0;  // no option above this transient
  double rc_cap = 0;     // recompute beyond this cannot beat the known time
};

// One pass of the DP under `b`; returns the fastest fitting final plan.
std::optional<StagePlan> solve(const SearchSpace& space, size_t stage, double budget, const Bounds& b) {
  const StageSpace& st = space.stages[stage];
  std::vector<std::vector<State>> layers;
  std::vector<State> current = {State{}};
  for (int kind : st.kinds) {
    std::vector<State> next;
    const auto& opts = space.options[kind];
    for (size_t p = 0; p < current.size(); ++p)
      for (size_t o = 0; o < opts.size(); ++o) {
        const LayerCost& c = opts[o].cost;
        if (c.transient_bytes > b.transient) continue;
        State s{current[p].kept + c.kept_bytes, current[p].rc + c.recompute_s, current[p].off + c.offload_bytes, int(p),
                int(o)};
        if (s.kept <= b.kept_cap && s.rc <= b.rc_cap) next.push_back(s);
      }
    current = pareto(std::move(next));
    if (current.empty()) return std::nullopt;
    layers.push_back(current);
  }
  std::optional<StagePlan> best;
  for (size_t f = 0; f < current.size(); ++f) {
    std::vector<LayerChoice> choices(st.kinds.size());
    LayerSums sums;
    int idx = int(f);
    for (size_t j = st.kinds.size(); j-- > 0;) {
      const State& s = layers[j][size_t(idx)];
      const LayerOption& opt = space.options[st.kinds[j]][size_t(s.option)];
      choices[j] = opt.choice;
      sums.add(opt.cost);
      idx = s.parent;
    }
    const StageTotals tot = stage_totals(st.base, sums);
    if (tot.peak_bytes > budget) continue;
    if (!best || tot.microbatch_s < best->totals.microbatch_s ||
        (tot.microbatch_s == best->totals.microbatch_s && tot.peak_bytes < best->totals.peak_bytes))
      best = StagePlan{std::move(choices), tot};
  }
  return best;
}

}  // namespace

std::optional<StagePlan> best_stage_plan(const SearchSpace& space, size_t stage, double budget_bytes,
                                         double known_microbatch_s) {
  const StageSpace& st = space.stages[stage];
  std::set<double> caps;
  LayerSums keep;
  for (int kind : st.kinds) {
    keep.add(space.keep_cost[kind]);
    for (const auto& o : space.options[kind]) caps.insert(o.cost.transient_bytes);
  }
  // every plan spends at least the forward and backward of all layers
  const double floor_s = stage_totals(st.base, keep).fwd_s + stage_totals(st.base, keep).bwd_s;
  std::optional<StagePlan> best;
  for (double cap : caps) {
    const double transient = std::max(cap, st.base.head_transient_bytes);
    const double room = budget_bytes - st.base.static_bytes.total() - transient;
    if (room < 0) continue;
    const double known = best ? std::min(best->totals.microbatch_s, known_microbatch_s) : known_microbatch_s;
    Bounds b{room / double(std::max<int64_t>(1, st.base.in_flight)), cap,
             known - floor_s + 1e-12 * std::max(1.0, known)};
    auto plan = solve(space, stage, budget_bytes, b);
    if (!plan) continue;
    if (!best || plan->totals.microbatch_s < best->totals.microbatch_s ||
        (plan->totals.microbatch_s == best->totals.microbatch_s && plan->totals.peak_bytes < best->totals.peak_bytes))
      best = std::move(plan);
  }
  return best;
}

}  // namespace remat
