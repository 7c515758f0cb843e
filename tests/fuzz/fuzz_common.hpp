#pragma once
// Shared by the fuzz targets: what a rejected input must look like, and the
// estimate run on every accepted spec.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "remat/cost/estimate.hpp"
#include "remat/io/spec_loader.hpp"
#include "remat/spec/validate.hpp"

namespace remat::fuzz {

[[noreturn]] inline void fail(const std::string& why) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", why.c_str());
  std::abort();
}

// Every problem of a rejection is one non-empty line naming file and key.
inline void check_rejection(const InputError& e, const std::string& file) {
  if (e.problems().empty()) fail("InputError without problems");
  for (const auto& p : e.problems()) {
    const std::string line = p.line();
    if (p.file != file && p.file != "command line") fail("problem names another file: " + line);
    if (p.key.empty() || p.message.empty()) fail("problem without key or message: " + line);
    if (line.find('\n') != std::string::npos || line.find('\r') != std::string::npos)
      fail("problem spans lines: " + line);
    if (line.size() > 400) fail("problem line too long: " + line.substr(0, 400));
  }
}

// Runs one small estimate; every figure must be finite and non-negative.
inline void check_estimate(const ModelSpec& m, const HardwareSpec& hw, TrainingSpec t, Strategy s) {
  if (!validate_training(t, m).empty()) return;
  t = with_defaults(t);
  Plan plan;
  plan.strategy = s;
  if (!validate_plan(plan, t, m).empty()) return;
  const Estimate e = estimate(m, hw, t, plan, default_budget_bytes(hw));
  const double figures[] = {e.peak_memory_bytes, e.iteration.time_s, e.iteration.model_flops, e.iteration.tokens_per_s,
                            e.iteration.mfu};
  for (double x : figures)
    if (!std::isfinite(x) || x < 0) fail("estimate figure not finite or negative: " + std::to_string(x));
}

// One fuzz input: `parse(text, file)` either throws a well-formed rejection or
// returns a spec that `accepted` then exercises.
template <class Parse, class Accepted>
void parse_or_reject(const uint8_t* data, size_t size, const std::string& file, Parse parse, Accepted accepted) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    accepted(parse(text, file));
  } catch (const InputError& e) {
    check_rejection(e, file);
  }
}

inline TrainingSpec one_rank(int64_t seq) {
  TrainingSpec t;
  t.tp = t.pp = t.mbs = 1;
  t.seq = seq;
  return t;
}

}  // namespace remat::fuzz
