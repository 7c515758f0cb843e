#include "yaml_fields.hpp"

#include <yaml-cpp/depthguard.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "remat/io/file_text.hpp"

namespace remat {

namespace {
// The value under `key`, or an undefined optional when the mapping lacks it.
// (yaml-cpp's operator[] on a missing key yields a node that throws on use.)
bool find_value(const YAML::Node& map, const std::string& key, YAML::Node& out) {
  for (const auto& item : map)
    if (item.first.IsScalar() && item.first.Scalar() == key) {
      out = item.second;
      return true;
    }
  return false;
}
}  // namespace

YamlFields::YamlFields(YAML::Node map, std::string file, std::string prefix, std::vector<Problem>& problems)
    : map_(std::move(map)), file_(std::move(file)), prefix_(std::move(prefix)), problems_(problems) {}

void YamlFields::fail(const std::string& key, const std::string& value, const std::string& message) {
  problems_.push_back({file_, path(key), value, message});
}

bool YamlFields::scalar(const std::string& key, bool required, std::string& out) {
  read_.insert(key);
  YAML::Node node;
  if (!find_value(map_, key, node)) {
    if (required) fail(key, "", "required key is missing");
    return false;
  }
  if (node.IsNull()) {  // "key:", "key: ~", "key: null": not a default
    fail(key, "null", "has no value: give one or leave the key out");
    return false;
  }
  if (!node.IsScalar()) {
    fail(key, node.IsSequence() ? "a list" : "a mapping", "must be a single value");
    return false;
  }
  out = node.Scalar();
  return true;
}

void YamlFields::integer(const std::string& key, int64_t& out, bool required) {
  std::string s;
  if (!scalar(key, required, s)) return;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) return fail(key, s, "is out of range for an integer");
  if (ec != std::errc() || end != s.data() + s.size()) return fail(key, s, "must be an integer");
  out = v;
}

void YamlFields::number(const std::string& key, double& out, bool required, double scale) {
  std::string s;
  if (!scalar(key, required, s)) return;
  if (s == ".nan" || s == ".NaN" || s == ".NAN" || s == "nan" || s == "NaN") {
    out = std::nan("");
    return;
  }
  if (s == ".inf" || s == ".Inf" || s == "inf") {
    out = INFINITY;
    return;
  }
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) return fail(key, s, "must be a number");
  if (!std::isfinite(v) || !std::isfinite(v * scale)) return fail(key, s, "is out of range for a number");
  out = v * scale;
}

void YamlFields::boolean(const std::string& key, bool& out, bool required) {
  std::string s;
  if (!scalar(key, required, s)) return;
  if (s == "true")
    out = true;
  else if (s == "false")
    out = false;
  else
    fail(key, s, "must be true or false");
}

void YamlFields::text(const std::string& key, std::string& out, bool required) { scalar(key, required, out); }

YAML::Node YamlFields::child(const std::string& key) {
  read_.insert(key);
  YAML::Node node;
  if (!find_value(map_, key, node)) return YAML::Node(YAML::NodeType::Undefined);
  return node;
}

void YamlFields::reject_unknown() {
  std::set<std::string> seen;
  for (const auto& item : map_) {
    if (!item.first.IsScalar() || item.first.Scalar().empty()) {
      fail(item.first.IsScalar() || item.first.IsNull() ? "(empty key)" : "(non-scalar key)", "", "unknown key");
      continue;
    }
    const std::string key = item.first.Scalar();
    if (!seen.insert(key).second)
      fail(key, "", "duplicate key");  // only the first would be read
    else if (!read_.count(key))
      fail(key, "", "unknown key");
  }
}

namespace {

// The line number of a document start ("---" at column 0) or of content after
// a document end ("..."), once the first document has content; 0 when none.
size_t second_document_line(const std::string& text) {
  bool content = false, ended = false;
  size_t number = 0;
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line(text.data() + start, end - start);
    start = end + 1, ++number;
    const auto marker = [&](std::string_view m) {
      return line.substr(0, 3) == m && (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
    };
    const size_t first = line.find_first_not_of(" \t\r");
    const bool blank = first == std::string_view::npos || line[first] == '#';
    if (marker("---")) {
      if (content || ended) return number;
      content = line.find_first_not_of(" \t\r", 3) != std::string_view::npos &&
                line[line.find_first_not_of(" \t\r", 3)] != '#';
    } else if (marker("...")) {
      ended = content;
    } else if (!blank && line[0] != '%') {
      if (ended) return number;
      content = true;
    }
  }
  return 0;
}

}  // namespace

YAML::Node parse_yaml_map(const std::string& text, const std::string& file, std::vector<Problem>& problems) {
  YAML::Node root;
  if (text.size() > kMaxYamlBytes) {
    problems.push_back({file, "(file)", std::to_string(text.size()) + " bytes",
                        "is larger than the " + size_text(kMaxYamlBytes) + " remat reads for a YAML spec"});
    return YAML::Node();
  }
  try {
    // not YAML::LoadAll: yaml-cpp 0.7's loops without end (and without bound on
    // memory) on some malformed input (found by fuzz_model_yaml)
    if (const size_t line = second_document_line(text)) {
      problems.push_back(
          {file, "line " + std::to_string(line), "---", "starts a second YAML document; remat reads one"});
      return YAML::Node();
    }
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    problems.push_back(
        {file, "line " + std::to_string(e.mark.line + 1), "",
         "nests lists and mappings deeper than the " + std::to_string(e.depth()) + " levels yaml-cpp reads"});
    return YAML::Node();
  } catch (const YAML::Exception& e) {
    problems.push_back({file, "line " + std::to_string(e.mark.line + 1), "", "malformed YAML: " + e.msg});
    return YAML::Node();
  }
  if (!root.IsMap()) {
    problems.push_back({file, "(document)", "", "must be a mapping of keys to values"});
    return YAML::Node();
  }
  return root;
}

}  // namespace remat
