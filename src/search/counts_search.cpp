#include "remat/search/counts_search.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "pair_family.hpp"
#include "remat/search/completion_bound.hpp"
#include "time_pieces.hpp"

namespace remat {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The stage as counts: its kinds (each once, ascending) and how many layers of each it holds.
struct CountsProblem {
  const SearchSpace* space = nullptr;
  const StageSpace* st = nullptr;
  double budget = 0;
  std::vector<int> kinds;
  std::vector<int64_t> layers;
  const std::vector<LayerOption>& options(size_t k) const { return space->options[kinds[k]]; }
  const LayerCost& cost(size_t k, int o) const { return options(k)[size_t(o)].cost; }
};

using Counts = std::vector<std::vector<int64_t>>;  // per kind of the problem, layers per option

struct Scored {
  Counts counts;
  StageTotals totals;
  bool fits = false;
};

// The plans a bound pair admits, as the exact search's passes split them: per kind its options,
// and in the passes of at most one offloaded layer that layer's (kind, option), fixed.
struct SubRun {
  std::vector<std::vector<int>> admitted;
  int fixed_kind = -1, fixed_option = -1;
  double transient = 0, staging = 0;  // the pass's bounds: the peak of its plans is at most theirs
  int64_t offloaded = 0;              // 0, 1 or 2 (two or more)
};

// A plan's totals from its counts (sums of runs of equal layers; order does not matter here).
StageTotals totals_of(const CountsProblem& p, const Counts& c) {
  LayerSums s;
  for (size_t k = 0; k < c.size(); ++k)
    for (size_t o = 0; o < c[k].size(); ++o)
      if (c[k][o] > 0) s.add(p.cost(k, int(o)), c[k][o]);
  return stage_totals(p.st->base, s);
}

// The same where every option with a count is in `support` (ascending (kind, option)): the same
// sums, added in the same order, without a look at the other options.
StageTotals totals_over(const CountsProblem& p, const Counts& c, const std::vector<std::pair<size_t, int>>& support) {
  LayerSums s;
  for (const auto& [k, o] : support)
    if (c[k][size_t(o)] > 0) s.add(p.cost(k, o), c[k][size_t(o)]);
  return stage_totals(p.st->base, s);
}

// Sums of counts and of layers added one by one differ in the last bits: the search keeps this
// much of the budget free so the plan written out layer by layer still fits.
constexpr double kBudgetSlack = 1e-9;

bool better(const StageTotals& a, const StageTotals& b) {
  return a.microbatch_s < b.microbatch_s || (a.microbatch_s == b.microbatch_s && a.peak_bytes < b.peak_bytes);
}

Scored scored(const CountsProblem& p, Counts counts) {
  Scored s{std::move(counts), {}, false};
  s.totals = totals_of(p, s.counts);
  s.fits = s.totals.peak_bytes <= p.budget * (1 - kBudgetSlack);
  return s;
}

// The peak of a plan of the sub-run that keeps `kept` bytes, at its bounds (an upper bound on
// the peak of each of its plans, equal for a plan that meets both bounds).
double peak_keeping(const CountsProblem& p, const SubRun& r, double kept) {
  LayerSums s;
  s.kept_bytes = kept;
  s.transient_bytes = r.transient;
  s.offload_staging_bytes = r.staging;
  s.offloaded_layers = r.offloaded;
  return stage_totals(p.st->base, s).peak_bytes;
}

// The kept bytes at which the sub-run's peak reaches `budget`: [fits, over] around it, or
// fits = -1 when no kept sum fits.
std::pair<double, double> kept_reaching(const CountsProblem& p, const SubRun& r, double budget) {
  if (peak_keeping(p, r, 0) > budget) return {-1, 0};
  double lo = 0, hi = std::max(1.0, budget / double(std::max<int64_t>(1, p.st->base.in_flight)));
  while (peak_keeping(p, r, hi) <= budget) {
    if (hi > 1e300) return {hi, kInf};
    lo = hi, hi *= 2;
  }
  for (int i = 0; i < 80; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) break;
    (peak_keeping(p, r, mid) <= budget ? lo : hi) = mid;
  }
  return {lo, hi};
}

