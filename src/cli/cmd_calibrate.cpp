// remat calibrate: the hardware file's efficiency entries fitted to remat-bench's
// per-kernel measurements, written back with the measurement they came from.
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <memory>
#include <set>

#include "commands.hpp"
#include "options.hpp"
#include "remat/io/megatron_log.hpp"
#include "remat/spec/problems.hpp"
#include "remat/spec/text.hpp"
#include "remat/validate/megatron_run.hpp"
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
  std::vector<std::string> megatron_logs;
};

// The hardware YAML without the `megatron-local:` entry of its top-level `frameworks:` block: that
// line and the lines indented deeper under it; the block's other entries and the keys after it stay.
std::string without_megatron_entry(const std::string& yaml) {
  std::string out;
  bool in_block = false, in_entry = false;
  for (size_t start = 0; start < yaml.size();) {
    const size_t end = std::min(yaml.find('\n', start), yaml.size());
    const std::string line = yaml.substr(start, end - start);
    start = end + 1;
    const bool top_level = !line.empty() && line[0] != ' ' && line[0] != '\t' && line[0] != '#';
    if (top_level) in_block = line.rfind("frameworks:", 0) == 0, in_entry = false;
    const bool entry_key = in_block && line.size() > 2 && line.rfind("  ", 0) == 0 && line[2] != ' ' && line[2] != '#';
    if (entry_key) in_entry = line.rfind("  megatron-local:", 0) == 0;
    if (!in_entry) out += line + "\n";
  }
  return out;
}

// The hardware YAML with the fitted megatron-local entry first under `frameworks:` (the block
// added at the end when the file has none); other frameworks' entries kept.
std::string with_framework_block(const std::string& original, const FrameworkEfficiency& e, size_t runs) {
  const std::string moe_line = e.has_moe_layer_host
                                   ? fmt::format("    moe_layer_host_us: {:.0f}\n", e.moe_layer_host_s * 1e6)
                                   : "    # moe_layer_host_us: not fitted, no MoE run among these\n";
  const std::string entry = fmt::format(
      "  megatron-local:   # remat calibrate --megatron-log: fitted to {} Megatron-LM runs\n"
      "    gemm_scale: {:.3f}\n"
      "    memory_bound_scale: {:.3f}\n"
      "    layer_overhead_us: {:.0f}\n"
      "{}"
      "    calibrated_from: {}\n",
      runs, e.gemm_scale, e.memory_bound_scale, e.layer_overhead_s * 1e6, moe_line,
      yaml_double_quoted(e.calibrated_from));
  std::string yaml = without_megatron_entry(original);
  const size_t block = yaml.rfind("frameworks:", 0) == 0 ? 0 : yaml.find("\nframeworks:");
  if (block == std::string::npos) return yaml + "frameworks:\n" + entry;
  const size_t after = yaml.find('\n', block == 0 ? 0 : block + 1);
  return yaml.substr(0, after + 1) + entry + yaml.substr(after + 1);
}

int calibrate_megatron(const CalibrateOptions& o) {
  if (o.hardware.empty())
    throw InputError({{"command line", "--hardware", "", "is required with --megatron-log (the file to fit)"}});
  std::vector<MegatronLog> logs;
  std::string names;
  for (const auto& path : o.megatron_logs) {
    logs.push_back(parse_megatron_log(read_file_text(path, "--megatron-log"), path));
    names += (names.empty() ? "" : " ") + path.substr(path.find_last_of('/') + 1);
  }
  const SpecSource src = read_spec_source(o.hardware, "hardware");
  double rms = 0;
  FrameworkEfficiency e = fit_megatron_local(logs, load_hardware(src), &rms);
  if (!std::isfinite(rms))
    throw InputError({{o.megatron_logs.front(), "elapsed time per iteration (ms)", fmt::format("{}", rms),
                       "the fit's rms log error is not finite: nothing was fitted"}});
  e.calibrated_from = names;
  const std::string yaml = with_framework_block(src.text, e, logs.size());
  parse_hardware_yaml(yaml, "calibrated hardware YAML");  // what we write must load
  if (!o.out_path.empty()) write_file_text(o.out_path, "--out", yaml);
  if (o.in_place) {
    if (src.label.find("(built-in)") != std::string::npos)
      throw InputError({{"command line", "--in-place", src.label, "needs --hardware FILE, not a built-in spec"}});
    write_file_text(src.label, "--in-place", yaml);
  }
  const std::string moe = e.has_moe_layer_host ? fmt::format("{:.0f} us", e.moe_layer_host_s * 1e6)
                                               : std::string("not fitted (no MoE run)");
  write_stdout(terminal_text(
      fmt::format("megatron-local on {}: gemm_scale {:.3f}, memory_bound_scale {:.3f}, layer_overhead {:.0f} us, "
                  "moe_layer_host {}; fit over {} runs: rms log error {:.3f} ({:.1f}%)\n",
                  src.label, e.gemm_scale, e.memory_bound_scale, e.layer_overhead_s * 1e6, moe, logs.size(), rms,
                  100 * (std::exp(rms) - 1))));
  return kExitOk;
}

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
  sub->add_option("--megatron-log", o->megatron_logs,
                  "fit the hardware file's frameworks.megatron-local entry to these Megatron-LM logs' iteration "
                  "times instead (with --hardware FILE; --out or --in-place write it)");
  return [o]() {
    if (!o->megatron_logs.empty()) return calibrate_megatron(*o);
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
