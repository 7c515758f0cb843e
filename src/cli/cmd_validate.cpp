// remat validate: remat-bench's measurements beside the cost model's predictions.
// remat calibrate (cmd_calibrate.cpp) shares the loading below.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "commands.hpp"
#include "options.hpp"
#include "remat/io/file_text.hpp"
#include "remat/io/hf_run_log.hpp"
#include "remat/io/measurements.hpp"
#include "remat/io/megatron_log.hpp"
#include "remat/io/sha256.hpp"
#include "remat/io/spec_loader.hpp"
#include "remat/report/json_text.hpp"
#include "remat/spec/framework.hpp"
#include "remat/spec/problems.hpp"
#include "remat/spec/text.hpp"
#include "remat/validate/megatron_report.hpp"
#include "remat/validate/validate_report.hpp"
#include "validate_inputs.hpp"
#include "version.hpp"

namespace remat::cli {

std::string read_file_text(const std::string& path, const std::string& flag) {
  return read_input_file(path, flag, flag == "--measurements" ? kMaxMeasurementsBytes : kMaxLogFileBytes);
}

void write_file_text(const std::string& path, const std::string& flag, const std::string& text) {
  write_text_file(path, flag, text);
}

// --hardware default: the GPU the measurements name (H200 -> h200, H100 -> h100-sxm),
// the file under hardware/ when run from the repository, else the built-in spec.
std::string hardware_for_device(const std::string& device) {
  std::string name;
  if (device.find("H200") != std::string::npos) name = "h200";
  if (device.find("H100") != std::string::npos) name = "h100-sxm";
  if (name.empty()) return "";
  const std::string path = "hardware/" + name + ".yaml";
  return std::ifstream(path).good() ? path : name;
}

std::string default_hardware(const Measurements& m, const std::string& file) {
  const std::string hw = hardware_for_device(m.device);
  if (hw.empty())
    throw InputError({{file, "device.name", m.device, "names no GPU with a hardware file: pass --hardware"}});
  return hw;
}

ValidateInputs load_validate_inputs(const std::string& measurements_path, const std::string& hardware,
                                    const std::string& command) {
  ValidateInputs in;
  in.measurements_path = measurements_path;
  // the default names a file of the source tree: found from any working directory
  std::string path = measurements_path;
  if (path == kDefaultMeasurements && !std::filesystem::exists(path))
    path = std::string(REMAT_SOURCE_DIR) + "/" + kDefaultMeasurements;
  const std::string text = read_file_text(path, "--measurements");
  in.measurements = parse_measurements(text, measurements_path);
  const std::string hw = hardware.empty() ? default_hardware(in.measurements, measurements_path) : hardware;
  in.hardware_source = read_spec_source(hw, "hardware");
  in.hardware = load_hardware(in.hardware_source);
  in.meta = {REMAT_VERSION,
             REMAT_GIT_COMMIT,
             command,
             {{"measurements", measurements_path, sha256_hex(text)},
              {"hardware", in.hardware_source.label, sha256_hex(in.hardware_source.text)}}};
  return in;
}

void emit_report(const std::string& format, const std::string& json_path, const std::string& table,
                 const Json& report) {
  const std::string json_text = dump_json_text(report, 2) + "\n";
  write_stdout(format == "json" || json_path == "-" ? json_text : terminal_text(table));
  if (!json_path.empty() && json_path != "-") write_file_text(json_path, "--json", json_text);
}

namespace {
struct ValidateOptions {
  std::string measurements = kDefaultMeasurements;
  std::string hardware;
  std::string json_path;
  std::string format = "table";
  std::vector<std::string> megatron_logs;
  std::vector<std::string> hf_runs;
  std::string svg_path;
};

// The hardware file for a GPU name (H200 -> h200, H100 -> h100-sxm): the file
// under hardware/ when run from the repository, else the built-in spec; "" when unknown.

int validate_megatron_logs(const ValidateOptions& o) {
  std::vector<MegatronLog> logs;
  std::vector<InputDigest> inputs;
  for (const auto& path : o.megatron_logs) {
    const std::string text = read_file_text(path, "--megatron-log");
    logs.push_back(parse_megatron_log(text, path));
    inputs.push_back({"megatron_log", path, sha256_hex(text)});
  }
  std::string hw_name = o.hardware.empty() ? hardware_for_device(logs.front().device) : o.hardware;
  if (hw_name.empty())
    throw InputError({{o.megatron_logs.front(), "# device", logs.front().device,
                       "names no GPU with a hardware file: pass --hardware"}});
  for (size_t i = 1; i < logs.size() && o.hardware.empty(); ++i)
    if (hardware_for_device(logs[i].device) != hw_name)  // one hardware file prices every log
      throw InputError({{o.megatron_logs[i], "# device", logs[i].device,
                         "is another GPU than the first log's (" + hw_name +
                             "): validate each GPU's logs on their own, or pass --hardware"}});
  const SpecSource hw_src = read_spec_source(hw_name, "hardware");
  const HardwareSpec hw = load_hardware(hw_src);
  inputs.push_back({"hardware", hw_src.label, sha256_hex(hw_src.text)});
  std::vector<MegatronRun> runs;
  for (size_t i = 0; i < logs.size(); ++i) {
    const std::string& path = o.megatron_logs[i];
    runs.push_back({path.substr(path.find_last_of('/') + 1), compare_megatron(logs[i], hw), logs[i].device,
                    logs[i].host, logs[i].host_after});
  }
  std::set<std::string> gaps;  // once each, not once per log
  for (const auto& run : runs)
    for (const auto& gap :
         framework_time_gaps(hw, kMegatronLocalFramework, run.comparison.setup.model, run.comparison.setup.training))
      if (gaps.insert(gap).second)
        std::cerr << "note: " << escape_text(hw_src.label) << ": " << escape_text(gap) << "\n";
  const ReportMeta meta{REMAT_VERSION, REMAT_GIT_COMMIT, "validate --megatron-log", inputs};
  emit_report(o.format, o.json_path, megatron_table(runs, hw.name), megatron_report(meta, runs, hw.name));
  if (!o.svg_path.empty()) write_file_text(o.svg_path, "--svg", megatron_svg(runs, hw.name));
  return kExitOk;
}
}  // namespace

// A record's config path as written (relative to the repository), else relative to the
// directory above the run file's reports/ folder.
std::string config_path(const std::string& config, const std::string& run_file) {
  if (std::ifstream(config).good()) return config;
  const size_t slash = run_file.rfind("reports/");
  if (slash != std::string::npos) {
    const std::string rooted = run_file.substr(0, slash) + config;
    if (std::ifstream(rooted).good()) return rooted;
  }
  return config;
}

int validate_hf_runs(const ValidateOptions& o) {
  std::vector<InputDigest> inputs;
  std::vector<std::pair<HfStep, std::string>> steps, out_of_memory;  // with the file each came from
  for (const auto& path : o.hf_runs) {
    const std::string text = read_file_text(path, "--hf-run");
    for (HfStep& s : completed_last_steps(text, path)) steps.emplace_back(std::move(s), path);
    for (HfStep& s : parse_hf_out_of_memory(text, path)) out_of_memory.emplace_back(std::move(s), path);
    inputs.push_back({"hf_run", path, sha256_hex(text)});
  }
  // each step priced on its own GPU's hardware file (logs of an H100 and an H200 in one call), unless
  // --hardware names one for all
  std::map<std::string, HardwareSpec> hardware_by_name;
  std::string hardware_names;
  const auto hardware_for = [&](const HfStep& step, const std::string& file) -> const HardwareSpec& {
    const std::string name = o.hardware.empty() ? hardware_for_device(step.gpu) : o.hardware;
    if (name.empty()) throw InputError({{file, "gpu", step.gpu, "names no GPU with a hardware file: pass --hardware"}});
    if (!hardware_by_name.count(name)) {
      const SpecSource src = read_spec_source(name, "hardware");
      const HardwareSpec& hw = hardware_by_name.emplace(name, load_hardware(src)).first->second;
      inputs.push_back({"hardware", src.label, sha256_hex(src.text)});
      hardware_names += (hardware_names.empty() ? "" : ", ") + hw.name;
    }
    return hardware_by_name.at(name);
  };
  std::map<std::string, ModelSpec> models;
  const auto compare_all = [&](const std::vector<std::pair<HfStep, std::string>>& measured) {
    std::vector<HfComparison> out;
    for (const auto& [step, file] : measured) {
      const std::string path = config_path(step.config, file);
      if (!models.count(path)) models.emplace(path, load_model(read_spec_source(path, "models")));
      ModelSpec m = models.at(path);
      m.set_layer_count(step.num_layers);
      out.push_back(compare_hf(step, m, hardware_for(step, file), file));
    }
    return out;
  };
  const std::vector<HfComparison> cases = compare_all(steps), oom = compare_all(out_of_memory);
  const ReportMeta meta{REMAT_VERSION, REMAT_GIT_COMMIT, "validate --hf-run", inputs};
  emit_report(o.format, o.json_path, hf_table(cases, oom, hardware_names), hf_report(meta, cases, oom, hardware_names));
  if (!o.svg_path.empty()) write_file_text(o.svg_path, "--svg", hf_svg(cases, hardware_names));
  return kExitOk;
}

Runner add_validate_command(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* sub = app.add_subcommand("validate", "remat-bench measurements beside the cost model's predictions");
  sub->add_option("--measurements", o->measurements, "measurements JSON (schema remat.gpu_measurements 1.x)")
      ->capture_default_str();
  sub->add_option("--hardware", o->hardware, "hardware spec (default: from the file's GPU name)");
  sub->add_option("--json", o->json_path, "write the JSON report to FILE ('-' for stdout)");
  sub->add_option("--format", o->format, "stdout format")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  sub->add_option("--megatron-log", o->megatron_logs,
                  "Megatron-LM training logs (--log-interval 1 --log-memory-interval 1): per rank predicted vs "
                  "measured peak and iteration time, instead of --measurements");
  sub->add_option("--hf-run", o->hf_runs,
                  "JSON lines of examples/hf/hf_step.py: per case predicted vs measured step peak, bytes before the "
                  "step and checkpointed time over none, under --framework hf");
  sub->add_option("--svg", o->svg_path,
                  "predicted against measured: with --megatron-log peak, iteration time and time over none; with "
                  "--hf-run step peak, bytes before the step and checkpointed time over none");
  return [o]() {
    if (!o->svg_path.empty() && o->megatron_logs.empty() && o->hf_runs.empty())
      throw InputError({{"command line", "--svg", o->svg_path, "needs --megatron-log or --hf-run"}});
    if (!o->megatron_logs.empty() && !o->hf_runs.empty())
      throw InputError({{"command line", "--hf-run", o->hf_runs.front(), "cannot be combined with --megatron-log"}});
    if (!o->hf_runs.empty()) return validate_hf_runs(*o);
    if (!o->megatron_logs.empty()) return validate_megatron_logs(*o);
    const ValidateInputs in = load_validate_inputs(o->measurements, o->hardware, "validate");
    const auto cases = validate_cases(in.measurements, in.hardware, in.measurements_path);
    emit_report(o->format, o->json_path, validate_table(in.measurements.device, in.hardware, cases),
                validate_report(in.meta, in.measurements.device, in.hardware, cases));
    return kExitOk;
  };
}

}  // namespace remat::cli
