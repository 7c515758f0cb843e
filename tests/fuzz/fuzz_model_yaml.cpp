// libFuzzer target: parse_model_yaml, then one estimate of an accepted model.
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace remat;
  static const HardwareSpec hw = load_hardware(read_spec_source("h100-sxm", "hardware"));
  fuzz::parse_or_reject(data, size, "fuzz.yaml", parse_model_yaml,
                        [](const ModelSpec& m) { fuzz::check_estimate(m, hw, fuzz::one_rank(512), Strategy::eagle); });
  return 0;
}
