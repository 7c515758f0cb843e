#include "remat/spec/problems.hpp"

namespace remat {

namespace {

constexpr size_t kMaxField = 120;    // longer keys and values are cut, with "..."
constexpr size_t kMaxMessage = 200;  // messages can quote input (a parser's token)

// One printable line: control characters escaped (a key or value from a file
// may hold newlines), long text cut.
std::string printable(const std::string& s, size_t max = std::string::npos) {
  std::string out;
  for (unsigned char c : s) {
    if (out.size() >= max) return out + "...";
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += char(c);
    }
  }
  return out;
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
