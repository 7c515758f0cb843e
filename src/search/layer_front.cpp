#include "layer_front.hpp"

#include <algorithm>

namespace remat::dp {

namespace {

// Adds (x, v) to a staircase (x ascending, v strictly descending) that answers "least v at x or
// below": nothing when a step at or below x has v or less, else dropping the steps it beats.
void add_stair(std::vector<std::pair<double, double>>& stairs, double x, double v) {
  const auto it = std::upper_bound(stairs.begin(), stairs.end(), x,
                                   [](double y, const std::pair<double, double>& st) { return y < st.first; });
  if (it != stairs.begin() && std::prev(it)->second <= v) return;
  auto from = std::lower_bound(stairs.begin(), it, x,
                               [](const std::pair<double, double>& st, double y) { return st.first < y; });
  auto to = from;
  while (to != stairs.end() && to->second >= v) ++to;
  if (from != to) {
    *from = {x, v};
    stairs.erase(from + 1, to);
  } else {
    stairs.insert(from, {x, v});
  }
}

}  // namespace

// pareto_sorted under ordered backward, where a state's future peak also grows with
// q = in_flight x kept + ot (stage_totals: the activations are in_flight x kept, and the layers'
// ordered transient is max(ot - kept after, the later layers' own)): of states sorted by (kept,
// rc, off, ot), keeps those no earlier one matches or beats on rc, off and q. A Fenwick tree over
// the distinct offload sums (few), each node a staircase (rc -> least q) of the states it
// covers, answers that in log^2 time.
// `option_offs`: the offload bytes of the layer's admitted options. The candidates' offload sums
// are the previous front's (ws.front_offs) plus one of them: sorting those few finds them all.
void pareto_sorted_ordered(Workspace& ws, double in_flight, const std::vector<double>& option_offs) {
  ws.front.clear();
  std::vector<double>& offs = ws.offs;
  offs.clear();
  for (double o : ws.front_offs)
    for (double d : option_offs) offs.push_back(o + d);  // as extend_front adds them
  std::sort(offs.begin(), offs.end());
  offs.erase(std::unique(offs.begin(), offs.end()), offs.end());
  if (ws.fenwick.size() < offs.size() + 1) ws.fenwick.resize(offs.size() + 1);
  for (size_t i = 1; i <= offs.size(); ++i) ws.fenwick[i].clear();
  ws.off_used.assign(offs.size(), false);
  for (const State& s : ws.merged) {
    const double q = in_flight * s.kept + s.ot;
    const size_t rank = size_t(std::lower_bound(offs.begin(), offs.end(), s.off) - offs.begin()) + 1;
    if (rank > offs.size() || offs[rank - 1] != s.off) {  // not expected; the plain way then
      ws.front_offs.clear();
      for (const State& t : ws.merged) ws.front_offs.push_back(t.off);
      std::sort(ws.front_offs.begin(), ws.front_offs.end());
      pareto_sorted_ordered(ws, in_flight, {0.0});
      return;
    }
    bool beaten = false;
    for (size_t i = rank; i > 0 && !beaten; i -= i & (~i + 1)) {
      const auto& stairs = ws.fenwick[i];
      auto it = std::upper_bound(stairs.begin(), stairs.end(), s.rc,
                                 [](double rc, const std::pair<double, double>& st) { return rc < st.first; });
      beaten = it != stairs.begin() && std::prev(it)->second <= q;
    }
    if (beaten) continue;
    ws.front.push_back(s);
    ws.off_used[rank - 1] = true;
    for (size_t i = rank; i <= offs.size(); i += i & (~i + 1)) add_stair(ws.fenwick[i], s.rc, q);
  }
  ws.front_offs.clear();
  for (size_t i = 0; i < offs.size(); ++i)
    if (ws.off_used[i]) ws.front_offs.push_back(offs[i]);
}

}  // namespace remat::dp
