// libFuzzer target: parse_measurements (the CUDA backend's measurements JSON).
#include <cstddef>
#include <cstdint>

#include "fuzz_common.hpp"
#include "remat/io/measurements.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace remat;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const Measurements m = parse_measurements(text, "fuzz.json");
    for (const auto& c : m.cases)
      if (c.peak_bytes < c.kept_bytes || !(c.total_s >= 0)) fuzz::fail("accepted an inconsistent case");
  } catch (const InputError& e) {
    fuzz::check_rejection(e, "fuzz.json");
  }
  return 0;
}