// The kept bytes the sub-run's fills may keep (within the budget less the slack), and past which
// none of its plans fits the budget (the bound's room); fits = -1 when no kept sum fits.
std::pair<double, double> kept_cap(const CountsProblem& p, const SubRun& r) {
  return {kept_reaching(p, r, p.budget * (1 - kBudgetSlack)).first, kept_reaching(p, r, p.budget).second};
}

struct HullPoint {
  double kept, cost;
  int option;
};

// The falling lower hull of `pts` over (kept, cost): from the least kept (the cheapest of
// those) to the cheapest, the options a relaxed layer mixes (as completion_bound.cpp's).
std::vector<HullPoint> falling_hull(std::vector<HullPoint> pts) {
  std::sort(pts.begin(), pts.end(), [](const HullPoint& a, const HullPoint& b) {
    if (a.kept != b.kept) return a.kept < b.kept;
    return a.cost != b.cost ? a.cost < b.cost : a.option < b.option;
  });
  const auto on_or_above = [](const HullPoint& a, const HullPoint& b, const HullPoint& c) {
    return (b.kept - a.kept) * (c.cost - a.cost) - (b.cost - a.cost) * (c.kept - a.kept) <= 0;
  };
  std::vector<HullPoint> hull;
  for (const HullPoint& q : pts) {
    if (!hull.empty() && q.kept == hull.back().kept) continue;  // the cheaper of equal kept came first
    while (hull.size() >= 2 && on_or_above(hull[hull.size() - 2], hull.back(), q)) hull.pop_back();
    hull.push_back(q);
  }
  size_t end = 1;
  while (end < hull.size() && hull[end].cost < hull[end - 1].cost) ++end;
  hull.resize(std::min(end, hull.size()));
  return hull;
}

// The integer form of the relaxation's fill (KeptCostCurve): every layer at its kind's least-kept
// hull point, then layers moved along the hull segments, steepest fall in cost per kept byte
// first, while `room` kept bytes last; a segment takes as many layers as fit. False when even the
// least-kept plan keeps more than `room`.
bool fill_along_hulls(const std::vector<std::vector<HullPoint>>& hulls, const std::vector<int64_t>& layers, double room,
                      Counts& out) {
  struct Segment {
    double slope;
    size_t kind, to;
  };
  std::vector<Segment> segments;
  std::vector<std::vector<int64_t>> at(hulls.size());
  for (size_t k = 0; k < hulls.size(); ++k) {
    if (layers[k] == 0) continue;
    if (hulls[k].empty()) return false;
    room -= double(layers[k]) * hulls[k][0].kept;
    at[k].assign(hulls[k].size(), 0);
    at[k][0] = layers[k];
    for (size_t i = 1; i < hulls[k].size(); ++i)
      segments.push_back({(hulls[k][i].cost - hulls[k][i - 1].cost) / (hulls[k][i].kept - hulls[k][i - 1].kept), k, i});
  }
  if (room < 0) return false;
  std::stable_sort(segments.begin(), segments.end(),
                   [](const Segment& a, const Segment& b) { return a.slope < b.slope; });
  for (const Segment& s : segments) {
    const double length = hulls[s.kind][s.to].kept - hulls[s.kind][s.to - 1].kept;
    const double fit = std::floor(room / length);
    const int64_t moved = std::min(at[s.kind][s.to - 1], int64_t(std::min(fit, 1e15)));
    if (moved <= 0) continue;
    at[s.kind][s.to - 1] -= moved, at[s.kind][s.to] += moved;
    room -= double(moved) * length;
  }
  for (size_t k = 0; k < hulls.size(); ++k)
    for (size_t i = 0; i < at[k].size(); ++i) out[k][size_t(hulls[k][i].option)] += at[k][i];
  return true;
}

// The cost a hull orders options by: recompute + lambda x copy seconds (lambda < 0: copy alone).
double mixed_cost(const LayerCost& c, double lambda, double copy_bytes_per_s) {
  const double copy_s = c.offload_bytes / copy_bytes_per_s;
  return lambda < 0 ? copy_s : c.recompute_s + lambda * copy_s;
}

// The sub-run's layers but its fixed one, per kind.
std::vector<int64_t> free_layers(const CountsProblem& p, const SubRun& r) {
  std::vector<int64_t> layers = p.layers;
  if (r.fixed_kind >= 0) --layers[size_t(r.fixed_kind)];
  return layers;
}

