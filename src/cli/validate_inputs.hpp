#pragma once
// Loading shared by `remat validate` and `remat calibrate` (cmd_validate.cpp).
#include <string>

#include "remat/io/spec_loader.hpp"
#include "remat/report/json_report.hpp"
#include "remat/validate/measured.hpp"

namespace remat::cli {

inline constexpr const char* kDefaultMeasurements = "reports/gpu/measurements-h200.json";

struct ValidateInputs {
  std::string measurements_path;
  Measurements measurements;
  SpecSource hardware_source;
  HardwareSpec hardware;
  ReportMeta meta;
};

ValidateInputs load_validate_inputs(const std::string& measurements_path, const std::string& hardware,
                                    const std::string& command);
std::string read_file_text(const std::string& path, const std::string& flag);
void write_file_text(const std::string& path, const std::string& flag, const std::string& text);
void emit_report(const std::string& format, const std::string& json_path, const std::string& table, const Json& report);

}  // namespace remat::cli
