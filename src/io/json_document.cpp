#include "json_document.hpp"

#include <cctype>
#include <vector>

#include "remat/report/json_text.hpp"
#include "remat/spec/problems.hpp"

namespace remat {

namespace {

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

// The length of a bare non-finite token starting at `at` (outside strings), 0 when none.
size_t non_finite_token(const std::string& text, size_t at) {
  if (at > 0 && is_word_char(text[at - 1])) return 0;
  for (const char* token : {"-Infinity", "Infinity", "NaN"}) {
    const std::string t(token);
    if (text.compare(at, t.size(), t) == 0 && (at + t.size() == text.size() || !is_word_char(text[at + t.size()])))
      return t.size();
  }
  return 0;
}

// Quotes every bare non-finite token; `quoted_at` gets each one's offset in the result.
std::string quote_non_finite(const std::string& text, std::vector<size_t>& quoted_at) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size())
        out += text[++i];
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    const size_t n = (c == '-' || c == 'I' || c == 'N') ? non_finite_token(text, i) : 0;
    if (n == 0) {
      out += c;
      continue;
    }
    quoted_at.push_back(out.size());
    out.push_back('"');
    out.append(text, i, n);
    out.push_back('"');
    i += n - 1;
  }
  return out;
}

}  // namespace

nlohmann::json parse_json_object(const std::string& text, const std::string& file, bool non_finite_as_strings) {
  using nlohmann::json;
  std::vector<size_t> quoted_at;
  const std::string parsed = non_finite_as_strings ? quote_non_finite(text, quoted_at) : text;
  json root;
  JsonParseFailure failure;
  if (!parse_json_bounded(parsed, root, failure)) {
    if (failure.malformed) {       // (not by the key's text: a key can be named "byte 7")
      size_t byte = failure.byte;  // back to the offset in the file: two quotes per token before it
      for (size_t at : quoted_at)
        if (at < failure.byte && byte >= 2) byte -= 2;
      failure.key = "byte " + std::to_string(byte);
    }
    throw InputError({{file, failure.key, failure.value, failure.message}});
  }
  if (!root.is_object()) throw InputError({{file, "(document)", "", "must be a JSON object"}});
  return root;
}

}  // namespace remat