bool offloads_any(const CountsProblem& p, const SubRun& r) {
  for (size_t k = 0; k < r.admitted.size(); ++k)
    for (int o : r.admitted[k])
      if (p.cost(k, o).offload_bytes > 0) return true;
  return false;
}

// The sub-run's fill at cost mix `lambda`; false when even its least-kept plan keeps more than
// `room`. `targets` collects the options on the hulls (the local search's moves go to them).
bool fill_at(const CountsProblem& p, const SubRun& r, double room, double lambda, double copy_bytes_per_s,
             Counts& counts, std::vector<std::set<int>>& targets) {
  std::vector<std::vector<HullPoint>> hulls(p.kinds.size());
  for (size_t k = 0; k < p.kinds.size(); ++k) {
    std::vector<HullPoint> pts;
    for (int o : r.admitted[k])
      pts.push_back({p.cost(k, o).kept_bytes, mixed_cost(p.cost(k, o), lambda, copy_bytes_per_s), o});
    hulls[k] = falling_hull(std::move(pts));
    for (const HullPoint& h : hulls[k]) targets[k].insert(h.option);
  }
  counts.assign(p.kinds.size(), {});
  for (size_t k = 0; k < p.kinds.size(); ++k) counts[k].assign(p.options(k).size(), 0);
  if (r.fixed_kind >= 0) counts[size_t(r.fixed_kind)][size_t(r.fixed_option)] = 1;
  return fill_along_hulls(hulls, free_layers(p, r), room, counts);
}

// The fastest fitting plans met so far, of distinct counts, fastest first: the local search's
// starts (from the fastest alone it stops at a plan two moves cannot improve more often).
struct Starts {
  static constexpr size_t kStarts = 4;
  std::vector<Scored> top;
  void offer(Scored&& s) {
    if (!s.fits) return;
    for (const Scored& t : top)
      if (t.counts == s.counts) return;
    const auto at = std::find_if(top.begin(), top.end(), [&](const Scored& t) { return better(s.totals, t.totals); });
    if (at == top.end() && top.size() >= kStarts) return;
    top.insert(at, std::move(s));
    if (top.size() > kStarts) top.pop_back();
  }
};

// The sub-run's fills, one per cost mix of completion_bound.hpp (and copy alone), into `best`
// where faster.
void fill_sub_run(const CountsProblem& p, const SubRun& r, double room, const Fixed& fx, Starts& starts,
                  std::vector<std::set<int>>& targets) {
  std::vector<double> lambdas(kCostMixes.begin(), kCostMixes.end());
  if (offloads_any(p, r))
    lambdas.push_back(-1);
  else
    lambdas.resize(1);  // no copy: every mix orders the options alike
  Counts counts;
  for (double lambda : lambdas) {
    if (!fill_at(p, r, room, lambda, fx.copy_bytes_per_s, counts, targets)) return;
    starts.offer(scored(p, counts));
  }
}

// The plans on the way from `from` to `to`, one layer moved at a time (from an option `from`
// holds more of to one `to` holds more of, of the same kind), into `best` where faster.
void walk_between(const CountsProblem& p, const Counts& from, const Counts& to, Starts& starts) {
  Counts at = from;
  for (size_t k = 0; k < at.size(); ++k) {
    size_t out = 0, in = 0;
    while (true) {
      while (out < at[k].size() && at[k][out] <= to[k][out]) ++out;
      while (in < at[k].size() && at[k][in] >= to[k][in]) ++in;
      if (out == at[k].size() || in == at[k].size()) break;
      --at[k][out], ++at[k][in];
      starts.offer(scored(p, at));
    }
  }
}

// The sub-run's fills over a fine range of cost mixes, and the plans between each two in turn
// (the copy windows make the best plan mix the fills either side of the mix where its copies
// reach a window).
void fill_finely(const CountsProblem& p, const SubRun& r, double room, const Fixed& fx, Starts& starts,
                 std::vector<std::set<int>>& targets) {
  constexpr int kSteps = 64;  // lambda from 1/64 to 16, geometric
  Counts last, counts;
  for (int step = 0; step < kSteps; ++step) {
    const double lambda = std::exp2(-6.0 + 10.0 * step / (kSteps - 1));
    if (!fill_at(p, r, room, lambda, fx.copy_bytes_per_s, counts, targets)) return;
    if (counts == last) continue;
    starts.offer(scored(p, counts));
    if (!last.empty()) walk_between(p, last, counts, starts);
    last = counts;
  }
}

