#include "remat/search/completion_bound.hpp"

#include "time_pieces.hpp"

#include <algorithm>
#include <limits>

namespace remat {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The lower convex hull of `points` (in ascending kept bytes) from the one keeping least
// (cheapest of those) down to the cheapest: the options a relaxed layer mixes.
KeptCostPoints falling_hull_of_sorted(const KeptCostPoints& points) {
  KeptCostPoints hull;
  const auto turns_down = [](const std::pair<double, double>& a, const std::pair<double, double>& b,
                             const std::pair<double, double>& c) {  // b on or above the line a-c
    return (b.first - a.first) * (c.second - a.second) - (b.second - a.second) * (c.first - a.first) <= 0;
  };
  for (const auto& p : points) {
    if (!hull.empty() && p.first == hull.back().first) {  // same kept: the cheaper one
      if (p.second >= hull.back().second) continue;
      hull.pop_back();
    }
    while (hull.size() >= 2 && turns_down(hull[hull.size() - 2], hull.back(), p)) hull.pop_back();
    hull.push_back(p);
  }
  size_t end = 1;
  while (end < hull.size() && hull[end].second < hull[end - 1].second) ++end;
  hull.resize(end);
  return hull;
}

}  // namespace

void KeptCostCurve::add_layers(KeptCostPoints points, double copies) {
  std::sort(points.begin(), points.end());
  add_hull(falling_hull_of_sorted(points), copies);
}

void KeptCostCurve::add_hull(const KeptCostPoints& hull, double copies) {
  if (copies <= 0) return;
  if (hull.empty()) {  // a layer with no choice: no completion
    least_kept_ = kInf;
    return;
  }
  least_kept_ += copies * hull.front().first;
  cost_at_least_ += copies * hull.front().second;
  for (size_t i = 1; i < hull.size(); ++i) {
    const double length = hull[i].first - hull[i - 1].first;
    segments_.emplace_back((hull[i].second - hull[i - 1].second) / length, copies * length);
  }
}

void KeptCostCurve::finish() {
  std::sort(segments_.begin(), segments_.end());
  ends_kept_.clear(), ends_cost_.clear();
  double kept = 0, cost = 0;
  for (const auto& [slope, length] : segments_) {
    kept += length, cost += slope * length;
    ends_kept_.push_back(kept), ends_cost_.push_back(cost);
  }
}

void KeptCostCurve::clear() {
  least_kept_ = 0, cost_at_least_ = 0;
  segments_.clear(), ends_kept_.clear(), ends_cost_.clear();
}

double KeptCostCurve::at(double kept_bytes) const {
  // a little slack for sums added in another order: a bound may only be loose
  const double extra = kept_bytes - least_kept_;
  if (extra < -1 - 1e-12 * least_kept_) return kInf;
  if (extra <= 0 || segments_.empty()) return cost_at_least_;
  const size_t i = size_t(std::lower_bound(ends_kept_.begin(), ends_kept_.end(), extra) - ends_kept_.begin());
  if (i == segments_.size()) return std::max(0.0, cost_at_least_ + ends_cost_.back());
  const double before_kept = i > 0 ? ends_kept_[i - 1] : 0, before_cost = i > 0 ? ends_cost_[i - 1] : 0;
  return std::max(0.0, cost_at_least_ + before_cost + segments_[i].first * (extra - before_kept));
}

