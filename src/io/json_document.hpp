// Parsing a JSON document that must be an object, with malformed input as a
// one-line problem naming the file (HF config.json, remat-bench measurements).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace remat {

// Throws InputError: malformed JSON (with the byte offset), a number beyond
// double, or a root that is not an object.
nlohmann::json parse_json_object(const std::string& text, const std::string& file);

}  // namespace remat
