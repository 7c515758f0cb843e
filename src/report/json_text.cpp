#include "remat/report/json_text.hpp"

#include <set>
#include <vector>

#include "remat/spec/text.hpp"

namespace remat {

namespace {

using nlohmann::json;

struct TooDeep {};
struct DuplicateKey {};

// Where the parser is: one frame per open array or object.
struct Frame {
  bool array = false;
  size_t index = 0;
  std::string key;
  std::set<std::string> keys;
};

// The key path of the value being read; past 8 levels, the first 8 and "...".
std::string key_path(const std::vector<Frame>& frames) {
  constexpr size_t kShown = 8;
  std::string path;
  for (size_t i = 0; i < frames.size(); ++i) {
    const Frame& f = frames[i];
    if (i == kShown) {
      path += "...";
      break;
    }
    if (f.array)
      path += "[" + std::to_string(f.index) + "]";
    else
      path += (path.empty() ? "" : ".") + f.key;
  }
  return path.empty() ? "(document)" : path;
}

void after_value(std::vector<Frame>& frames) {
  if (!frames.empty() && frames.back().array) ++frames.back().index;
}

// Every string and key of `j` made valid UTF-8; containers by an explicit stack.
template <typename J>
J with_utf8_strings(const J& j) {
  J out = j;
  std::vector<J*> todo{&out};
  while (!todo.empty()) {
    J* v = todo.back();
    todo.pop_back();
    if (v->is_string()) {
      const std::string& s = v->template get_ref<const std::string&>();
      if (!is_valid_utf8(s)) *v = escape_text(s, true);
    } else if (v->is_structured()) {
      for (auto& child : *v) todo.push_back(&child);
    }
  }
  // keys: rebuilt where one is not UTF-8
  std::vector<J*> objects{&out};
  while (!objects.empty()) {
    J* v = objects.back();
    objects.pop_back();
    if (v->is_object()) {
      bool bad = false;
      for (auto it = v->begin(); it != v->end(); ++it) bad = bad || !is_valid_utf8(it.key());
      if (bad) {
        J fixed = J::object();
        for (auto it = v->begin(); it != v->end(); ++it) fixed[escape_text(it.key(), true)] = std::move(it.value());
        *v = std::move(fixed);
      }
    }
    if (v->is_structured())
      for (auto& child : *v) objects.push_back(&child);
  }
  return out;
}

}  // namespace

bool parse_json_bounded(const std::string& text, json& out, JsonParseFailure& failure, size_t max_depth) {
  std::vector<Frame> frames;
  const json::parser_callback_t guard = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (frames.size() >= max_depth) throw TooDeep{};
        frames.push_back({event == json::parse_event_t::array_start, 0, "", {}});
        break;
      case json::parse_event_t::key:
        frames.back().key = parsed.get<std::string>();
        if (!frames.back().keys.insert(frames.back().key).second) throw DuplicateKey{};
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames.pop_back();
        after_value(frames);
        break;
      case json::parse_event_t::value:
        after_value(frames);
        break;
    }
    return true;
  };
  try {
    out = json::parse(text, guard);
    return true;
  } catch (const TooDeep&) {
    failure = {key_path(frames), "",
               "nests deeper than " + std::to_string(max_depth) + " levels of arrays and objects"};
  } catch (const DuplicateKey&) {
    failure = {key_path(frames), "", "duplicate key"};
  } catch (const json::parse_error& e) {
    failure = {"byte " + std::to_string(e.byte), "", "malformed JSON", true, e.byte};
  } catch (const json::exception& e) {  // out_of_range: a number beyond double ("1e999")
    const std::string what = e.what();
    failure = {"(document)", "", "malformed JSON: " + what.substr(what.find(']') + 2)};
  }
  out = json();
  return false;
}

namespace {

template <typename J>
std::string dump_text(const J& j, int indent) {
  try {
    return j.dump(indent);
  } catch (const nlohmann::json::type_error&) {  // 316: a string that is not UTF-8
    return with_utf8_strings(j).dump(indent);
  }
}

}  // namespace

std::string dump_json_text(const nlohmann::json& j, int indent) { return dump_text(j, indent); }
std::string dump_json_text(const nlohmann::ordered_json& j, int indent) { return dump_text(j, indent); }

}  // namespace remat
