#include "remat/search/layer_dp.hpp"
#include "remat/spec/problems.hpp"

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

// What every plan of the stage shares: forward and backward time, the
// windows offload copies hide in, the host link rate.
struct Fixed {
  double floor_s = 0;  // forward + backward of every layer, head, p2p
  double fwd_window_s = 0, bwd_window_s = 0;
  double copy_bytes_per_s = 1;
  // A lower bound on the final microbatch time of a partial plan: recompute
  // and offload only grow as layers are added, and the time never falls
  // when either grows.
  double lower_bound(double rc, double off) const {
    const double c = off / copy_bytes_per_s;
    return floor_s + rc + std::max(0.0, c - fwd_window_s) + std::max(0.0, c - bwd_window_s - rc);
  }
};

Fixed fixed_part(const SearchSpace& space, size_t stage) {
  const StageSpace& st = space.stages[stage];
  LayerSums keep;
  for (int kind : st.kinds) keep.add(space.keep_cost[kind]);
  const StageTotals t = stage_totals(st.base, keep);
  Fixed f;
  f.floor_s = t.fwd_s + t.bwd_s;
  f.fwd_window_s = t.fwd_s - keep.fwd_comm_s;
  f.bwd_window_s = t.bwd_s - keep.bwd_comm_s;
  f.copy_bytes_per_s = st.base.copy_bytes_per_s;
  return f;
}

struct Bounds {
  double kept_cap = 0;   // largest kept sum that fits
  double transient = 0;  // no option above this transient
  double staging = 0;    // no option offloading more than this
  double known_s = 0;    // a fitting plan's time: partial plans that cannot beat it are dropped
};

// One pass of the DP under `b`; returns the fastest fitting final plan.
// The partial plans one stage's search may extend (over all its bound
// pairs) before it gives up with a named refusal instead of running for
// minutes: MoE and MLA layers have many options and their Pareto sets grow
// fast under a loose budget.
constexpr int64_t kMaxExtendedPlans = 60'000'000;

[[noreturn]] void refuse_search(size_t stage, int64_t layers) {
  throw InputError({{"command line", "--no-per-layer", "stage " + std::to_string(stage),
                     "the per-layer search of this stage's " + std::to_string(layers) + " layers passed " +
                         std::to_string(kMaxExtendedPlans) +
                         " partial plans; plan without it (--no-per-layer) or with more pipeline stages"}});
}

std::optional<StagePlan> solve(const SearchSpace& space, size_t stage, double budget, const Fixed& fx, const Bounds& b,
                               int64_t& work) {
  const StageSpace& st = space.stages[stage];
  std::vector<std::vector<State>> layers;
  std::vector<State> current = {State{}};
  for (int kind : st.kinds) {
    std::vector<State> next;
    const auto& opts = space.options[kind];
    work += int64_t(current.size() * opts.size());
    if (work > kMaxExtendedPlans) refuse_search(stage, int64_t(st.kinds.size()));
    for (size_t p = 0; p < current.size(); ++p)
      for (size_t o = 0; o < opts.size(); ++o) {
        const LayerCost& c = opts[o].cost;
        if (c.transient_bytes > b.transient || c.offload_bytes > b.staging) continue;
        State s{current[p].kept + c.kept_bytes, current[p].rc + c.recompute_s, current[p].off + c.offload_bytes, int(p),
                int(o)};
        if (s.kept <= b.kept_cap && fx.lower_bound(s.rc, s.off) <= b.known_s) next.push_back(s);
      }
    current = pareto(std::move(next));
    if (current.empty()) return std::nullopt;
    layers.push_back(current);
  }
  std::optional<StagePlan> best;
  for (size_t f = 0; f < current.size(); ++f) {
    std::vector<LayerChoice> choices(st.kinds.size());
    std::vector<const LayerCost*> costs(st.kinds.size());
    int idx = int(f);
    for (size_t j = st.kinds.size(); j-- > 0;) {
      const State& s = layers[j][size_t(idx)];
      const LayerOption& opt = space.options[st.kinds[j]][size_t(s.option)];
      choices[j] = opt.choice;
      costs[j] = &opt.cost;
      idx = s.parent;
    }
    LayerSums sums;  // in layer order: under ordered backward a layer's working set depends on the later layers
    for (const LayerCost* c : costs) sums.add(*c);
    const StageTotals tot = stage_totals(st.base, sums);
    if (tot.peak_bytes > budget) continue;
    if (!best || tot.microbatch_s < best->totals.microbatch_s ||
        (tot.microbatch_s == best->totals.microbatch_s && tot.peak_bytes < best->totals.peak_bytes))
      best = StagePlan{std::move(choices), tot};
  }
  return best;
}

