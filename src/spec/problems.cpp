#include "remat/spec/problems.hpp"

#include "remat/spec/text.hpp"

namespace remat {

namespace {

constexpr size_t kMaxField = 120;    // longer keys and values are cut, with "..."
constexpr size_t kMaxMessage = 200;  // messages can quote input (a parser's token)

// One printable line: control characters and bytes that are not UTF-8
// escaped (a key or value from a file may hold newlines), long text cut on a
// character boundary.
std::string printable(const std::string& s, size_t max = std::string::npos) {
  std::string out = escape_text(s);
  if (out.size() <= max) return out;
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  return out.substr(0, cut) + "...";
}

std::string first_line(const std::vector<Problem>& problems) {
  return problems.empty() ? std::string("invalid input") : problems.front().line();
}

}  // namespace

std::string Problem::line() const {
  std::string out = printable(file) + ": " + printable(key, kMaxField) + ": " + printable(message, kMaxMessage);
  if (!value.empty()) out += " (got " + printable(value, kMaxField) + ")";
  return out;
}

InputError::InputError(std::vector<Problem> problems)
    : std::runtime_error(first_line(problems)), problems_(std::move(problems)) {}

}  // namespace remat
