#pragma once
// Every assignment of a small stage's options, priced by stage_totals: the brute force the
// per-layer searches are held to (test_layer_dp.cpp, test_counts_search.cpp).
#include <vector>

#include "remat/search/search_space.hpp"

namespace remat::test {

struct Priced {
  double time_s, peak_bytes;
};

// Every assignment of the stage's options, in layer order.
inline std::vector<Priced> every_assignment(const SearchSpace& sp, size_t stage) {
  const StageSpace& st = sp.stages[stage];
  std::vector<size_t> digit(st.kinds.size(), 0);
  std::vector<Priced> out;
  while (true) {
    LayerSums sums;
    for (size_t j = 0; j < digit.size(); ++j) sums.add(sp.options[st.kinds[j]][digit[j]].cost);
    const StageTotals t = stage_totals(st.base, sums);
    out.push_back({t.microbatch_s, t.peak_bytes});
    size_t j = 0;
    while (j < digit.size() && ++digit[j] == sp.options[st.kinds[j]].size()) digit[j++] = 0;
    if (j == digit.size()) return out;
  }
}

}  // namespace remat::test