namespace {

using pieces::kPieces;
using pieces::TimePiece;

// A mix of two pieces whose direction is rc + lambda x c (scaled by `scale`), or c alone (mix -1).
struct PieceMix {
  int mix;  // index in kCostMixes, -1: copy alone
  double scale, windows_fwd, windows_bwd;
};

// The vertices of the mixes of the pieces along each curve's direction: a mix of weights w >= 0
// summing to 1 along a fixed direction is best at a vertex, which mixes at most two pieces.
std::vector<PieceMix> piece_mixes() {
  std::vector<PieceMix> out;
  const auto mix_of = [](const TimePiece& p, const TimePiece& q, double theta, int mix, double scale) {
    return PieceMix{mix, scale, theta * p.wf + (1 - theta) * q.wf, theta * p.wb + (1 - theta) * q.wb};
  };
  for (size_t i = 0; i < kPieces.size(); ++i)
    for (size_t j = i; j < kPieces.size(); ++j) {
      const TimePiece &p = kPieces[i], &q = kPieces[j];
      for (size_t m = 0; m < kCostMixes.size(); ++m) {
        // theta x (p.b - lambda p.a) + (1 - theta) x (q.b - lambda q.a) = 0
        const double lambda = kCostMixes[m], dp = p.b - lambda * p.a, dq = q.b - lambda * q.a;
        const double theta = pieces::mix_weight(dp, dq);
        if (theta < 0 || theta > 1) continue;
        const double scale = theta * p.a + (1 - theta) * q.a;
        if (scale > 0) out.push_back(mix_of(p, q, theta, int(m), scale));
      }
      if (p.a == 0 && q.a == 0)  // copy alone: each piece (mixes lie between them)
        out.push_back(mix_of(p, q, 1, -1, p.b)), out.push_back(mix_of(p, q, 0, -1, q.b));
    }
  // a mix met again (a pair's end is a piece on its own) bounds the same: the first serves
  std::vector<PieceMix> distinct;
  for (const PieceMix& m : out)
    if (std::none_of(distinct.begin(), distinct.end(), [&](const PieceMix& d) {
          return d.mix == m.mix && d.scale == m.scale && d.windows_fwd == m.windows_fwd &&
                 d.windows_bwd == m.windows_bwd;
        }))
      distinct.push_back(m);
  return distinct;
}

}  // namespace

namespace {

const std::vector<PieceMix> kMixes = piece_mixes();

// the relaxed costs, a hair under their value so rounding never lifts the bound past a plan's time
constexpr double kUnder = 1 - 1e-9;

double mix_value(const StageTimeShape& shape, const PieceMix& mx, double along) {
  return mx.scale * along - mx.windows_fwd * shape.fwd_window_s - mx.windows_bwd * shape.bwd_window_s;
}

}  // namespace

double completion_lower_s(const StageTimeShape& shape, const CompletionCurves& after, double rc_s, double off_bytes,
                          double room_kept_bytes, int* best_mix) {
  const double c = off_bytes / shape.copy_bytes_per_s;
  std::array<double, kCostMixes.size()> along{};  // per curve: rc + lambda c with the least completion
  for (size_t m = 0; m < kCostMixes.size(); ++m) {
    const double more = after.mixed[m].at(room_kept_bytes);
    if (more == kInf) return kInf;
    along[m] = rc_s + kCostMixes[m] * c + more * kUnder;
  }
  const double copy_along = c + after.copy_s.at(room_kept_bytes) * kUnder;
  const std::vector<PieceMix>& mixes = kMixes;
  double largest = rc_s;  // the first piece with nothing more
  int arg = -1;
  for (size_t i = 0; i < mixes.size(); ++i) {
    const double v = mix_value(shape, mixes[i], mixes[i].mix < 0 ? copy_along : along[size_t(mixes[i].mix)]);
    if (v > largest) largest = v, arg = int(i);
  }
  if (best_mix) *best_mix = arg;
  return shape.floor_s + largest;
}

double mix_lower_s(const StageTimeShape& shape, const CompletionCurves& after, int mix, double rc_s, double off_bytes,
                   double room_kept_bytes) {
  const double c = off_bytes / shape.copy_bytes_per_s;
  if (mix < 0) return shape.floor_s + rc_s;
  const PieceMix& mx = kMixes[size_t(mix)];
  const KeptCostCurve& curve = mx.mix < 0 ? after.copy_s : after.mixed[size_t(mx.mix)];
  const double more = curve.at(room_kept_bytes);
  if (more == kInf) return kInf;
  const double along = (mx.mix < 0 ? c : rc_s + kCostMixes[size_t(mx.mix)] * c) + more * kUnder;
  return shape.floor_s + std::max(rc_s, mix_value(shape, mx, along));
}

