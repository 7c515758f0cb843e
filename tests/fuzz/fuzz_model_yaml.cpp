// libFuzzer target: parse_model_yaml, then one estimate of an accepted model.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace remat;
  static const HardwareSpec hw = load_hardware(read_spec_source("h100-sxm", "hardware"));
  const std::string text(reinterpret_cast<const char*>(data), size);
  ModelSpec m;
  try {
    m = parse_model_yaml(text, "fuzz.yaml");
  } catch (const InputError& e) {
    fuzz::check_rejection(e, "fuzz.yaml");
    return 0;
  }
  TrainingSpec t;
  t.tp = t.pp = t.mbs = 1;
  t.seq = 512;
  fuzz::check_estimate(m, hw, t, Strategy::eagle);
  return 0;
}