// The sub-run's lower bound on its plans' time: the relaxation's (completion_lower_s from an
// empty plan, or from the fixed layer) at the most kept bytes a plan of it can fit with.
double sub_run_lower_s(const CountsProblem& p, const SubRun& r, double most_kept, const Fixed& fx) {
  CompletionCurves curves;
  const std::vector<int64_t> layers = free_layers(p, r);
  for (size_t k = 0; k < p.kinds.size(); ++k) {
    if (layers[k] == 0) continue;
    KeptCostPoints copy;
    std::array<KeptCostPoints, kCostMixes.size()> mixed;
    for (int o : r.admitted[k]) {
      const LayerCost& c = p.cost(k, o);
      copy.emplace_back(c.kept_bytes, mixed_cost(c, -1, fx.copy_bytes_per_s));
      for (size_t m = 0; m < kCostMixes.size(); ++m)
        mixed[m].emplace_back(c.kept_bytes, mixed_cost(c, kCostMixes[m], fx.copy_bytes_per_s));
    }
    for (size_t m = 0; m < kCostMixes.size(); ++m) curves.mixed[m].add_layers(mixed[m], double(layers[k]));
    curves.copy_s.add_layers(copy, double(layers[k]));
  }
  for (KeptCostCurve& c : curves.mixed) c.finish();
  curves.copy_s.finish();
  double rc = 0, off = 0, room = most_kept;
  if (r.fixed_kind >= 0) {
    const LayerCost& c = p.cost(size_t(r.fixed_kind), r.fixed_option);
    rc = c.recompute_s, off = c.offload_bytes, room -= c.kept_bytes;
  }
  return completion_lower_s(fx, curves, rc, off, room);
}

using pieces::kPieces;
using pieces::TimePiece;

// The relaxation's bound along rc + lambda x c (`along`: its least value over the sub-run's
// relaxed plans): every convex mix of the pieces whose direction that is bounds the time over the
// floor from below; the best mixes at most two pieces (completion_bound.cpp's piece_mixes).
double bound_along(const Fixed& fx, double lambda, double along) {
  double best = -kInf;
  for (size_t i = 0; i < kPieces.size(); ++i)
    for (size_t j = i; j < kPieces.size(); ++j) {
      const TimePiece &p = kPieces[i], &q = kPieces[j];
      const double dp = p.b - lambda * p.a, dq = q.b - lambda * q.a;
      const double theta = pieces::mix_weight(dp, dq);
      if (theta < 0 || theta > 1) continue;
      const double scale = theta * p.a + (1 - theta) * q.a;
      if (scale <= 0) continue;
      best = std::max(best, scale * along - (theta * p.wf + (1 - theta) * q.wf) * fx.fwd_window_s -
                                (theta * p.wb + (1 - theta) * q.wb) * fx.bwd_window_s);
    }
  return best;
}

// The relaxation's bound along rc + lambda x c for the sub-run (bound_along of its least value).
double lower_along(const CountsProblem& p, const SubRun& r, const std::vector<int64_t>& layers, double rc, double c,
                   double room, const Fixed& fx, double lambda) {
  KeptCostCurve curve;
  for (size_t k = 0; k < p.kinds.size(); ++k) {
    if (layers[k] == 0) continue;
    KeptCostPoints pts;
    for (int o : r.admitted[k])
      pts.emplace_back(p.cost(k, o).kept_bytes, mixed_cost(p.cost(k, o), lambda, fx.copy_bytes_per_s));
    curve.add_layers(std::move(pts), double(layers[k]));
  }
  curve.finish();
  const double more = curve.at(room);
  if (more == kInf) return kInf;
  return bound_along(fx, lambda, rc + lambda * c + more * (1 - 1e-9));
}

