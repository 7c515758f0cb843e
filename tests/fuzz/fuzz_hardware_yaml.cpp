// libFuzzer target: parse_hardware_yaml, then one estimate on accepted hardware.
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace remat;
  static const ModelSpec model = load_model(read_spec_source("llama3-8b", "models"));
  fuzz::parse_or_reject(data, size, "fuzz.yaml", parse_hardware_yaml, [](const HardwareSpec& hw) {
    TrainingSpec t;
    t.tp = 2, t.pp = 2, t.dp = 2, t.mbs = 1, t.seq = 1024;
    fuzz::check_estimate(model, hw, t, Strategy::offload);
  });
  return 0;
}