// A good fitting plan, fast: the first a layers (of each kind) take option A,
// the next b option B, the rest keep, over all pairs and counts. Its time
// bounds the exact search.
double pair_family_bound(const SearchSpace& space, size_t stage, double budget) {
  const StageSpace& st = space.stages[stage];
  double best = std::numeric_limits<double>::infinity();
  // the options no other beats on both kept bytes and recompute + copy time
  std::vector<LayerOption> opts;
  const auto& all = space.options[st.kinds.back()];
  const auto cost_s = [&](const LayerCost& c) { return c.recompute_s + c.offload_bytes / st.base.copy_bytes_per_s; };
  for (const auto& a : all) {
    bool beaten = false;
    for (const auto& b : all)
      beaten = beaten || (b.cost.kept_bytes <= a.cost.kept_bytes && cost_s(b.cost) < cost_s(a.cost)) ||
               (b.cost.kept_bytes < a.cost.kept_bytes && cost_s(b.cost) <= cost_s(a.cost));
    if (!beaten) opts.push_back(a);
  }
  const size_t n = st.kinds.size();
  for (size_t a = 0; a < opts.size(); ++a)
    for (size_t b = 0; b < opts.size(); ++b)
      for (size_t na = 0; na <= n; ++na)
        for (size_t nb = 0; na + nb <= n; ++nb) {
          LayerSums sums;
          for (size_t j = 0; j < n; ++j) {
            const int kind = st.kinds[j];
            if (kind != st.kinds.back())
              sums.add(space.keep_cost[kind]);
            else
              sums.add(j < na ? opts[a].cost : j < na + nb ? opts[b].cost : space.keep_cost[kind]);
          }
          const StageTotals t = stage_totals(st.base, sums);
          if (t.peak_bytes <= budget) best = std::min(best, t.microbatch_s);
        }
  return best;
}

}  // namespace

