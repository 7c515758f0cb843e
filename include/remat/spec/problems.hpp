#pragma once
// Input problems: one line each, naming the file, the key and the bad value.
#include <stdexcept>
#include <string>
#include <vector>

namespace remat {

struct Problem {
  std::string file;  // file or "command line"
  std::string key;   // key path, e.g. "efficiency.gemm_by_flops[2].fraction", or a flag
  std::string value;
  std::string message;
  std::string line() const;  // "FILE: KEY: MESSAGE (got VALUE)"
};

// Thrown by loaders and validators; carries every problem found.
class InputError : public std::runtime_error {
 public:
  explicit InputError(std::vector<Problem> problems);
  const std::vector<Problem>& problems() const { return problems_; }

 private:
  std::vector<Problem> problems_;
};

}  // namespace remat