// sub_run_lower_s over finer directions than completion_lower_s's 16 (the best direction of the
// relaxation's dual lies between two of those): 64 from lambda = 1/64 to 16, geometric, then 64
// between the best one's neighbours; the largest bound of all.
double refined_lower_s(const CountsProblem& p, const SubRun& r, double most_kept, const Fixed& fx, double coarse_s) {
  const std::vector<int64_t> layers = free_layers(p, r);
  double rc = 0, c = 0, room = most_kept;
  if (r.fixed_kind >= 0) {
    const LayerCost& f = p.cost(size_t(r.fixed_kind), r.fixed_option);
    rc = f.recompute_s, c = f.offload_bytes / fx.copy_bytes_per_s, room -= f.kept_bytes;
  }
  constexpr int kSteps = 64;
  const auto log_lambda = [](double step) { return -6.0 + 10.0 * step / (kSteps - 1); };
  double on_grid = -kInf;
  int best_step = 0;
  for (int step = 0; step < kSteps; ++step) {
    const double v = lower_along(p, r, layers, rc, c, room, fx, std::exp2(log_lambda(step)));
    if (v == kInf) return kInf;
    if (v > on_grid) on_grid = v, best_step = step;
  }
  double best = std::max(on_grid, coarse_s - fx.floor_s);
  for (int fine = 1; fine < kSteps; ++fine) {
    const double step = best_step - 1 + 2.0 * fine / kSteps;
    best = std::max(best, lower_along(p, r, layers, rc, c, room, fx, std::exp2(log_lambda(step))));
  }
  return fx.floor_s + best;
}

// Every sub-run of the stage: per transient bound, the plans offloading no layer, those
// offloading one (per offloading option, that layer fixed) and, per staging bound, those
// offloading two or more. Sub-runs admitting the same options (and fixing the same layer) are
// listed once, with the smallest bounds (the most room).
std::vector<SubRun> sub_runs(const CountsProblem& p) {
  std::set<double> caps, stagings;
  for (size_t k = 0; k < p.kinds.size(); ++k)
    for (const LayerOption& o : p.options(k)) {
      caps.insert(o.cost.transient_bytes);
      if (o.cost.offload_bytes > 0) stagings.insert(o.cost.offload_bytes);
    }
  std::vector<SubRun> out;
  std::set<std::vector<int>> seen;
  const auto add = [&](SubRun r, const auto& admits) {
    std::vector<int> key = {r.fixed_kind, r.fixed_option, int(r.offloaded)};
    r.admitted.resize(p.kinds.size());
    for (size_t k = 0; k < p.kinds.size(); ++k) {
      for (size_t o = 0; o < p.options(k).size(); ++o)
        if (admits(p.options(k)[o].cost)) r.admitted[k].push_back(int(o)), key.push_back(int(o));
      key.push_back(-1);
    }
    if (seen.insert(key).second) out.push_back(std::move(r));
  };
  for (double cap : caps) {
    const auto no_offload = [cap](const LayerCost& c) { return c.transient_bytes <= cap && c.offload_bytes == 0; };
    SubRun none;
    none.transient = cap;
    add(none, no_offload);
    for (size_t k = 0; k < p.kinds.size(); ++k)
      for (size_t o = 0; o < p.options(k).size(); ++o) {
        const LayerCost& c = p.options(k)[o].cost;
        if (c.offload_bytes == 0 || c.transient_bytes > cap || p.layers[k] == 0) continue;
        SubRun one;
        one.fixed_kind = int(k), one.fixed_option = int(o);
        one.transient = cap, one.staging = c.offload_bytes, one.offloaded = 1;
        add(one, no_offload);
      }
    for (double staging : stagings) {
      SubRun many;
      many.transient = cap, many.staging = staging, many.offloaded = 2;
      add(many, [cap, staging](const LayerCost& c) { return c.transient_bytes <= cap && c.offload_bytes <= staging; });
    }
  }
  return out;
}

// One move: a layer of kind k from option `from` to option `to`.
struct Move {
  size_t kind;
  int from, to;
};

void apply(Counts& c, const Move& m, int64_t step) {
  c[m.kind][size_t(m.from)] -= step;
  c[m.kind][size_t(m.to)] += step;
}

