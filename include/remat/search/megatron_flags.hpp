#pragma once
// The Megatron-LM launch flags that run a plan, and what they cannot express.
#include <string>
#include <vector>

#include "remat/search/planner.hpp"

namespace remat {

struct MegatronFlags {
  std::vector<std::string> flags;  // e.g. "--recompute-granularity full"
  std::vector<std::string> notes;  // where Megatron differs from the plan, and the per-stage listing
};

MegatronFlags megatron_flags(const Candidate& c, const SearchSpace& space);

}  // namespace remat
