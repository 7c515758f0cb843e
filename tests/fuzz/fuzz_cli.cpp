// libFuzzer target: the whole command line (CLI11 parsing, flag checks, spec
// loading, validation and the estimate) in-process through run_cli. The input
// is the argument list, one argument per line. Exit code 3 (internal error)
// or anything outside 0..2 is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_common.hpp"

namespace remat::cli {
int run_cli(std::vector<std::string> args);  // src/cli/main.cpp
}

namespace {

// Arguments that would touch the file system outside the built-in specs
// (--json, --trace and --svg* write files; paths read one) are not fuzzed.
bool allowed(const std::string& a) {
  for (const char* writes : {"--json", "--trace", "--svg"})
    if (a.rfind(writes, 0) == 0) return false;
  if (a.find("..") != std::string::npos) return false;
  if (a.find('/') != std::string::npos && a.rfind("models/", 0) != 0 && a.rfind("hardware/", 0) != 0) return false;
  return a.size() <= 64;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args;
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\n') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += char(data[i]);
    }
  }
  if (!cur.empty()) args.push_back(cur);
  if (args.size() > 24) return 0;
  for (const auto& a : args)
    if (!allowed(a)) return 0;
  const int code = remat::cli::run_cli(args);
  if (code < 0 || code > 2) remat::fuzz::fail("exit code " + std::to_string(code));
  return 0;
}
