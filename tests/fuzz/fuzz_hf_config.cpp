// libFuzzer target: parse_hf_config (Hugging Face config.json), then one estimate.
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace remat;
  static const HardwareSpec hw = load_hardware(read_spec_source("h100-sxm", "hardware"));
  fuzz::parse_or_reject(data, size, "fuzz.json", parse_hf_config, [](const ModelSpec& m) {
    fuzz::check_estimate(m, hw, fuzz::one_rank(256), Strategy::standard);
  });
  return 0;
}
