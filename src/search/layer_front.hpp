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
  std::vector<const std::vector<State>*> nonempty_runs;  // merge_pareto's
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
// One level of merge_runs: each pair of adjacent runs of ws.merged merged, into ws.scratch (at
// least as long as the runs), then swapped in.
inline void merge_level(Workspace& ws) {
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

inline void merge_runs(Workspace& ws) {
  while (ws.run_ends.size() > 1) {
    ws.scratch.resize(ws.merged.size());
    merge_level(ws);
  }
  // adding one option's sums keeps a run's order up to rounding ties; sort in that rare case
  if (!std::is_sorted(ws.merged.begin(), ws.merged.end(), lex_less))
    std::sort(ws.merged.begin(), ws.merged.end(), lex_less);
}

// Whether `s`, after every state of the staircase in (kept, rc, off) order, is matched or beaten
// on all three by none of them: iff none has both recompute and offload no larger, which the
// staircase over (rc -> least off) answers. If so it joins the staircase.
inline bool joins_staircase(std::vector<std::pair<double, double>>& stairs, const State& s) {
  auto it = std::upper_bound(stairs.begin(), stairs.end(), s.rc,
                             [](double rc, const std::pair<double, double>& st) { return rc < st.first; });
  if (it != stairs.begin() && std::prev(it)->second <= s.off) return false;
  auto from = std::lower_bound(stairs.begin(), stairs.end(), s.rc,
                               [](const std::pair<double, double>& st, double rc) { return st.first < rc; });
  auto to = from;
  while (to != stairs.end() && to->second >= s.off) ++to;
  if (from != to) {
    *from = {s.rc, s.off};
    stairs.erase(from + 1, to);
  } else {
    stairs.insert(from, {s.rc, s.off});
  }
  return true;
}

// Keeps, of states sorted by (kept, rc, off), those no other matches or beats on all three.
inline void pareto_sorted(Workspace& ws) {
  ws.front.clear();
  ws.stairs.clear();
  for (const State& s : ws.merged)
    if (joins_staircase(ws.stairs, s)) ws.front.push_back(s);
}

// Offers the states of two sorted ranges to the staircase in merged order (ties to the first
// range, as std::merge keeps them), keeping those that join it.
inline void merge_two_into_front(const State* a, const State* a_end, const State* b, const State* b_end,
                                 Workspace& ws) {
  const auto offer = [&](const State& s) {
    if (joins_staircase(ws.stairs, s)) ws.front.push_back(s);
  };
  while (a != a_end && b != b_end) offer(lex_less(*b, *a) ? *b++ : *a++);
  for (; a != a_end; ++a) offer(*a);
  for (; b != b_end; ++b) offer(*b);
}

// concat_runs, merge_runs and pareto_sorted with two passes fewer, where every run is sorted
// (else those three): the first merges read the runs where they are, the last feeds the
// staircase. Same states in the same order as those three.
inline void merge_pareto(Workspace& ws) {
  std::vector<const std::vector<State>*>& runs = ws.nonempty_runs;
  runs.clear();
  for (size_t r = 0; r < ws.runs_used; ++r) {
    const std::vector<State>& run = ws.runs[r];
    if (run.empty()) continue;
    if (!std::is_sorted(run.begin(), run.end(), lex_less)) {
      concat_runs(ws);
      merge_runs(ws);
      pareto_sorted(ws);
      return;
    }
    runs.push_back(&run);
  }
  ws.front.clear();
  ws.stairs.clear();
  if (runs.empty()) return;
  if (runs.size() <= 2) {
    static const std::vector<State> kNone;
    const std::vector<State>& x = *runs[0];
    const std::vector<State>& y = runs.size() == 2 ? *runs[1] : kNone;
    merge_two_into_front(x.data(), x.data() + x.size(), y.data(), y.data() + y.size(), ws);
    return;
  }
  // the first level: pairs of runs merged into ws.merged (an odd last one copied). The buffers
  // only grow: their states are overwritten, not constructed, from call to call
  size_t total = 0;
  for (const auto* run : runs) total += run->size();
  for (auto* buffer : {&ws.merged, &ws.scratch})
    if (buffer->size() < total) buffer->resize(total);
  ws.run_ends.clear();
  State* out = ws.merged.data();
  for (size_t r = 0; r < runs.size(); r += 2) {
    const std::vector<State>& x = *runs[r];
    if (r + 1 < runs.size())
      out = std::merge(x.begin(), x.end(), runs[r + 1]->begin(), runs[r + 1]->end(), out, lex_less);
    else
      out = std::copy(x.begin(), x.end(), out);
    ws.run_ends.push_back(size_t(out - ws.merged.data()));
  }
  // the middle levels as merge_runs, down to two runs; the last into the staircase
  while (ws.run_ends.size() > 2) merge_level(ws);
  const State* m = ws.merged.data();
  merge_two_into_front(m, m + ws.run_ends[0], m + ws.run_ends[0], m + ws.run_ends[1], ws);
}

// pareto_sorted under ordered backward (q = in_flight x kept + ot is a fourth objective).
// `option_offs`: the offload bytes of the layer's admitted options.
void pareto_sorted_ordered(Workspace& ws, double in_flight, const std::vector<double>& option_offs);

}  // namespace remat::dp