// Moves one layer, or two, to other options while that makes the plan faster (or as fast with
// a lower peak) and it still fits: the best single move each round, a pair only where no single
// move helps. A local optimum; the rounds are capped.
void improve(const CountsProblem& p, const Fixed& fx, const std::vector<std::set<int>>& targets, Scored& best) {
  constexpr int kMaxRounds = 256;
  const double most_kept = kept_reaching(p, SubRun{}, p.budget * (1 - kBudgetSlack)).second;
  std::vector<Move> moves;
  for (int round = 0; round < kMaxRounds; ++round) {
    moves.clear();
    for (size_t k = 0; k < p.kinds.size(); ++k)
      for (size_t from = 0; from < best.counts[k].size(); ++from)
        if (best.counts[k][from] > 0)
          for (int to : targets[k])
            if (size_t(to) != from) moves.push_back({k, int(from), to});
    // the options a trial can hold: those held now and the moves' targets
    std::vector<std::pair<size_t, int>> support;
    for (size_t k = 0; k < p.kinds.size(); ++k)
      for (size_t o = 0; o < best.counts[k].size(); ++o)
        if (best.counts[k][o] > 0 || targets[k].count(int(o))) support.emplace_back(k, int(o));
    // the plan's recompute and copy bytes, for a trial's lower bound (Fixed): a trial whose bound,
    // summed in another order, passes the best time by more than rounding cannot be faster
    // and its kept bytes, against the most any plan can keep and fit (with no transient at all)
    double rc = 0, off = 0, kept = 0;
    for (const auto& [k, o] : support) {
      const double n = double(best.counts[k][size_t(o)]);
      rc += n * p.cost(k, o).recompute_s, off += n * p.cost(k, o).offload_bytes, kept += n * p.cost(k, o).kept_bytes;
    }
    const auto delta = [&](const Move& m, double& d_rc, double& d_off, double& d_kept) {
      d_rc += p.cost(m.kind, m.to).recompute_s - p.cost(m.kind, m.from).recompute_s;
      d_off += p.cost(m.kind, m.to).offload_bytes - p.cost(m.kind, m.from).offload_bytes;
      d_kept += p.cost(m.kind, m.to).kept_bytes - p.cost(m.kind, m.from).kept_bytes;
    };
    Counts trial = best.counts;
    std::optional<std::pair<size_t, size_t>> pick;  // (first, second), second == moves.size(): alone
    StageTotals pick_totals = best.totals;
    const auto consider = [&](size_t i, size_t j) {
      double d_rc = 0, d_off = 0, d_kept = 0;
      delta(moves[i], d_rc, d_off, d_kept);
      if (j < moves.size()) delta(moves[j], d_rc, d_off, d_kept);
      if (fx.lower_bound(rc + d_rc, off + d_off) > pick_totals.microbatch_s * (1 + 1e-9)) return;
      if (kept + d_kept > most_kept * (1 + 1e-9)) return;
      const StageTotals t = totals_over(p, trial, support);
      if (t.peak_bytes <= p.budget * (1 - kBudgetSlack) && better(t, pick_totals)) pick = {i, j}, pick_totals = t;
    };
    for (size_t i = 0; i < moves.size(); ++i) {
      apply(trial, moves[i], 1);
      consider(i, moves.size());
      apply(trial, moves[i], -1);
    }
    for (size_t i = 0; i < moves.size() && !pick; ++i) {
      apply(trial, moves[i], 1);
      for (size_t j = i; j < moves.size(); ++j) {
        if (trial[moves[j].kind][size_t(moves[j].from)] <= 0) continue;
        apply(trial, moves[j], 1);
        consider(i, j);
        apply(trial, moves[j], -1);
      }
      apply(trial, moves[i], -1);
    }
    if (!pick) return;
    apply(best.counts, moves[pick->first], 1);
    if (pick->second < moves.size()) apply(best.counts, moves[pick->second], 1);
    best.totals = pick_totals;
  }
}

// The plan of `counts` layer by layer: each kind's layers take its options in ascending kept
// bytes (the planner's canonical order), summed in layer order as the exact search's plans are.
StagePlan written_out(const CountsProblem& p, const Counts& counts) {
  std::vector<std::vector<int>> queue(p.kinds.size());
  for (size_t k = 0; k < p.kinds.size(); ++k) {
    std::vector<int> order(counts[k].size());
    for (size_t o = 0; o < order.size(); ++o) order[o] = int(o);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return p.cost(k, a).kept_bytes < p.cost(k, b).kept_bytes; });
    for (auto it = order.rbegin(); it != order.rend(); ++it)  // popped from the back: least kept first
      for (int64_t n = 0; n < counts[k][size_t(*it)]; ++n) queue[k].push_back(*it);
  }
  StagePlan plan;
  LayerSums sums;
  for (int kind : p.st->kinds) {
    const size_t k = size_t(std::lower_bound(p.kinds.begin(), p.kinds.end(), kind) - p.kinds.begin());
    const LayerOption& o = p.options(k)[size_t(queue[k].back())];
    queue[k].pop_back();
    plan.per_layer.push_back(o.choice);
    sums.add(o.cost);
  }
  plan.totals = stage_totals(p.st->base, sums);
  return plan;
}

