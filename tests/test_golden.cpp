// Golden reports: the example scenarios' JSON under reports/ must match what
// remat produces now, numbers within a relative 1e-6. After an intended
// change, regenerate them with REMAT_UPDATE_GOLDEN=1 (or examples/paper_scenarios.sh).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "shell_run.hpp"

namespace {

using json = nlohmann::ordered_json;

std::string run_json(const std::vector<std::string>& args, int& exit_code) {
  const auto r = remat::test::run_shell(remat::test::remat_command(args) + " --json - 2>/dev/null");
  exit_code = r.exit_code;
  return r.out;
}

// Differences between two reports, "meta" left out (tool version, commit).
void compare(const json& want, const json& got, const std::string& path, std::vector<std::string>& diffs) {
  if (diffs.size() > 20) return;
  if (want.is_number() && got.is_number()) {
    const double a = want.get<double>(), b = got.get<double>();
    if (std::fabs(a - b) > 1e-6 * std::max(std::fabs(a), std::fabs(b)) + 1e-12)
      diffs.push_back(path + ": " + want.dump() + " -> " + got.dump());
    return;
  }
  if (want.type() != got.type()) return diffs.push_back(path + ": type changed");
  if (want.is_object()) {
    for (const auto& [k, v] : want.items()) {
      if (path.empty() && k == "meta") continue;
      if (!got.contains(k))
        diffs.push_back(path + "/" + k + ": missing");
      else
        compare(v, got[k], path + "/" + k, diffs);
    }
    for (const auto& [k, v] : got.items())
      if (!want.contains(k)) diffs.push_back(path + "/" + k + ": new");
  } else if (want.is_array()) {
    if (want.size() != got.size()) return diffs.push_back(path + ": length changed");
    for (size_t i = 0; i < want.size(); ++i) compare(want[i], got[i], path + "/" + std::to_string(i), diffs);
  } else if (want != got) {
    diffs.push_back(path + ": " + want.dump() + " -> " + got.dump());
  }
}

TEST(GoldenReports, ExampleScenariosMatch) {
  const std::string root = std::string(REMAT_TEST_DATA) + "/..";
  std::ifstream in(std::string(REMAT_TEST_DATA) + "/golden/manifest.json");
  ASSERT_TRUE(in);
  const bool update = std::getenv("REMAT_UPDATE_GOLDEN") != nullptr;
  for (const auto& entry : json::parse(in)) {
    const std::string report = root + "/" + entry["report"].get<std::string>();
    int code = -1;
    const std::string out = run_json(entry["args"].get<std::vector<std::string>>(), code);
    ASSERT_TRUE(code == 0 || code == 1) << report;
    const json got = json::parse(out);
    if (update) {
      std::ofstream(report) << got.dump(2) << "\n";
      continue;
    }
    std::ifstream want_in(report);
    ASSERT_TRUE(want_in) << "missing golden report " << report << " (REMAT_UPDATE_GOLDEN=1 writes it)";
    std::vector<std::string> diffs;
    compare(json::parse(want_in), got, "", diffs);
    std::string all;
    for (const auto& d : diffs) all += "\n  " + d;
    EXPECT_TRUE(diffs.empty()) << report << " differs (REMAT_UPDATE_GOLDEN=1 regenerates):" << all;
  }
}

}  // namespace
