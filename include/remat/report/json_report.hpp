#pragma once
// JSON reports (DESIGN.md "JSON report contract"); built in memory, written by the CLI.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "remat/cost/estimate.hpp"
#include "remat/cost/modules.hpp"
#include "remat/spec/hardware_spec.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/plan.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

using Json = nlohmann::ordered_json;

inline constexpr const char* kSchemaVersion = "1.0";

struct InputDigest {
  std::string role;    // "model", "hardware", ...
  std::string source;  // path or built-in label
  std::string sha256;
};

struct ReportMeta {
  std::string tool_version;
  std::string git_commit;
  std::string command;  // subcommand
  std::vector<InputDigest> inputs;
};

Json meta_json(const ReportMeta& meta);
Json model_json(const ModelSpec& m);
Json hardware_json(const HardwareSpec& h);
Json training_json(const TrainingSpec& t);
Json plan_json(const Plan& p);

Json estimate_report(const ReportMeta& meta, const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t,
                     const Plan& p, const Estimate& e);
Json modules_report(const ReportMeta& meta, const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t,
                    const std::vector<ModuleRow>& rows);

}  // namespace remat
