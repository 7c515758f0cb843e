#include "remat/search/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iterator>
#include <map>
#include <optional>
#include <thread>
#include <tuple>

#include "remat/cost/op_time.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

// The divisors of n up to `limit`, ascending; O(sqrt n).
std::vector<int64_t> divisors_up_to(int64_t n, int64_t limit) {
  std::vector<int64_t> low, high;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    if (d <= limit) low.push_back(d);
    if (d != n / d && n / d <= limit) high.push_back(n / d);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

struct Layout {
  TrainingSpec t;
  Strategy s;
};

// Calls visit(tp, pp, dp, ep, mbs, strategy) for each layout until it returns false.
template <typename Visit>
void for_each_layout(const ModelSpec& m, const SweepSpace& sp, Visit visit) {
  for (int64_t gpus : sp.gpus)
    for (int64_t tp : sp.tp) {
      if (tp > gpus || gpus % tp != 0) continue;
      const auto pps = sp.pp.empty() ? divisors_up_to(gpus / tp, m.num_hidden_layers) : sp.pp;
      for (int64_t pp : pps) {
        if (pp > gpus || gpus % (tp * pp) != 0) continue;
        const int64_t dp = gpus / (tp * pp);
        const auto eps = !m.is_moe()     ? std::vector<int64_t>{1}
                         : sp.ep.empty() ? divisors_up_to(m.n_routed_experts, dp * tp)
                                         : sp.ep;
        for (int64_t ep : eps)
          for (int64_t mbs : sp.mbs)
            for (Strategy s : sp.strategies)
              if (!visit(tp, pp, dp, ep, mbs, s)) return;
      }
    }
}

std::vector<Layout> enumerate(const ModelSpec& m, const TrainingSpec& base, const SweepSpace& sp) {
  std::vector<Layout> out;
  for_each_layout(m, sp, [&](int64_t tp, int64_t pp, int64_t dp, int64_t ep, int64_t mbs, Strategy s) {
    TrainingSpec t = base;
    t.tp = tp, t.pp = pp, t.dp = dp, t.ep = ep, t.mbs = mbs;
    out.push_back({t, s});
    return true;
  });
  return out;
}

std::string category(const Problem& p) { return p.key + " " + p.message; }

}  // namespace

static bool recomputes_nothing(const Candidate& c) {
  if (c.mode == SearchMode::per_layer) {
    for (const auto& stage : c.per_layer)
      for (const LayerChoice& l : stage)
        if (!(l == LayerChoice{})) return false;
    return true;
  }
  return std::all_of(c.r.begin(), c.r.end(), [](int64_t r) { return r == 0; });
}

int64_t count_layouts(const ModelSpec& m, const SweepSpace& space, int64_t limit) {
  int64_t n = 0;
  for_each_layout(m, space, [&](int64_t, int64_t, int64_t, int64_t, int64_t, Strategy) { return ++n <= limit; });
  return n;
}

namespace {

// One worker's share of the layouts, in layout order.
struct SweepPart {
  std::vector<SweepRow> rows;
  std::map<std::string, int64_t> infeasible_by_reason;
};

// One worker's search spaces by what their layers depend on (tp, ep, mbs; with the per-layer
// search, whose options depend on it, the strategy): layouts that differ only in pp and dp share
// the layers' shapes and costs and rebuild only their stages (with_pipeline).
struct SpaceCache {
  using Key = std::tuple<int64_t, int64_t, int64_t, int>;
  std::map<Key, SearchSpace> spaces;
  static constexpr size_t kMaxSpaces = 64;  // a worker's memory stays bounded

