#pragma once
// JSON and plain-text reports of `remat validate` and `remat calibrate`.
#include <string>
#include <vector>

#include "remat/report/json_report.hpp"
#include "remat/validate/calibrate.hpp"
#include "remat/validate/validate.hpp"

namespace remat {

Json error_summary_json(const ErrorSummary& e);
Json validate_report(const ReportMeta& meta, const std::string& device, const HardwareSpec& hw,
                     const std::vector<CaseValidation>& cases);
// One row per case (times in ms, bytes in MB, errors in %), then MAPE per block and in total.
std::string validate_table(const std::string& device, const HardwareSpec& hw, const std::vector<CaseValidation>& cases);

Json calibrate_report(const ReportMeta& meta, const Calibration& c);
std::string calibrate_table(const Calibration& c);

}  // namespace remat
