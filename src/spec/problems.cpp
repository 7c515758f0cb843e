#include "remat/spec/problems.hpp"

namespace remat {

std::string Problem::line() const {
  std::string out = file + ": " + key + ": " + message;
  if (!value.empty()) out += " (got " + value + ")";
  return out;
}

namespace {
std::string first_line(const std::vector<Problem>& problems) {
  return problems.empty() ? std::string("invalid input") : problems.front().line();
}
}  // namespace

InputError::InputError(std::vector<Problem> problems)
    : std::runtime_error(first_line(problems)), problems_(std::move(problems)) {}

}  // namespace remat
