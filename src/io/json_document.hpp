// Parsing a JSON document that must be an object, with malformed input as a
// one-line problem naming the file (HF config.json, remat-bench measurements).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace remat {

// Throws InputError: malformed JSON (with the byte offset), a number beyond
// double, or a root that is not an object. With `non_finite_as_strings`, the
// bare tokens Infinity, -Infinity and NaN that Python's json module writes
// (transformers saves float('inf') so) parse as the strings "Infinity",
// "-Infinity" and "NaN": a key remat ignores may hold one, a key it reads
// refuses it by name as not a number.
nlohmann::json parse_json_object(const std::string& text, const std::string& file, bool non_finite_as_strings = false);

}  // namespace remat
