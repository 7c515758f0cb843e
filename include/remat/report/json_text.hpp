#pragma once
// JSON text in and out with bounds: parsing refuses nesting deeper than a
// limit and duplicate keys (naming the key path) instead of recursing or
// keeping the last value; writing escapes bytes that are not UTF-8 instead of
// throwing at report time.
#include <nlohmann/json.hpp>
#include <string>

namespace remat {

inline constexpr size_t kMaxJsonDepth = 64;  // arrays and objects inside each other

struct JsonParseFailure {
  std::string key;         // the key path ("text_config.rope_scaling"), or "byte N"
  std::string value;       // what is quoted
  std::string message;     // "nests deeper than 64 levels", "duplicate key", "malformed JSON"
  bool malformed = false;  // the text is not JSON: `byte` is where the parser stopped
  size_t byte = 0;
};

// Parses `text`; false with `failure` set when it is malformed, nests deeper
// than max_depth or repeats a key within one object. Iterative: no recursion
// on the input's shape.
bool parse_json_bounded(const std::string& text, nlohmann::json& out, JsonParseFailure& failure,
                        size_t max_depth = kMaxJsonDepth);

// dump(indent) with every string's bytes that are not UTF-8 written as the
// text \xNN (nlohmann's dump throws on them).
std::string dump_json_text(const nlohmann::json& j, int indent = -1);
std::string dump_json_text(const nlohmann::ordered_json& j, int indent = -1);

}  // namespace remat
