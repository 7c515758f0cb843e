// libFuzzer target: parse_megatron_log, then the rebuilt setup and remat's
// prediction on accepted logs, and their report (table and JSON, with the
// log's '# host:' probe line in it) written as `remat validate` writes it (a
// rejection must be well-formed either way).
#include "fuzz_common.hpp"
#include "remat/io/megatron_log.hpp"
#include "remat/report/json_text.hpp"
#include "remat/validate/megatron_report.hpp"
#include "remat/validate/megatron_run.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace remat;
  static const HardwareSpec hw = load_hardware(read_spec_source("h200", "hardware"));
  fuzz::parse_or_reject(data, size, "fuzz.log", parse_megatron_log, [](const MegatronLog& log) {
    try {
      const MegatronComparison c = compare_megatron(log, hw);
      for (const auto& r : c.ranks)
        if (!std::isfinite(r.predicted_peak_MiB) || r.predicted_peak_MiB < 0) fuzz::fail("peak not finite");
      if (!std::isfinite(c.predicted_iteration_ms)) fuzz::fail("iteration time not finite");
      const std::vector<MegatronRun> runs = {{"fuzz.log", c, log.device, log.host, log.host_after}};
      (void)megatron_table(runs, hw.name);
      nlohmann::json back;
      JsonParseFailure failure;
      if (!parse_json_bounded(dump_json_text(megatron_report({}, runs, hw.name), 2), back, failure))
        fuzz::fail("the report does not parse back: " + failure.message);
    } catch (const InputError& e) {
      fuzz::check_rejection(e, "fuzz.log");
    }
  });
  return 0;
}