std::optional<StagePlan> best_stage_plan(const SearchSpace& space, size_t stage, double budget_bytes,
                                         double known_microbatch_s) {
  const StageSpace& st = space.stages[stage];
  // The stage's transient is the largest layer transient plus, with offload,
  // the largest offloaded layer (a staging buffer). Bounding both and
  // letting only options within the bounds take part keeps the Pareto
  // pruning exact: a pruned partial plan's dominator uses no option larger
  // on either, so it fits whenever the pruned one would. Under ordered
  // backward (Megatron-LM's local implementation) the stage's transient also
  // depends on where each layer sits, which the pruning does not track: the
  // plan found fits and is priced exactly, and can be a little slower than
  // the fastest (1% in PlannerExhaustive.MegatronLocalOrderedBackward;
  // tracking it exactly made the LLaMA3-70B search 45 times slower, and
  // taking the transient bound off it 25% slower for a 0.1% faster plan).
  std::set<double> caps, stagings;
  for (int kind : st.kinds)
    for (const auto& o : space.options[kind])
      caps.insert(o.cost.transient_bytes), stagings.insert(o.cost.offload_bytes);
  const Fixed fx = fixed_part(space, stage);
  double known = std::min(known_microbatch_s, pair_family_bound(space, stage, budget_bytes));
  // bound pairs that admit the same options need one pass, with the
  // smallest transient (the most room)
  std::set<std::vector<bool>> seen;
  std::optional<StagePlan> best;
  int64_t work = 0;
  for (double cap : caps)
    for (double staging : stagings) {
      std::vector<bool> admitted;
      for (int kind = 0; kind < kLayerKinds; ++kind)
        for (const auto& o : space.options[kind])
          admitted.push_back(o.cost.transient_bytes <= cap && o.cost.offload_bytes <= staging);
      if (!seen.insert(admitted).second) continue;
      const double transient = std::max(cap, st.base.head_transient_bytes);
      const double room = budget_bytes - st.base.static_bytes.total() - transient;
      if (room < 0) continue;
      // the least kept bytes any admitted assignment can reach
      double least = 0;
      for (int kind : st.kinds) {
        double m = std::numeric_limits<double>::infinity();
        for (const auto& o : space.options[kind])
          if (o.cost.transient_bytes <= cap && o.cost.offload_bytes <= staging) m = std::min(m, o.cost.kept_bytes);
        least += m;
      }
      if (least * double(std::max<int64_t>(1, st.base.in_flight)) > room) continue;
      if (best) known = std::min(known, best->totals.microbatch_s);
      Bounds b{room / double(std::max<int64_t>(1, st.base.in_flight)), cap, staging, known * (1 + 1e-12)};
      auto plan = solve(space, stage, budget_bytes, fx, b, work);
      if (!plan) continue;
      if (!best || plan->totals.microbatch_s < best->totals.microbatch_s ||
          (plan->totals.microbatch_s == best->totals.microbatch_s && plan->totals.peak_bytes < best->totals.peak_bytes))
        best = std::move(plan);
    }
  return best;
}

StagePlan smallest_stage_plan(const SearchSpace& space, size_t stage) {
  const StageSpace& st = space.stages[stage];
  std::set<double> caps, stagings;
  for (int kind : st.kinds)
    for (const auto& o : space.options[kind])
      caps.insert(o.cost.transient_bytes), stagings.insert(o.cost.offload_bytes);
  // fewer kept bytes first, then less recompute and copy traffic
  const auto better = [](const LayerCost& a, const LayerCost& b) {
    if (a.kept_bytes != b.kept_bytes) return a.kept_bytes < b.kept_bytes;
    return a.recompute_s + a.offload_bytes < b.recompute_s + b.offload_bytes;
  };
  std::optional<StagePlan> best;
  for (double cap : caps)
    for (double staging : stagings) {
      StagePlan plan;
      LayerSums sums;
      bool complete = true;
      for (int kind : st.kinds) {
        const LayerOption* pick = nullptr;
        for (const auto& o : space.options[kind])
          if (o.cost.transient_bytes <= cap && o.cost.offload_bytes <= staging && (!pick || better(o.cost, pick->cost)))
            pick = &o;
        if (!pick) {
          complete = false;
          break;
        }
        plan.per_layer.push_back(pick->choice);
        sums.add(pick->cost);
      }
      if (!complete) continue;
      plan.totals = stage_totals(st.base, sums);
      if (!best || plan.totals.peak_bytes < best->totals.peak_bytes ||
          (plan.totals.peak_bytes == best->totals.peak_bytes && plan.totals.microbatch_s < best->totals.microbatch_s))
        best = std::move(plan);
    }
  if (best) return *best;
  // no options (per-layer search off): every layer keeps everything
  StagePlan keep;
  LayerSums sums;
  for (int kind : st.kinds) keep.per_layer.push_back(LayerChoice{LayerMode::keep, {}}), sums.add(space.keep_cost[kind]);
  keep.totals = stage_totals(st.base, sums);
  return keep;
}

}  // namespace remat
