#pragma once
// Common flags a subcommand takes but cannot honour: refused with exit 2 and
// one line naming the flag and the value, instead of silently ignored.
#include <string>

#include "options.hpp"
#include "remat/spec/problems.hpp"

namespace remat::cli {

// StreamBP's D and C (given other than 1) with `why` they do not apply.
inline void refuse_streambp_chunks(const CommonOptions& o, const std::string& why) {
  if (o.streambp_chunks != 1)
    throw InputError({{"command line", "--streambp-chunks", std::to_string(o.streambp_chunks), why}});
  if (o.lm_head_chunks != 1)
    throw InputError({{"command line", "--lm-head-chunks", std::to_string(o.lm_head_chunks), why}});
}

// estimate and simulate: StreamBP's D and C given with another --strategy.
inline void refuse_streambp_chunks_unless(const CommonOptions& o, bool streambp) {
  if (!streambp) refuse_streambp_chunks(o, "applies only with --strategy streambp");
}

// What plan, sweep and scenarios say: they evaluate none of the streambp plans D and C apply to.
inline std::string no_streambp(const std::string& command) {
  return command + " does not evaluate the streambp strategy it applies to (estimate, compare and simulate do)";
}

}  // namespace remat::cli
