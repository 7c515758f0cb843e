// remat calibrate: the hardware file's efficiency entries fitted to remat-bench's
// per-kernel measurements, written back with the measurement they came from.
#include <memory>
#include <set>

#include "commands.hpp"
#include "options.hpp"
#include "remat/spec/problems.hpp"
#include "remat/validate/validate_report.hpp"
#include "validate_inputs.hpp"

namespace remat::cli {

namespace {

struct CalibrateOptions {
  std::string measurements = kDefaultMeasurements;
  std::string hardware;
  std::string fit_s = "1024,4096,16384";
  std::string check_s = "2048,8192";
  std::string out_path;
  bool in_place = false;
  std::string json_path;
  std::string format = "table";
};

std::set<int64_t> lengths(const std::string& flag, const std::string& text) {
  std::set<int64_t> out;
  for (int64_t v : parse_int_list(flag, text)) {
    if (v <= 0) throw InputError({{"command line", flag, text, "sequence lengths must be > 0"}});
    out.insert(v);
  }
  return out;
}

// Where --in-place writes: the hardware file itself (a built-in spec has none).
std::string in_place_path(const ValidateInputs& in) {
  const std::string& label = in.hardware_source.label;
  if (label.find("(built-in)") != std::string::npos)
    throw InputError({{"command line", "--in-place", label, "needs --hardware FILE, not a built-in spec"}});
  return label;
}

}  // namespace

Runner add_calibrate_command(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* sub = app.add_subcommand("calibrate", "fit the hardware file's efficiencies to remat-bench measurements");
  sub->add_option("--measurements", o->measurements, "measurements JSON (schema remat.gpu_measurements 1.x)")
      ->capture_default_str();
  sub->add_option("--hardware", o->hardware, "hardware spec to start from (default: from the file's GPU name)");
  sub->add_option("--fit-s", o->fit_s, "sequence lengths to fit on")->capture_default_str();
  sub->add_option("--check-s", o->check_s, "held-out sequence lengths to check on")->capture_default_str();
  sub->add_option("--out", o->out_path, "write the calibrated hardware YAML to FILE");
  sub->add_flag("--in-place", o->in_place, "rewrite the --hardware file");
  sub->add_option("--json", o->json_path, "write the fit summary (JSON) to FILE ('-' for stdout)");
  sub->add_option("--format", o->format, "stdout format")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  return [o]() {
    const std::set<int64_t> fit = lengths("--fit-s", o->fit_s), check = lengths("--check-s", o->check_s);
    const ValidateInputs in = load_validate_inputs(o->measurements, o->hardware, "calibrate");
    const Calibration cal = calibrate(in.measurements, in.hardware, fit, check, in.measurements_path);
    const std::string yaml = calibrated_hardware_yaml(in.hardware_source.text, cal, in.measurements_path);
    parse_hardware_yaml(yaml, "calibrated hardware YAML");  // what we write must load
    if (!o->out_path.empty()) write_file_text(o->out_path, "--out", yaml);
    if (o->in_place) write_file_text(in_place_path(in), "--in-place", yaml);
    emit_report(o->format, o->json_path, calibrate_table(cal), calibrate_report(in.meta, cal));
    return kExitOk;
  };
}

}  // namespace remat::cli
