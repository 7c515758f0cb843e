#include "remat/search/layer_dp.hpp"

#include "layer_front.hpp"
#include "pair_family.hpp"
#include "remat/search/completion_bound.hpp"
#include "remat/search/counts_search.hpp"
#include "remat/spec/problems.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <set>
#include <stdexcept>

namespace remat {

namespace {

using namespace dp;

// The least peak of the plans a pass adds to the earlier passes': they keep at least `least_kept`,
// hold a layer of transient `cap` (unordered backward: a plan whose transients all stay below
// it is an earlier pass's) and, in a pass of two or more offloads, the staging buffer `staging`
// (fewer offloads are the one-offload pass's, a smaller largest offload an earlier pass's).
double least_new_peak(const StageBase& base, double least_kept, double cap, double staging) {
  LayerSums sums;
  sums.kept_bytes = least_kept;
  sums.transient_bytes = cap;
  sums.offload_staging_bytes = staging;
  sums.offloaded_layers = staging > 0 ? 2 : 0;
  return stage_totals(base, sums).peak_bytes;
}

// The least kept bytes of a plan of the stage as fast as its floor (Fixed): its layers recompute
// nothing, and its offload copies hide under both the forward and the backward, so move at most
// copy rate x the shorter window. A layer saves at most `best_ratio` kept bytes per byte it
// offloads below what its least non-offloading choice keeps. +infinity when no plan of the
// admitted options recomputes nothing.
template <class Admits>
double least_kept_at_floor(const SearchSpace& space, const StageSpace& st, const Fixed& fx, const Admits& admits) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double least = 0, least_without_offload = 0, best_ratio = 0;
  const size_t kinds = size_t(space.kind_count());
  std::vector<std::array<double, 2>> per_kind(kinds);  // least kept: any choice, no offload
  std::vector<double> ratio(kinds);
  for (int kind = 0; kind < int(kinds); ++kind) {
    per_kind[size_t(kind)] = {kInf, kInf};
    for (const auto& o : space.options[kind]) {
      if (!admits(o.cost) || o.cost.recompute_s > 0) continue;
      auto& k = per_kind[size_t(kind)];
      k[0] = std::min(k[0], o.cost.kept_bytes);
      if (o.cost.offload_bytes == 0) k[1] = std::min(k[1], o.cost.kept_bytes);
    }
    for (const auto& o : space.options[kind])
      if (admits(o.cost) && o.cost.recompute_s == 0 && o.cost.offload_bytes > 0)
        ratio[size_t(kind)] =
            std::max(ratio[size_t(kind)], (per_kind[size_t(kind)][1] - o.cost.kept_bytes) / o.cost.offload_bytes);
  }
  for (int kind : st.kinds) {
    least += per_kind[size_t(kind)][0];
    least_without_offload += per_kind[size_t(kind)][1];
    best_ratio = std::max(best_ratio, ratio[size_t(kind)]);
  }
  if (least == kInf || least_without_offload == kInf) return least;
  const double hidden_bytes = fx.copy_bytes_per_s * std::max(0.0, std::min(fx.fwd_window_s, fx.bwd_window_s));
  return std::max(least, least_without_offload - best_ratio * hidden_bytes);
}

struct Bounds {
  double kept_cap = 0;   // largest kept sum that fits
  double transient = 0;  // no option above this transient
  double staging = 0;    // no option offloading more than this
  double known_s = 0;    // a fitting plan's time: partial plans that cannot beat it are dropped
  // The best plan of the earlier passes: a partial plan no faster than it (by its time's lower
  // bound) that will keep at least `tie_kept` bytes in all cannot peak below it, so cannot win.
  double tie_s = std::numeric_limits<double>::infinity();
  double tie_kept = std::numeric_limits<double>::infinity();
  // Under ordered backward: the budget less what the stage holds whatever its layers
  // (ordered_room), and the staging buffer the pass's plans hold (0 with one offload).
  bool ordered = false;
  double room = 0, staging_term = 0;
  // A kept layer's forward peak over the kept bytes before it (LayerCost::forward_peak_bytes) above
  // this cannot fit (forward_room); pruning such extensions keeps the fronts' dominance exact, since
  // a dominating state keeps no more bytes before each later layer.
  double forward_room = std::numeric_limits<double>::infinity();
  // A partial plan whose time is at least `lower_s` and that keeps `kept` bytes (at least
  // `tie_kept` of them counted against the tie) cannot win.
  bool cannot_win(double lower_s, double kept, double tie_kept) const {
    return lower_s > known_s || (lower_s >= tie_s && kept >= tie_kept);
  }
};

// Under ordered backward, after one layer: what bounds a state's peak (solve, extend_front).
// With K kept and ot (LayerSums::ordered_transient_bytes) so far, and the later layers keeping
// ks >= least_after with their own ordered transient T >= least_last_transient (the last layer's
// working set), the peak less ordered_room's constant part is in_flight x (K + ks) +
// max(max(ot - ks, T) + staging, head + largest offload) (stage_totals).
struct OrderedLayer {
  double in_flight = 1, least_after = 0;
  double q_cap = 0;     // in_flight x K + ot must not pass it (ot - ks >= ot - least_after)
  double suffix = 0;    // least T + staging over the later layers (0 without any)
  double head = 0;      // the LM head's transient (the head term is absent when 0)
  double ot_floor = 0;  // an ot at most this is never the max above: raising it to this changes nothing
};

// The budget less the constant part of the stage's peak term that grows with `term` (a LayerSums
// field): set above every other term, the peak is that constant + it. A little slack for rounding
// (it only loosens a bound).
double room_beside(const StageBase& base, double budget, double LayerSums::*term) {
  LayerSums none;
  LayerSums big;
  big.*term = 2 * stage_totals(base, none).peak_bytes + 1;
  const double constant = stage_totals(base, big).peak_bytes - big.*term;
  return budget - constant + 1e-9 * big.*term;
}

// The budget less what every plan of the stage holds besides its layers' kept bytes and
// transient under ordered backward (weights, optimizer, buffers, stage outputs: stage_totals).
// -infinity when the optimizer step alone does not fit.
double ordered_room(const StageBase& base, double budget) {
  LayerSums none;
  if (stage_totals(base, none).peak_bytes > budget) return -std::numeric_limits<double>::infinity();
  return room_beside(base, budget, &LayerSums::ordered_transient_bytes);
}

// The budget less what the stage holds beside a kept layer's forward whatever the other layers
// keep (stage_totals's forward term with nothing kept).
double forward_room(const StageBase& base, double budget) {
  return room_beside(base, budget, &LayerSums::forward_peak_bytes);
}

// The stage's peak with `kept` bytes kept and no layer transient: a lower bound on the peak of
// every plan that keeps that much, growing with it.
double least_peak_keeping(const StageBase& base, double kept) {
  LayerSums sums;
  sums.kept_bytes = kept;
  return stage_totals(base, sums).peak_bytes;
}

// The least kept sum at which the stage cannot peak below `peak_bytes` whatever its transient.
double kept_that_cannot_peak_below(const StageBase& base, double peak_bytes, double kept_cap, double cap,
                                   double staging) {
  const auto peak_lb = [&](double kept) { return least_new_peak(base, kept, cap, staging); };
  if (peak_lb(0) >= peak_bytes) return 0;
  double lo = 0, hi = std::max(kept_cap, 1.0);
  if (peak_lb(hi) < peak_bytes) return std::numeric_limits<double>::infinity();
  for (int i = 0; i < 64 && hi - lo > 1; ++i) {
    const double mid = 0.5 * (lo + hi);
    (peak_lb(mid) >= peak_bytes ? hi : lo) = mid;
  }
  return hi;
}

// One pass of the DP under `b`; returns the fastest fitting final plan.
// The partial plans one stage's search may extend (over all its bound
// pairs) before it gives up with a named refusal instead of running for
// minutes: MoE and MLA layers have many options and their Pareto sets grow
// fast under a loose budget.
constexpr int64_t kMaxExtendedPlans = 60'000'000;

// The exact search runs where the counts search cannot (ordered backward) as before: refused past
// kMaxExtendedPlans. Elsewhere the counts search takes a stage whose exact search passes
// kExactWorkBeforeCounts partial plans (about a second; the regression grid's layouts need 14M at
// most), or kDeepExactWorkBeforeCounts on a stage of more than kExactLayers layers (a few ms:
// LLaMA3-8B's 62-layer stages need 28-200M, Qwen3-32B's 64-layer stage under its sweep's budgets
// 24k at most).
constexpr size_t kExactLayers = 48;
constexpr int64_t kExactWorkBeforeCounts = 20'000'000;
constexpr int64_t kDeepExactWorkBeforeCounts = 64'000;

// What one stage's exact search may extend, and what it does past that: refuse, or (where the
// counts search can take the stage) stop and say so.
struct WorkLimit {
  int64_t plans = kMaxExtendedPlans;
  bool fall_back = false;
  bool passed = false;  // the search stopped at the limit (fall_back)
  int64_t used = 0;
  // the pair family's plans bound the search (pair_family_bound: quadratic in the layers); a
  // deep stage's search is bounded by the counts search's plan instead
  bool pair_family = true;
};

[[noreturn]] void refuse_search(size_t stage, int64_t layers) {
  throw InputError({{"command line", "--no-per-layer", "stage " + std::to_string(stage),
                     "the per-layer search of this stage's " + std::to_string(layers) + " layers passed " +
                         std::to_string(kMaxExtendedPlans) +
                         " partial plans; plan without it (--no-per-layer) or with more pipeline stages"}});
}

// Per kind, the options a pass admits (indices in space.options[kind]).
using Admitted = std::vector<std::vector<int>>;

std::vector<LayerChoice> rebuild(const SearchSpace& space, const StageSpace& st, const Links& links, int final_state,
                                 LayerSums& sums) {
  std::vector<LayerChoice> choices(st.kinds.size());
  std::vector<const LayerCost*> costs(st.kinds.size());
  int idx = final_state;
  for (size_t j = st.kinds.size(); j-- > 0;) {
    const auto [parent, option] = links.parent_option[links.layer_begin[j] + size_t(idx)];
    const LayerOption& opt = space.options[st.kinds[j]][size_t(option)];
    choices[j] = opt.choice;
    costs[j] = &opt.cost;
    idx = parent;
  }
  for (const LayerCost* c : costs)
    sums.add(*c);  // in layer order: under ordered backward a layer's working set
                   // depends on the later layers
  return choices;
}

// Per kind, every option's index in ascending order of its recompute time (ties by index).
Admitted by_recompute_time(const SearchSpace& space) {
  Admitted out(size_t(space.kind_count()));
  for (int kind = 0; kind < space.kind_count(); ++kind) {
    const auto& options = space.options[kind];
    for (size_t o = 0; o < options.size(); ++o) out[size_t(kind)].push_back(int(o));
    std::stable_sort(out[size_t(kind)].begin(), out[size_t(kind)].end(), [&](int x, int y) {
      return options[size_t(x)].cost.recompute_s < options[size_t(y)].cost.recompute_s;
    });
  }
  return out;
}

// Under ordered backward, the least transient term of the peak a state with offload sum `off`
// ends with (stage_totals: the head's, with the plan's largest offload, or the later layers').
double least_later_transient(const OrderedLayer& ord, const Bounds& b, bool one_offload, double off) {
  // one offload: the plan's largest offload is this state's, if any
  const double head = ord.head > 0 ? ord.head + (one_offload ? off : b.staging_term) : 0;
  return std::max(head, ord.suffix);
}

// The kept bytes the layers after a state may add and still fit.
double room_for_later(const Bounds& b, const OrderedLayer* ord, bool one_offload, const State& s) {
  if (!ord) return b.kept_cap - s.kept;
  return (b.room - least_later_transient(*ord, b, one_offload, s.off)) / ord->in_flight - s.kept;
}

// The candidates of one layer into ws.merged: each front state shifted by each admitted option
// that keeps it within the bounds, as one run per option (in `opts` order, each in front order,
// so sorted by kept as the front is). A state tries its options in ascending recompute time and
// stops at the first whose recompute alone lifts its time's lower bound over the known time:
// floor + recompute never exceeds the lower bound, and grows with the option's recompute.
// `one_offload`: a state that offloads already (off > 0) takes no other offloading option.
// `ord` (under ordered backward): the layer's bounds on the peak; a state's ot follows
// LayerSums::add and is raised to ord->ot_floor, so states that differ only below it compare equal.
// `after` (when given): the curves after this layer; a candidate is also held to the bound of
// the mix that bounded its parent (drop_slow_completions).
void extend_front(const std::vector<LayerOption>& options, const std::vector<int>& opts,
                  const std::vector<int>& by_recompute, const Fixed& fx, const Bounds& b, double tie_kept,
                  bool one_offload, const OrderedLayer* ord, const CompletionCurves* after, Workspace& ws) {
  if (ws.runs.size() < opts.size()) ws.runs.resize(opts.size());
  for (size_t pos = 0; pos < opts.size(); ++pos) ws.runs[pos].clear();
  ws.runs_used = opts.size();
  // the front ascends in kept bytes: past the first state that no option keeps within the cap,
  // none does; and an option that keeps a state over the cap keeps every later one over it
  // (a rounded sum never falls as an addend grows), so it leaves the live list for good
  std::vector<LiveOption>& live = ws.live;
  live.clear();
  double least_kept = std::numeric_limits<double>::infinity();
  for (int pos : by_recompute) {
    const int o = opts[size_t(pos)];
    live.push_back({&options[size_t(o)].cost, pos, o});
    least_kept = std::min(least_kept, options[size_t(o)].cost.kept_bytes);
  }
  for (size_t p = 0; p < ws.front.size(); ++p) {
    const State& prev = ws.front[p];
    if (prev.kept + least_kept > b.kept_cap) break;
    for (size_t i = 0; i < live.size(); ++i) {
      const LayerCost& c = *live[i].cost;
      const double rc = prev.rc + c.recompute_s;
      if (fx.floor_s + rc > b.known_s) break;
      const double kept = prev.kept + c.kept_bytes;
      if (kept > b.kept_cap) {
        live.erase(live.begin() + long(i--));
        continue;
      }
      if (one_offload && prev.off > 0 && c.offload_bytes > 0) continue;
      if (c.forward_peak_bytes > 0 && prev.kept + c.forward_peak_bytes > b.forward_room) continue;
      const int pos = live[i].pos, o = live[i].option;
      const double off = prev.off + c.offload_bytes;
      double ot = 0;
      if (ord) {
        ot = std::max({prev.ot - c.kept_bytes + c.grads_bytes, c.transient_bytes, ord->ot_floor});
        if (ord->in_flight * kept + ot > ord->q_cap) continue;
        if (ord->in_flight * (kept + ord->least_after) + least_later_transient(*ord, b, one_offload, off) > b.room)
          continue;
      }
      const State next{kept, rc, off, ot, int(p), o, prev.mix};
      if (b.cannot_win(fx.lower_bound(rc, off), kept, tie_kept)) continue;
      if (after && prev.mix >= 0) {
        ++ws.mix_checked;
        if (b.cannot_win(mix_lower_s(fx, *after, prev.mix, rc, off, room_for_later(b, ord, one_offload, next)), kept,
                         tie_kept)) {
          ++ws.mix_dropped;
          continue;
        }
      }
      ws.runs[size_t(pos)].push_back(next);
    }
  }
}

// Drops the front's states whose every completion is slower than the best plan known, or ties
// it while keeping too much to peak lower (extend_front's tests), by the relaxed completion's
// time: a state's extensions can only be slower than its own bound. The mix that bounded the
// parent is tried first; `full`: then every mix (completion_lower_s), which also records the
// best one. Returns how many states were dropped.
size_t drop_slow_completions(const Fixed& fx, const Bounds& b, double tie_kept, bool one_offload,
                             const OrderedLayer* ord, const CompletionCurves& after, bool full, Workspace& ws) {
  size_t out = 0;
  for (State& s : ws.front) {
    const double room_kept = room_for_later(b, ord, one_offload, s);
    if (b.cannot_win(mix_lower_s(fx, after, s.mix, s.rc, s.off, room_kept), s.kept, tie_kept)) continue;
    if (full && b.cannot_win(completion_lower_s(fx, after, s.rc, s.off, room_kept, &s.mix), s.kept, tie_kept)) continue;
    ws.front[out++] = s;
  }
  const size_t dropped = ws.front.size() - out;
  ws.front.resize(out);
  return dropped;
}

bool better(const StageTotals& a, const std::optional<StagePlan>& best) {
  return !best || a.microbatch_s < best->totals.microbatch_s ||
         (a.microbatch_s == best->totals.microbatch_s && a.peak_bytes < best->totals.peak_bytes);
}

// One pass of the DP under `b`; returns the fastest fitting final plan.
// `by_recompute`: per kind, positions in admitted[kind] in ascending order of recompute time.
// `one_offload`: the pass's plans offload at most one layer (best_stage_plan).
std::optional<StagePlan> solve(const SearchSpace& space, size_t stage, double budget, const Fixed& fx, const Bounds& b,
                               const Admitted& admitted, const Admitted& by_recompute, bool one_offload, Workspace& ws,
                               WorkLimit& work, const std::atomic<bool>* stop) {
  const StageSpace& st = space.stages[stage];
  // per layer, the least kept bytes the layers after it can add
  std::vector<double> least_after(st.kinds.size() + 1, 0.0);
  for (size_t j = st.kinds.size(); j-- > 0;) {
    double least = std::numeric_limits<double>::infinity();
    for (int o : admitted[size_t(st.kinds[j])])
      least = std::min(least, space.options[st.kinds[j]][size_t(o)].cost.kept_bytes);
    least_after[j] = least_after[j + 1] + least;
  }
  // under ordered backward, per layer the bounds after it (OrderedLayer)
  std::vector<OrderedLayer> ordered;
  if (b.ordered) {
    const size_t n = st.kinds.size();
    double least_last = std::numeric_limits<double>::infinity();
    for (int o : admitted[size_t(st.kinds.back())])
      least_last = std::min(least_last, space.options[st.kinds.back()][size_t(o)].cost.transient_bytes);
    const double in_flight = double(st.base.in_flight);
    for (size_t j = 0; j < n; ++j) {
      OrderedLayer ol;
      ol.in_flight = in_flight;
      ol.least_after = least_after[j + 1];
      ol.q_cap = b.room - b.staging_term - (in_flight - 1) * ol.least_after;
      ol.head = st.base.head_transient_bytes;
      ol.ot_floor = -std::numeric_limits<double>::infinity();
      if (j + 1 < n) {
        ol.suffix = least_last + b.staging_term;
        ol.ot_floor = ol.least_after + least_last;  // ot - ks <= least_last <= T
      }
      if (ol.head > 0)  // ot - ks + staging <= head: under the head term
        ol.ot_floor = std::max(ol.ot_floor, ol.least_after + ol.head - b.staging_term);
      ordered.push_back(ol);
    }
  }
  // per kind, the distinct offload bytes of its admitted options (pareto_sorted_ordered)
  std::vector<std::vector<double>> option_offs(b.ordered ? size_t(space.kind_count()) : 0);
  for (int kind = 0; kind < space.kind_count() && b.ordered; ++kind) {
    for (int o : admitted[size_t(kind)])
      option_offs[size_t(kind)].push_back(space.options[kind][size_t(o)].cost.offload_bytes);
    std::sort(option_offs[size_t(kind)].begin(), option_offs[size_t(kind)].end());
    option_offs[size_t(kind)].erase(std::unique(option_offs[size_t(kind)].begin(), option_offs[size_t(kind)].end()),
                                    option_offs[size_t(kind)].end());
  }
  std::vector<std::vector<const LayerCost*>>& admitted_costs = ws.admitted_costs;
  admitted_costs.resize(size_t(space.kind_count()));
  for (int kind = 0; kind < space.kind_count(); ++kind) {
    admitted_costs[size_t(kind)].clear();
    for (int o : admitted[size_t(kind)]) admitted_costs[size_t(kind)].push_back(&space.options[kind][size_t(o)].cost);
  }
  StageCompletions& completions = ws.completions;
  completions.reset(st.kinds, admitted_costs, fx.copy_bytes_per_s);
  // the bound is built and tried where fronts grow (small ones are cheap to extend as they are)
  constexpr size_t kBoundFrom = 256;
  size_t full_bound_from = 0, skip_layers = 0;
  bool mix_pays = true, mixes_set = false;
  Links& links = ws.links;
  links.parent_option.clear();
  links.layer_begin.clear();
  ws.front.assign(1, State{});
  ws.front_offs.assign(1, 0.0);
  for (size_t layer = 0; layer < st.kinds.size(); ++layer) {
    const int kind = st.kinds[layer];
    const double tie_kept = b.tie_kept - least_after[layer + 1];
    const auto& opts = admitted[size_t(kind)];
    work.used += int64_t(ws.front.size() * opts.size());
    if (work.used > work.plans) {
      if (!work.fall_back) refuse_search(stage, int64_t(st.kinds.size()));
      work.passed = true;
      return std::nullopt;
    }
    if (stop && stop->load(std::memory_order_relaxed)) return std::nullopt;
    extend_front(space.options[kind], opts, by_recompute[size_t(kind)], fx, b, tie_kept, one_offload,
                 b.ordered ? &ordered[layer] : nullptr, mix_pays && mixes_set ? &completions.after(layer) : nullptr,
                 ws);
    // the parents' mixes pay while they drop 2% of the candidates they are tried on
    if (ws.mix_checked > 0) mix_pays = ws.mix_dropped * 50 >= ws.mix_checked;
    ws.mix_checked = ws.mix_dropped = 0;
    if (b.ordered) {
      concat_runs(ws);
      merge_runs(ws);
      pareto_sorted_ordered(ws, double(st.base.in_flight), option_offs[size_t(kind)]);
    } else {
      merge_pareto(ws);
    }
    // every mix where that pays: after a layer where it dropped few states, only the parents'
    // mixes for the next few layers
    const size_t front_before = ws.front.size();
    const bool full = layer >= full_bound_from && front_before >= kBoundFrom;
    const size_t dropped =
        full || mixes_set ? drop_slow_completions(fx, b, tie_kept, one_offload, b.ordered ? &ordered[layer] : nullptr,
                                                  completions.after(layer), full, ws)
                          : 0;
    mixes_set = mixes_set || full;
    if (full) {
      const bool paid = dropped * 20 >= front_before;  // 5% or more
      skip_layers = paid ? 0 : std::min<size_t>(2 * skip_layers + 1, 8);
      full_bound_from = layer + 1 + skip_layers;
      mix_pays = mix_pays || paid;
    }
    if (ws.front.empty()) return std::nullopt;
    links.layer_begin.push_back(links.parent_option.size());
    for (const State& s : ws.front) links.parent_option.emplace_back(s.parent, s.option);
  }
  // the final states by their time from the sums (a lower bound of the exact time, equal to it
  // when the choices change only recompute and offload); each is priced exactly, in that order,
  // until none left can be as fast as the best that fits
  std::vector<std::pair<double, int>> by_time;
  for (size_t f = 0; f < ws.front.size(); ++f)
    by_time.emplace_back(fx.lower_bound(ws.front[f].rc, ws.front[f].off), int(f));
  std::sort(by_time.begin(), by_time.end());
  std::optional<StagePlan> best;
  int best_state = -1;
  for (const auto& [lower_s, f] : by_time) {
    if (best && lower_s > best->totals.microbatch_s * (1 + 1e-12)) break;
    // only a lower peak can win a tie in time: its least peak first
    if (best && lower_s >= best->totals.microbatch_s &&
        least_peak_keeping(st.base, ws.front[size_t(f)].kept) > best->totals.peak_bytes)
      continue;
    LayerSums sums;
    std::vector<LayerChoice> choices = rebuild(space, st, links, f, sums);
    const StageTotals tot = stage_totals(st.base, sums);
    if (tot.peak_bytes > budget) continue;
    // of plans equal in time and peak, the first in the front's order (lower bounds equal up to rounding)
    const bool tie = best && tot.microbatch_s == best->totals.microbatch_s && tot.peak_bytes == best->totals.peak_bytes;
    if (better(tot, best) || (tie && f < best_state)) best = StagePlan{std::move(choices), tot}, best_state = f;
  }
  return best;
}

// best_stage_plan's exact search, within `work`.
std::optional<StagePlan> exact_stage_plan(const SearchSpace& space, size_t stage, double budget_bytes,
                                          double known_microbatch_s, const std::atomic<bool>* stop, WorkLimit& work) {
  const StageSpace& st = space.stages[stage];
  // The stage's transient is the largest layer transient plus, with two or
  // more offloaded layers, the largest offloaded layer (a staging buffer).
  // Bounding both and letting only options within the bounds take part keeps
  // the Pareto pruning exact: a pruned partial plan's dominator uses no option
  // larger on either, so it fits whenever the pruned one would; but for the
  // buffer's count. A plan offloading exactly one layer needs no buffer, and
  // its dominator could offload two and need one (or a partial plan that
  // offloads nothing yet, and ends offloading one layer, be pruned by one that
  // ends offloading two). Pruning those made the search return nothing at
  // budgets where such a plan fitted (DeepSeek-V3 in tests/test_layer_dp.cpp):
  // the time it was held to (pair_family_bound, or the caller's R plans) came
  // from a one-offload plan, so every plan it could still reach was slower and
  // was dropped too. So the passes under the least staging bound (0: no
  // offload) admit every offloading option within the transient bound, at most
  // one to a plan: a dominator there offloads no more than the state it prunes
  // (its offload sum is no larger, 0 when the other's is), so it needs no
  // buffer either, and the LM head's, its one offloaded layer, is no larger.
  // Plans offloading two or more layers are the other passes'.
  //
  // Under ordered backward (Megatron-LM's local implementation, Hugging Face's
  // eager autograd) a layer's backward runs after the later layers' freed
  // their saved tensors, so the stage's transient depends on where each layer
  // sits: stage_totals takes max over layers j of (j's working set less what
  // the layers after j keep). A transient bound per pass with its kept cap
  // (worst transient wherever it sits) and pruning on (kept, recompute,
  // offload) alone returned nothing at budgets where a plan fitted (a plan
  // whose large-transient layer sits early, under later kept bytes, was over
  // every pass's cap) and could return a slower plan. So there the search is
  // exact too: the states carry that ordered transient so far (ot), the peak's
  // bounds follow it layer by layer (OrderedLayer: the later layers keep at
  // least their least kept bytes, and the last one holds its working set),
  // and a state prunes another only if it also has no more of
  // q = in_flight x kept + ot (pareto_sorted_ordered): the peak of every
  // completion grows with kept and q. The peak is then bounded by position,
  // not by a transient bound, so one transient bound (the largest) serves;
  // the staging passes stay as above.
  std::set<double> caps, stagings;
  for (int kind : st.kinds)
    for (const auto& o : space.options[kind])
      caps.insert(o.cost.transient_bytes), stagings.insert(o.cost.offload_bytes);
  if (st.base.static_bytes.total() > budget_bytes) return std::nullopt;  // weights and optimizer alone exceed it
  // the ordered bounds (OrderedLayer) take a later layer's kept bytes off an earlier one's working
  // set; gradients allocated in backward would add to it (no profile runs both with block choices)
  for (int kind : st.kinds)
    for (const auto& o : space.options[kind])
      if (st.base.ordered_backward && o.cost.grads_bytes > 0)
        throw std::logic_error("the per-layer search does not bound gradients allocated in backward");
  const bool ordered = st.base.ordered_backward;
  const double ordered_room_bytes = ordered ? ordered_room(st.base, budget_bytes) : 0;
  const double forward_room_bytes = forward_room(st.base, budget_bytes);
  if (ordered) {
    if (ordered_room_bytes < 0) return std::nullopt;
    if (!caps.empty())
      caps = {*caps.rbegin()};  // the states bound the peak by position: one pass admits every transient
  }
  const Fixed fx = fixed_part(space, stage);
  double known = known_microbatch_s;
  if (work.pair_family) known = std::min(known, pair_family_bound(space, stage, fx, budget_bytes));
  // bound pairs that admit the same options of the stage's kinds need one pass, with the
  // smallest transient (the most room). The options a pair admits are those within the largest
  // transient and (but in the one-offload passes) the largest offload among them, so those two
  // name the set: (one offload, largest transient, largest offload), -infinity where none
  std::set<std::array<double, 3>> seen;
  const Admitted recompute_order = by_recompute_time(space);
  std::optional<StagePlan> best;
  Workspace ws;
  // per cap, its options' (offload bytes, largest transient of those up to here) by offload: a
  // staging bound admits a prefix
  std::vector<std::pair<double, double>> under_cap;
  // the kinds the stage has: options of the others take no part, so two passes whose bounds
  // admit the same options of these kinds search the same plans (the first, with the most
  // room, finds whatever the second could)
  std::vector<int> present(st.kinds.begin(), st.kinds.end());
  std::sort(present.begin(), present.end());
  present.erase(std::unique(present.begin(), present.end()), present.end());
  Admitted admitted(size_t(space.kind_count())), by_recompute(size_t(space.kind_count()));  // per pass, reused
  std::vector<int> position;               // per option of a kind, its place in admitted (-1: not admitted)
  std::vector<double> least_kept_of_kind;  // per kind, the least kept bytes of an admitted option
  for (double cap : caps) {
    // within one cap, a staging bound that admits no more options than the last one admits
    // the same options (the bounds nest): seen already
    under_cap.clear();
    for (int kind : present)
      for (const auto& o : space.options[kind])
        if (o.cost.transient_bytes <= cap) under_cap.emplace_back(o.cost.offload_bytes, o.cost.transient_bytes);
    std::sort(under_cap.begin(), under_cap.end());
    for (size_t i = 1; i < under_cap.size(); ++i)
      under_cap[i].second = std::max(under_cap[i].second, under_cap[i - 1].second);
    size_t last_admitted = under_cap.size() + 1;
    for (double staging : stagings) {
      const bool one_offload = staging == *stagings.begin();
      const auto by_offload = [](double bytes, const std::pair<double, double>& u) { return bytes < u.first; };
      const auto within =
          size_t(std::upper_bound(under_cap.begin(), under_cap.end(), staging, by_offload) - under_cap.begin());
      if (!one_offload) {
        if (within == last_admitted) continue;
        last_admitted = within;
      }
      const size_t admitted_count = one_offload ? under_cap.size() : within;
      constexpr double kNone = -std::numeric_limits<double>::infinity();
      const std::array<double, 3> admitted_set = {
          one_offload ? 1.0 : 0.0, admitted_count > 0 ? under_cap[admitted_count - 1].second : kNone,
          one_offload || admitted_count == 0 ? kNone : under_cap[admitted_count - 1].first};
      if (!seen.insert(admitted_set).second) continue;
      const auto admits = [&](const LayerCost& c) {
        return c.transient_bytes <= cap && (one_offload || c.offload_bytes <= staging);
      };
      for (auto& a : admitted) a.clear();
      for (auto& a : by_recompute) a.clear();
      least_kept_of_kind.assign(size_t(space.kind_count()), std::numeric_limits<double>::infinity());
      for (int kind : present) {  // the other kinds' lists stay empty: the stage has no layer of them
        position.assign(space.options[kind].size(), -1);
        for (size_t o = 0; o < space.options[kind].size(); ++o) {
          const LayerCost& c = space.options[kind][o].cost;
          if (!admits(c)) continue;
          position[o] = int(admitted[size_t(kind)].size()), admitted[size_t(kind)].push_back(int(o));
          least_kept_of_kind[size_t(kind)] = std::min(least_kept_of_kind[size_t(kind)], c.kept_bytes);
        }
        for (int o : recompute_order[size_t(kind)])
          if (position[size_t(o)] >= 0) by_recompute[size_t(kind)].push_back(position[size_t(o)]);
      }
      const double transient = std::max(cap, st.base.head_transient_bytes);
      const double room = ordered ? ordered_room_bytes - (one_offload ? 0 : staging)
                                  : budget_bytes - st.base.static_bytes.total() - transient;
      if (room < 0) continue;
      // the least kept bytes any admitted assignment can reach
      double least = 0;
      for (int kind : st.kinds) least += least_kept_of_kind[size_t(kind)];
      if (least * double(std::max<int64_t>(1, st.base.in_flight)) > room) continue;
      if (best && best->totals.microbatch_s <= fx.floor_s &&
          least_new_peak(st.base, least_kept_at_floor(space, st, fx, admits), ordered ? 0 : cap,
                         one_offload ? 0 : staging) >= best->totals.peak_bytes)
        continue;  // the best runs at the floor, and no plan new to this pass at the floor peaks lower
      if (best) known = std::min(known, best->totals.microbatch_s);
      Bounds b{room / double(std::max<int64_t>(1, st.base.in_flight)), cap, staging, known * (1 + 1e-12)};
      if (ordered) b.ordered = true, b.room = ordered_room_bytes, b.staging_term = one_offload ? 0 : staging;
      b.forward_room = forward_room_bytes;
      if (best) {
        b.tie_s = best->totals.microbatch_s;
        b.tie_kept = kept_that_cannot_peak_below(st.base, best->totals.peak_bytes, b.kept_cap, ordered ? 0 : cap,
                                                 one_offload ? 0 : staging);
      }
      auto plan = solve(space, stage, budget_bytes, fx, b, admitted, by_recompute, one_offload, ws, work, stop);
      if ((stop && stop->load(std::memory_order_relaxed)) || work.passed) return std::nullopt;
      if (!plan) continue;
      if (!best || plan->totals.microbatch_s < best->totals.microbatch_s ||
          (plan->totals.microbatch_s == best->totals.microbatch_s && plan->totals.peak_bytes < best->totals.peak_bytes))
        best = std::move(plan);
    }
  }
  return best;
}

}  // namespace

