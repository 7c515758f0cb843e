// libFuzzer target: parse_measurements (the CUDA backend's measurements JSON), then
// `remat validate`'s predictions of every accepted case: finite, and the peak not below the kept bytes.
#include "fuzz_common.hpp"
#include "remat/io/measurements.hpp"
#include "remat/validate/validate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace remat;
  static const HardwareSpec hw = load_hardware(read_spec_source("h200", "hardware"));
  fuzz::parse_or_reject(data, size, "fuzz.json", parse_measurements, [](const Measurements& m) {
    for (const auto& c : m.cases)
      if (c.peak_bytes < c.kept_bytes || !(c.total_s >= 0)) fuzz::fail("accepted an inconsistent case");
    for (const auto& v : validate_cases(m, hw, "fuzz.json")) {
      const double figures[] = {v.memory.kept_bytes, v.memory.peak_bytes, v.predicted.total_s()};
      for (double x : figures)
        if (!std::isfinite(x) || x < 0) fuzz::fail("prediction not finite or negative: " + std::to_string(x));
      if (v.memory.peak_bytes < v.memory.kept_bytes) fuzz::fail("predicted peak below predicted kept bytes");
    }
  });
  return 0;
}