  const SearchSpace& space_for(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t,
                               const SearchOptions& o, Strategy s) {
    const Key key{t.tp, t.ep, t.mbs, o.per_layer ? int(s) : -1};
    auto it = spaces.find(key);
    if (it == spaces.end()) {
      if (spaces.size() >= kMaxSpaces) spaces.clear();
      return spaces.emplace(key, build_search_space(m, hw, t, o)).first->second;
    }
    // the strategies of one layout (visited in a row) share its space as it is
    if (it->second.training.pp != t.pp || it->second.training.dp != t.dp) it->second = with_pipeline(it->second, t);
    return it->second;
  }
};

// Plans layouts [first, last) into `out`; `done` counts the layouts finished.
void sweep_range(const ModelSpec& m, const HardwareSpec& hw, const SweepSpace& space,
                 const std::vector<Layout>& layouts, size_t first, size_t last, double budget_bytes, SweepPart& out,
                 SpaceCache& cache, std::atomic<int64_t>& done) {
  for (size_t i = first; i < last; ++i, ++done) {
    const Layout& l = layouts[i];
    auto problems = validate_training(l.t, m);
    if (problems.empty()) problems = network_problems(l.t, hw, hw.name);
    if (!problems.empty()) {
      ++out.infeasible_by_reason[category(problems.front())];
      continue;
    }
    SearchOptions o;
    o.strategies = l.s == Strategy::none ? std::vector<Strategy>{} : std::vector<Strategy>{l.s};
    o.per_layer = space.per_layer && l.s != Strategy::none;
    o.offload = false;
    o.intervals = false;
    o.explain = false;
    o.budget_bytes = budget_bytes;
    const SearchSpace& ss = cache.space_for(m, hw, l.t, o, l.s);
    const PlanSearchResult pr = plan_search(ss, o);
    if (!pr.best) {
      std::string why = "does not fit the memory budget";
      if (pr.shortfall) why += std::string(": ") + describe(pr.shortfall->cause);
      ++out.infeasible_by_reason[why];
      continue;
    }
    // a strategy whose best plan recomputes no layer is the none plan: listed once, under none
    if (l.s != Strategy::none && recomputes_nothing(*pr.best)) {
      if (std::find(space.strategies.begin(), space.strategies.end(), Strategy::none) != space.strategies.end())
        continue;
    }
    SweepRow row{ss.training, l.s, true, "", *pr.best, pr.best->mfu, pr.best->tokens_per_s};
    if (recomputes_nothing(*pr.best)) row.strategy = Strategy::none;
    out.rows.push_back(std::move(row));
  }
}

// Layouts per unit of work: the strategies of a layout stay together (they share its space).
constexpr size_t kLayoutsPerPart = 64;

}  // namespace

SweepResult sweep(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& base, const SweepSpace& space,
                  double budget_bytes, const std::function<void(int64_t, int64_t)>& progress) {
  const std::vector<Layout> layouts = enumerate(m, base, space);
  SweepResult res;
  res.evaluated = int64_t(layouts.size());
  for (int64_t gpus : space.gpus)
    if (std::none_of(layouts.begin(), layouts.end(), [&](const Layout& l) { return l.t.gpus() == gpus; }))
      res.gpus_without_layout.push_back(gpus);
  const size_t stride = kLayoutsPerPart * std::max<size_t>(space.strategies.size(), 1);
  std::vector<SweepPart> parts((layouts.size() + stride - 1) / stride);
  std::atomic<size_t> next_part = 0;
  std::atomic<int64_t> done = 0;
  // a worker plans parts until none is left; the calling thread reports progress between its own
  const auto work = [&](bool report) {
    SpaceCache cache;
    for (size_t p; (p = next_part++) < parts.size();) {
      if (report) progress(done.load(), res.evaluated);
      sweep_range(m, hw, space, layouts, p * stride, std::min(layouts.size(), (p + 1) * stride), budget_bytes, parts[p],
                  cache, done);
    }
  };
  const size_t threads = std::min(parts.size(), space.threads > 0 ? size_t(space.threads) : size_t(1));
  std::vector<std::thread> workers;
  for (size_t i = 1; i < threads; ++i) workers.emplace_back(work, false);
  work(bool(progress));
  while (progress && done.load() < res.evaluated) {
    progress(done.load(), res.evaluated);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (auto& w : workers) w.join();
  if (progress) progress(res.evaluated, res.evaluated);
  // parts in layout order, then a stable sort: the same rows in the same order for any thread count
  for (SweepPart& part : parts) {
    std::move(part.rows.begin(), part.rows.end(), std::back_inserter(res.rows));
    for (const auto& [why, n] : part.infeasible_by_reason) res.infeasible_by_reason[why] += n;
  }
  std::stable_sort(res.rows.begin(), res.rows.end(),
                   [](const SweepRow& a, const SweepRow& b) { return a.tokens_per_s > b.tokens_per_s; });
  return res;
}

}  // namespace remat
