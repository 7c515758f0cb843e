#pragma once
// `remat calibrate`: the hardware file's efficiency entries fitted to the
// per-kernel measurements of remat-bench on some sequence lengths, checked
// on the others by the block times `remat validate` predicts.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "remat/spec/hardware_spec.hpp"
#include "remat/validate/measured.hpp"
#include "remat/validate/validate.hpp"

namespace remat {

// How each entry was fitted, for the report.
struct FitNote {
  std::string entry;  // "gemm_by_flops", "attention_fwd", ...
  int64_t samples = 0;
  double before = 0, after = 0;  // scalar entries; gemm: the point count before and after
  std::string how;
};

struct Calibration {
  HardwareSpec before, after;
  std::set<int64_t> fit_lengths, check_lengths;
  std::vector<FitNote> notes;
  ErrorSummary fit_before, fit_after, check_before, check_after;
};

// Fits on the cases whose s is in `fit_lengths` (every kernel of every
// strategy), checks on `check_lengths`. Throws InputError (naming `file`)
// when the fit set has no kernel of a kind the hardware file needs.
Calibration calibrate(const Measurements& m, const HardwareSpec& hw, const std::set<int64_t>& fit_lengths,
                      const std::set<int64_t>& check_lengths, const std::string& file);

// The hardware YAML `original` with its efficiency entries replaced by the
// calibrated ones and `calibrated_from: <source>` set; every other line and
// comment is kept.
std::string calibrated_hardware_yaml(const std::string& original, const Calibration& c, const std::string& source);

}  // namespace remat
