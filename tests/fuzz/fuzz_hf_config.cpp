// libFuzzer target: parse_hf_config (Hugging Face config.json), then one estimate.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace remat;
  static const HardwareSpec hw = load_hardware(read_spec_source("h100-sxm", "hardware"));
  const std::string text(reinterpret_cast<const char*>(data), size);
  ModelSpec m;
  try {
    m = parse_hf_config(text, "fuzz.json");
  } catch (const InputError& e) {
    fuzz::check_rejection(e, "fuzz.json");
    return 0;
  }
  TrainingSpec t;
  t.tp = t.pp = t.mbs = 1;
  t.seq = 256;
  fuzz::check_estimate(m, hw, t, Strategy::standard);
  return 0;
}
