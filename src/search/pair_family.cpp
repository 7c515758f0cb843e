#include "pair_family.hpp"

#include <limits>
#include <vector>

namespace remat {

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

namespace {

// The options of `all` no other beats on both kept bytes and recompute + copy time.
std::vector<LayerOption> undominated(const std::vector<LayerOption>& all, double copy_bytes_per_s) {
  std::vector<LayerOption> opts;
  const auto cost_s = [&](const LayerCost& c) { return c.recompute_s + c.offload_bytes / copy_bytes_per_s; };
  for (const auto& a : all) {
    bool beaten = false;
    for (const auto& b : all)
      beaten = beaten || (b.cost.kept_bytes <= a.cost.kept_bytes && cost_s(b.cost) < cost_s(a.cost)) ||
               (b.cost.kept_bytes < a.cost.kept_bytes && cost_s(b.cost) <= cost_s(a.cost));
    if (!beaten) opts.push_back(a);
  }
  return opts;
}

}  // namespace

// A good fitting plan, fast: the first a layers of the last layer's kind take option A, the
// next b option B, the rest keep (the other kinds keep), over all pairs and counts. Its time
// bounds the exact search. The plans share their prefixes: the sums of the layers up to the
// last one under A (or B) are carried from one count to the next, and only the keeping rest
// is added per plan; A = B is the single-option family. Where every option recomputes and
// copies at least what keeping does, a plan whose time's lower bound is above the best so far
// ends its count: more layers under A or B only raise that bound.
double pair_family_bound(const SearchSpace& space, size_t stage, const Fixed& fx, double budget) {
  const StageSpace& st = space.stages[stage];
  const std::vector<LayerOption> opts = undominated(space.options[st.kinds.back()], st.base.copy_bytes_per_s);
  const size_t n = st.kinds.size();
  const int last_kind = st.kinds.back();
  const size_t of_last_kind = size_t(std::count(st.kinds.begin(), st.kinds.end(), last_kind));
  const LayerCost& keep = space.keep_cost[last_kind];
  const bool options_grow = std::all_of(opts.begin(), opts.end(), [&](const LayerOption& o) {
    return o.cost.recompute_s >= keep.recompute_s && o.cost.offload_bytes >= keep.offload_bytes;
  });
  // adds the layers from `j` through the next one of the last kind, which takes `c`; returns the layer after it
  const auto advance = [&](LayerSums& sums, size_t j, const LayerCost& c) {
    for (; st.kinds[j] != last_kind; ++j) sums.add(space.keep_cost[st.kinds[j]]);
    sums.add(c);
    return j + 1;
  };
  double best = std::numeric_limits<double>::infinity();
  // the plan whose layers from `j` on keep (runs of one kind added at once); false when it is
  // slower than the best so far for sure
  const auto price = [&](LayerSums sums, size_t j) {
    while (j < n) {
      size_t end = j + 1;
      while (end < n && st.kinds[end] == st.kinds[j]) ++end;
      sums.add(space.keep_cost[st.kinds[j]], int64_t(end - j));
      j = end;
    }
    if (fx.lower_bound(sums.recompute_s, sums.offload_bytes) > best * (1 + 1e-12)) return false;
    const StageTotals t = stage_totals(st.base, sums);
    if (t.peak_bytes <= budget) best = std::min(best, t.microbatch_s);
    return true;
  };
  price(LayerSums{}, 0);  // every layer keeps
  for (size_t a = 0; a < opts.size(); ++a) {
    LayerSums with_a;
    size_t after_a = 0;
    for (size_t count_a = 1; count_a <= of_last_kind; ++count_a) {
      after_a = advance(with_a, after_a, opts[a].cost);
      if (!price(with_a, after_a) && options_grow) break;
      for (size_t b = 0; b < opts.size(); ++b) {
        if (b == a) continue;
        LayerSums with_b = with_a;
        size_t after_b = after_a;
        for (size_t count_b = 1; count_a + count_b <= of_last_kind; ++count_b) {
          after_b = advance(with_b, after_b, opts[b].cost);
          if (!price(with_b, after_b) && options_grow) break;
        }
      }
    }
  }
  return best;
}

}  // namespace remat