std::optional<StagePlan> best_stage_plan(const SearchSpace& space, size_t stage, double budget_bytes,
                                         double known_microbatch_s, const std::atomic<bool>* stop) {
  WorkLimit work;
  if (!counts_search_applies(space, stage))
    return exact_stage_plan(space, stage, budget_bytes, known_microbatch_s, stop, work);
  work.fall_back = true;
  if (space.stages[stage].kinds.size() <= kExactLayers) {
    work.plans = kExactWorkBeforeCounts;
    auto plan = exact_stage_plan(space, stage, budget_bytes, known_microbatch_s, stop, work);
    if (!work.passed || (stop && stop->load(std::memory_order_relaxed))) return plan;
    return counts_stage_plan(space, stage, budget_bytes);
  }
  // a deep stage: the counts search first, its plan's time the exact search's bound. Any bound no
  // faster than the fastest fitting plan leaves the exact search's plan as it was: it only drops
  // partial plans that cannot reach the fastest time (nor tie it), and a pass whose plans are all
  // slower than the best of the others returns nothing instead of a plan that is not kept.
  std::optional<StagePlan> counts = counts_stage_plan(space, stage, budget_bytes);
  work.plans = kDeepExactWorkBeforeCounts;
  work.pair_family = !counts;  // none: no plan fits, but for one within the counts search's rounding slack
  auto plan = exact_stage_plan(space, stage, budget_bytes,
                               counts ? std::min(known_microbatch_s, counts->totals.microbatch_s) : known_microbatch_s,
                               stop, work);
  if (!work.passed || (stop && stop->load(std::memory_order_relaxed))) return plan;
  return counts;
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