StageCompletions::StageCompletions(const std::vector<int>& kinds,
                                   const std::vector<std::vector<const LayerCost*>>& admitted_by_kind,
                                   double copy_bytes_per_s) {
  reset(kinds, admitted_by_kind, copy_bytes_per_s);
}

void StageCompletions::reset(const std::vector<int>& kinds,
                             const std::vector<std::vector<const LayerCost*>>& admitted_by_kind,
                             double copy_bytes_per_s) {
  kinds_ = kinds;
  admitted_by_kind_ = admitted_by_kind;
  if (copy_bytes_per_s != copy_bytes_per_s_) known_hulls_.clear();
  copy_bytes_per_s_ = copy_bytes_per_s;
  hulls_ready_ = false;
}

namespace {

// Per cost of the curves (last: copy alone), the falling hull of the options' (kept, cost).
std::array<KeptCostPoints, kCostMixes.size() + 1> hulls_of(const std::vector<const LayerCost*>& admitted,
                                                           double copy_bytes_per_s) {
  std::vector<const LayerCost*> by_kept = admitted;
  std::sort(by_kept.begin(), by_kept.end(),
            [](const LayerCost* a, const LayerCost* b) { return a->kept_bytes < b->kept_bytes; });
  std::array<KeptCostPoints, kCostMixes.size() + 1> points, hulls;
  for (const LayerCost* c : by_kept) {
    const double copy_s = c->offload_bytes / copy_bytes_per_s;
    for (size_t m = 0; m < kCostMixes.size(); ++m)
      points[m].emplace_back(c->kept_bytes, c->recompute_s + kCostMixes[m] * copy_s);
    points.back().emplace_back(c->kept_bytes, copy_s);
  }
  for (size_t m = 0; m < points.size(); ++m)
    if (!points[m].empty()) hulls[m] = falling_hull_of_sorted(points[m]);
  return hulls;
}

}  // namespace

void StageCompletions::build_hulls() {
  hulls_.resize(admitted_by_kind_.size());
  known_hulls_.resize(admitted_by_kind_.size());
  for (size_t k = 0; k < admitted_by_kind_.size(); ++k) {
    auto& known = known_hulls_[k];
    auto it = known.find(admitted_by_kind_[k]);
    if (it == known.end())
      it = known.emplace(admitted_by_kind_[k], hulls_of(admitted_by_kind_[k], copy_bytes_per_s_)).first;
    hulls_[k] = &it->second;
  }
  // per layer, how many layers of each kind come after it
  counts_after_.resize(kinds_.size());
  if (!kinds_.empty()) counts_after_.back().assign(admitted_by_kind_.size(), 0.0);
  for (size_t j = kinds_.size(); j-- > 1;) {
    counts_after_[j - 1] = counts_after_[j];
    counts_after_[j - 1][size_t(kinds_[j])] += 1;
  }
  curves_.resize(kinds_.size());
  built_.assign(kinds_.size(), false);
  hulls_ready_ = true;
}

const CompletionCurves& StageCompletions::after(size_t layer) {
  if (!hulls_ready_) build_hulls();
  CompletionCurves& cv = curves_[layer];
  if (built_[layer]) return cv;
  for (KeptCostCurve& curve : cv.mixed) curve.clear();
  cv.copy_s.clear();
  const std::vector<double>& counts = counts_after_[layer];
  for (size_t k = 0; k < counts.size(); ++k) {
    for (size_t m = 0; m < kCostMixes.size(); ++m) cv.mixed[m].add_hull((*hulls_[k])[m], counts[k]);
    cv.copy_s.add_hull(hulls_[k]->back(), counts[k]);
  }
  for (KeptCostCurve& curve : cv.mixed) curve.finish();
  cv.copy_s.finish();
  built_[layer] = true;
  return cv;
}

}  // namespace remat
