// The per-layer search's fronts (src/search/layer_dp.cpp): the partial plans of one layer, and
// how a layer's candidates are merged into the next front (Pareto over kept, recompute, offload).
#pragma once
#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "remat/search/completion_bound.hpp"

namespace remat::dp {

// Partial sums over the layers decided so far.
struct State {
  double kept = 0, rc = 0, off = 0;
  // Under ordered backward (StageBase::ordered_backward), LayerSums::ordered_transient_bytes of
  // the layers so far (raised to a floor that no completion can tell from it: extend_front);
  // 0 otherwise.
  double ot = 0;
  int parent = -1;  // index in the previous layer's states
  int option = -1;  // option taken at this layer (index in space.options[kind])
  int mix = -1;     // the mix of completion_lower_s that bounded this state (its extensions try it first)
};

inline bool lex_less(const State& a, const State& b) {
  if (a.kept != b.kept) return a.kept < b.kept;
  if (a.rc != b.rc) return a.rc < b.rc;
  if (a.off != b.off) return a.off < b.off;
  return a.ot < b.ot;
}

// The states of one layer, kept to rebuild a plan: per state its parent and option.
struct Links {
  std::vector<std::pair<int, int>> parent_option;
  std::vector<size_t> layer_begin;
};

// An admitted option of the layer being extended (extend_front).
struct LiveOption {
  const LayerCost* cost;
  int pos;     // index in the pass's admitted list of the kind
  int option;  // index in space.options[kind]
};

// Buffers one stage's search reuses from layer to layer and pass to pass, so the loops allocate
// only while the fronts still grow.
struct Workspace {
  Links links;
  StageCompletions completions;
  std::vector<std::vector<const LayerCost*>> admitted_costs;  // per kind, the pass's admitted options
  std::vector<State> merged, scratch, front;
  std::vector<LiveOption> live;          // extend_front: the options still within the kept cap, by recompute
  std::vector<std::vector<State>> runs;  // per admitted option, its candidates in front order
  size_t runs_used = 0;                  // the layer's runs: the first so many
  std::vector<size_t> run_ends, next_ends;
  std::vector<std::pair<double, double>> stairs;  // rc ascending, off strictly descending
  // under ordered backward: the distinct offload sums, and per Fenwick node a staircase over
  // rc -> least q (pareto_sorted_ordered)
  std::vector<double> offs, front_offs;  // front_offs: the front's distinct offload sums, ascending
  std::vector<bool> off_used;
  std::vector<std::vector<std::pair<double, double>>> fenwick;
  size_t mix_checked = 0, mix_dropped = 0;  // extend_front's candidates held to their parent's mix
};

// ws.runs (per admitted option, its candidates in front order, each run sorted) one after the
// other into ws.merged, ws.run_ends after each nonempty run.
inline void concat_runs(Workspace& ws) {
  ws.merged.clear();
  ws.run_ends.clear();
  for (size_t r = 0; r < ws.runs_used; ++r) {
    const std::vector<State>& run = ws.runs[r];
    if (run.empty()) continue;
    ws.merged.insert(ws.merged.end(), run.begin(), run.end());
    ws.run_ends.push_back(ws.merged.size());
  }
}

// Merges the sorted runs of ws.merged (ending at ws.run_ends) pairwise until one is left: the
// candidates of one layer are the previous front shifted by each option, each run already
// sorted, so this costs n log(options) instead of a sort's n log n.
inline void merge_runs(Workspace& ws) {
  while (ws.run_ends.size() > 1) {
    ws.scratch.resize(ws.merged.size());
    std::vector<size_t>& ends = ws.next_ends;
    ends.clear();
    size_t begin = 0;
    for (size_t r = 0; r < ws.run_ends.size(); r += 2) {
      const size_t mid = ws.run_ends[r], end = r + 1 < ws.run_ends.size() ? ws.run_ends[r + 1] : mid;
      std::merge(ws.merged.begin() + long(begin), ws.merged.begin() + long(mid), ws.merged.begin() + long(mid),
                 ws.merged.begin() + long(end), ws.scratch.begin() + long(begin), lex_less);
      ends.push_back(end);
      begin = end;
    }
    std::swap(ws.merged, ws.scratch);
    std::swap(ws.run_ends, ws.next_ends);
  }
  // adding one option's sums keeps a run's order up to rounding ties; sort in that rare case
  if (!std::is_sorted(ws.merged.begin(), ws.merged.end(), lex_less))
    std::sort(ws.merged.begin(), ws.merged.end(), lex_less);
}

// Keeps, of states sorted by (kept, rc, off), those no other matches or beats
// on all three: a state is beaten iff an earlier one has both recompute and
// offload no larger, which a staircase over (rc -> least off) answers.
inline void pareto_sorted(Workspace& ws) {
  ws.front.clear();
  ws.stairs.clear();
  for (const State& s : ws.merged) {
    auto it = std::upper_bound(ws.stairs.begin(), ws.stairs.end(), s.rc,
                               [](double rc, const std::pair<double, double>& st) { return rc < st.first; });
    if (it != ws.stairs.begin() && std::prev(it)->second <= s.off) continue;
    ws.front.push_back(s);
    auto from = std::lower_bound(ws.stairs.begin(), ws.stairs.end(), s.rc,
                                 [](const std::pair<double, double>& st, double rc) { return st.first < rc; });
    auto to = from;
    while (to != ws.stairs.end() && to->second >= s.off) ++to;
    if (from != to) {
      *from = {s.rc, s.off};
      ws.stairs.erase(from + 1, to);
    } else {
      ws.stairs.insert(from, {s.rc, s.off});
    }
  }
}

// pareto_sorted under ordered backward (q = in_flight x kept + ot is a fourth objective).
// `option_offs`: the offload bytes of the layer's admitted options.
void pareto_sorted_ordered(Workspace& ws, double in_flight, const std::vector<double>& option_offs);

}  // namespace remat::dp
