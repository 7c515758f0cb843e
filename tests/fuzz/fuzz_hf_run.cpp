// libFuzzer target: parse_hf_run (the JSON lines examples/hf/hf_step.py writes),
// then last_steps; every accepted step's figures must be usable (seq, mbs and
// layers >= 1, a positive peak) and a rejection well-formed. Also the bounded
// JSON parser and the UTF-8-safe writer every JSON reader and report goes
// through: what parses writes back as JSON that parses again.
#include "fuzz_common.hpp"
#include "remat/io/hf_run_log.hpp"
#include "remat/report/json_text.hpp"
#include "remat/spec/text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace remat;
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::parse_or_reject(data, size, "fuzz.jsonl", parse_hf_run, [](const std::vector<HfStep>& steps) {
    for (const HfStep& s : steps)
      if (s.seq < 1 || s.mbs < 1 || s.num_layers < 1 || !(s.peak_bytes > 0) || s.step < 1)
        fuzz::fail("accepted a step with unusable figures");
    if (last_steps(steps).empty()) fuzz::fail("no last step of accepted steps");
  });
  nlohmann::json j;
  JsonParseFailure failure;
  if (parse_json_bounded(text, j, failure)) {
    nlohmann::json back;
    if (!parse_json_bounded(dump_json_text(j), back, failure))
      fuzz::fail("written JSON does not parse: " + failure.message);
  } else if (failure.message.empty() || failure.key.empty()) {
    fuzz::fail("parse failure without key or message");
  }
  nlohmann::json raw = text;  // bytes as a JSON string: written escaped, never a throw
  nlohmann::json back;
  if (!parse_json_bounded(dump_json_text(raw), back, failure)) fuzz::fail("escaped string does not parse");
  if (needs_escaping(escape_text(text))) fuzz::fail("escape_text left a control character or a byte not UTF-8");
  return 0;
}
