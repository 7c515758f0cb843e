// remat calibrate on the committed H200 run: fitted on s = 1024, 4096, 16384,
// checked on the held-out s = 2048, 8192; and remat validate with the
// committed (calibrated) hardware/h200.yaml. Tolerances: the 10% MAPE
// of predicted block times (forward, backward and recompute of every case).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "remat/io/measurements.hpp"
#include "remat/validate/calibrate.hpp"
#include "remat/validate/validate.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kFile = std::string(REMAT_TEST_DATA) + "/../reports/gpu/measurements-h200.json";

Measurements committed() { return parse_measurements(test::read_text(kFile), kFile); }

const std::set<int64_t> kFit = {1024, 4096, 16384}, kCheck = {2048, 8192};

TEST(ValidateCalibrate, HeldOutBlockTimesWithinTenPercent) {
  const Measurements m = committed();
  const Calibration c = calibrate(m, test::hardware("h200"), kFit, kCheck, kFile);
  EXPECT_EQ(c.check_after.cases, 40);  // 5 blocks x 4 strategies x 2 lengths
  EXPECT_LE(c.check_after.mape_phases, 0.10);
  EXPECT_LE(c.check_after.mape_total, 0.10);
  EXPECT_LE(c.fit_after.mape_phases, 0.10);
  // memory does not depend on the efficiencies
  EXPECT_LE(c.check_after.max_kept_error, 0.02);
  EXPECT_LE(c.check_after.max_peak_error, 0.02);
}

TEST(ValidateCalibrate, FittedEntriesArePlausible) {
  const Calibration c = calibrate(committed(), test::hardware("h200"), kFit, kCheck, kFile);
  const Efficiency& e = c.after.efficiency;
  ASSERT_GE(e.gemm_by_flops.size(), 5u);
  for (size_t i = 0; i < e.gemm_by_flops.size(); ++i) {
    EXPECT_GT(e.gemm_by_flops[i].fraction, 0.05);
    EXPECT_LE(e.gemm_by_flops[i].fraction, 1.0);
    if (i > 0) EXPECT_GT(e.gemm_by_flops[i].flops, e.gemm_by_flops[i - 1].flops);
  }
  // the largest GEMMs of the run reach 0.70-0.90 of 989 TFLOP/s (reports/gpu/README.md)
  EXPECT_NEAR(e.gemm_by_flops.back().fraction, 0.8, 0.1);
  EXPECT_GT(e.attention_fwd, 0.2);
  EXPECT_LT(e.attention_fwd, 0.8);
  EXPECT_GT(e.attention_bwd, 0.2);
  EXPECT_LT(e.attention_bwd, 0.8);
  EXPECT_GT(e.memory_bound, 0.3);
  EXPECT_LE(e.memory_bound, 1.0);
  EXPECT_NEAR(e.host_link, 55.0 / 64.0, 0.03);  // pinned copies at 54-55 GB/s of 64
}

// The committed hardware/h200.yaml is the calibrated one: validate with it
// meets the time target on the held-out lengths, and memory on every case.
TEST(ValidateCalibrate, CommittedHardwareFileIsCalibrated) {
  const HardwareSpec hw = test::hardware("h200");
  EXPECT_NE(hw.calibrated_from.find("measurements-h200.json"), std::string::npos);
  const auto cases = validate_cases(committed(), hw, kFile);
  EXPECT_LE(summarize(cases, kCheck).mape_phases, 0.10);
  EXPECT_LE(summarize(cases).max_kept_error, 0.02);
  EXPECT_LE(summarize(cases).max_peak_error, 0.02);
}

TEST(ValidateCalibrate, YamlKeepsCommentsAndLoads) {
  const Calibration c = calibrate(committed(), test::hardware("h200"), kFit, kCheck, kFile);
  const std::string original =
      "name: X\nsource: \"s\"  # where\npeak_bf16_tflops: 989\nhbm_GBps: 4800\n"
      "efficiency:\n  gemm_by_flops:\n    # old points\n    - {flops: 1e9, fraction: 0.5}\n"
      "  attention_fwd: 0.6   # a comment\n";
  const std::string out = calibrated_hardware_yaml(original, c, "m.json");
  EXPECT_NE(out.find("calibrated_from: \"m.json\""), std::string::npos);
  EXPECT_NE(out.find("source: \"s\"  # where"), std::string::npos);
  EXPECT_NE(out.find("# before calibration: attention_fwd: 0.6   # a comment"), std::string::npos);
  EXPECT_EQ(out.find("old points"), std::string::npos);
  // calibrating the calibrated text again keeps a single "before" line
  const std::string twice = calibrated_hardware_yaml(out, c, "m.json");
  EXPECT_EQ(twice.find("before calibration: attention_fwd"), twice.rfind("before calibration: attention_fwd"));
}

}  // namespace
}  // namespace remat
