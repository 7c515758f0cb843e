#include "json_document.hpp"

#include "remat/spec/problems.hpp"

namespace remat {

nlohmann::json parse_json_object(const std::string& text, const std::string& file) {
  using nlohmann::json;
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError({{file, "byte " + std::to_string(e.byte), "", "malformed JSON"}});
  } catch (const json::exception& e) {  // out_of_range: a number beyond double ("1e999")
    const std::string what = e.what();
    throw InputError({{file, "(document)", "", "malformed JSON: " + what.substr(what.find(']') + 2)}});
  }
  if (!root.is_object()) throw InputError({{file, "(document)", "", "must be a JSON object"}});
  return root;
}

}  // namespace remat
