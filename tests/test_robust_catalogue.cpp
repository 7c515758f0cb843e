// The bad-input catalogue (tests/bad_inputs/cases.json) itself: large enough,
// every flag of the CLI with a bad value, every file present, every expected
// message one "error: FILE: KEY: MESSAGE" line. BadInputCatalogue in
// test_cli.cpp runs the cases.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace {

nlohmann::json load_cases() {
  std::ifstream in(std::string(REMAT_TEST_DATA) + "/bad_inputs/cases.json");
  return nlohmann::json::parse(in);
}

TEST(RobustCatalogue, AtLeastFortyCasesAllExitTwo) {
  const auto cases = load_cases();
  EXPECT_GE(cases.size(), 40u);
  std::set<std::string> names;
  for (const auto& c : cases) {
    EXPECT_TRUE(names.insert(c["name"].get<std::string>()).second) << "duplicate name " << c["name"];
    EXPECT_EQ(c["exit"], 2) << c["name"];
  }
}

TEST(RobustCatalogue, EveryFlagHasABadValue) {
  std::set<std::string> seen;
  for (const auto& c : load_cases())
    for (const auto& a : c["args"]) {
      const std::string s = a.get<std::string>();
      if (s.rfind("--", 0) == 0) seen.insert(s.substr(0, s.find('=')));
    }
  for (const char* flag : {"--model",
                           "--hardware",
                           "--tp",
                           "--pp",
                           "--dp",
                           "--ep",
                           "--mbs",
                           "--gbs",
                           "--seq",
                           "--num-layers",
                           "--layers-per-stage",
                           "--no-sequence-parallel",
                           "--precision",
                           "--optimizer",
                           "--zero-stage",
                           "--swiglu-unfused",
                           "--gqa-expand-kv",
                           "--no-fp32-logits",
                           "--no-flash",
                           "--replay",
                           "--json",
                           "--format",
                           "--strategy",
                           "--recompute-layers",
                           "--offload-layers",
                           "--memory-budget-GiB",
                           "--formulas",
                           "--max-layouts",
                           "--layer-plan",
                           "--virtual-stages"})
    EXPECT_TRUE(seen.count(flag)) << flag << " has no case in the catalogue";
}

TEST(RobustCatalogue, FilesExistAndMessagesAreSingleLinesNamingFileAndKey) {
  namespace fs = std::filesystem;
  const std::string dir = std::string(REMAT_TEST_DATA) + "/bad_inputs";
  for (const auto& c : load_cases()) {
    for (const auto& a : c["args"]) {
      const std::string s = a.get<std::string>();
      if (s.rfind("@/", 0) == 0 && s.find("no_such") == std::string::npos)
        EXPECT_TRUE(fs::exists(dir + s.substr(1))) << c["name"] << ": " << s;
    }
    std::istringstream lines(c["stderr"].get<std::string>());
    std::string line;
    int n = 0;
    while (std::getline(lines, line)) {
      ++n;
      EXPECT_EQ(line.rfind("error: ", 0), 0u) << c["name"] << ": " << line;
      // "error: FILE: KEY: MESSAGE": at least three ": " separators
      size_t at = 0, parts = 0;
      while ((at = line.find(": ", at)) != std::string::npos) ++parts, at += 2;
      EXPECT_GE(parts, 3u) << c["name"] << ": " << line;
    }
    EXPECT_GE(n, 1) << c["name"];
  }
}

}  // namespace