// A sub-run with a fitting plan: its bound, and the kept bytes at which its peak reaches the budget.
struct Bounded {
  double lower_s, fits_kept, over_kept;
  size_t run;
};

// The least bound over the sub-runs (`bounds` ascending), each refined in that order until the
// next coarse one is no lower than the least refined so far, or than the plan's time.
double least_bound(const CountsProblem& p, const std::vector<SubRun>& runs, const std::vector<Bounded>& bounds,
                   const Fixed& fx, double plan_s) {
  double lower_s = kInf;
  for (const Bounded& b : bounds) {
    if (b.lower_s >= lower_s || b.lower_s >= plan_s) return std::min({lower_s, b.lower_s, plan_s});
    lower_s = std::min(lower_s, refined_lower_s(p, runs[b.run], b.over_kept, fx, b.lower_s));
  }
  return std::min(lower_s, plan_s);
}

CountsProblem problem_of(const SearchSpace& space, size_t stage, double budget_bytes) {
  CountsProblem p;
  p.space = &space, p.st = &space.stages[stage], p.budget = budget_bytes;
  p.kinds = p.st->kinds;
  std::sort(p.kinds.begin(), p.kinds.end());
  p.kinds.erase(std::unique(p.kinds.begin(), p.kinds.end()), p.kinds.end());
  p.layers.assign(p.kinds.size(), 0);
  for (int kind : p.st->kinds)
    ++p.layers[size_t(std::lower_bound(p.kinds.begin(), p.kinds.end(), kind) - p.kinds.begin())];
  return p;
}

}  // namespace

bool counts_search_applies(const SearchSpace& space, size_t stage) {
  const StageSpace& st = space.stages[stage];
  if (st.base.ordered_backward) return false;
  for (int kind : st.kinds)
    for (const LayerOption& o : space.options[kind])
      if (o.cost.chunk_replay_bytes > 0 || o.cost.chunk_start) return false;
  return true;
}

std::optional<StagePlan> counts_stage_plan(const SearchSpace& space, size_t stage, double budget_bytes) {
  const CountsProblem p = problem_of(space, stage, budget_bytes);
  const Fixed fx = fixed_part(space, stage);
  const std::vector<SubRun> runs = sub_runs(p);
  std::vector<Bounded> bounds;
  Starts starts;
  std::vector<std::set<int>> targets(p.kinds.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto [fits_kept, over_kept] = kept_cap(p, runs[i]);
    if (over_kept <= 0) continue;  // nothing fits the budget
    bounds.push_back({sub_run_lower_s(p, runs[i], over_kept, fx), fits_kept, over_kept, i});
    if (fits_kept >= 0) fill_sub_run(p, runs[i], fits_kept, fx, starts, targets);
  }
  if (starts.top.empty()) return std::nullopt;
  std::sort(bounds.begin(), bounds.end(), [](const Bounded& a, const Bounded& b) {
    return a.lower_s != b.lower_s ? a.lower_s < b.lower_s : a.run < b.run;
  });
  // the sub-runs of the least bounds (the fastest plans are likeliest there): finer fills
  constexpr size_t kFinelyFilled = 4;
  for (size_t i = 0; i < std::min(kFinelyFilled, bounds.size()); ++i) {
    const SubRun& r = runs[bounds[i].run];
    if (bounds[i].fits_kept >= 0 && bounds[i].lower_s < starts.top.front().totals.microbatch_s && offloads_any(p, r))
      fill_finely(p, r, bounds[i].fits_kept, fx, starts, targets);
  }
  std::optional<Scored> best;
  for (Scored& s : starts.top) {
    improve(p, fx, targets, s);
    if (!best || better(s.totals, best->totals)) best = s;
  }
  StagePlan plan = written_out(p, best->counts);
  if (plan.totals.peak_bytes > budget_bytes) return std::nullopt;
  plan.optimum_lower_bound_s = least_bound(p, runs, bounds, fx, plan.totals.microbatch_s);
  return plan;
}

}  // namespace remat
