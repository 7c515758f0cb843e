#pragma once
// Typed, checked reads of one YAML mapping; remembers which keys were read so
// that the rest can be rejected as unknown.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "remat/spec/problems.hpp"

namespace remat {

class YamlFields {
 public:
  YamlFields(YAML::Node map, std::string file, std::string prefix, std::vector<Problem>& problems);

  void integer(const std::string& key, int64_t& out, bool required);
  void number(const std::string& key, double& out, bool required, double scale = 1.0);
  void boolean(const std::string& key, bool& out, bool required);
  void text(const std::string& key, std::string& out, bool required);
  YAML::Node child(const std::string& key);  // marks the key read; null node when absent
  void reject_unknown();
  std::string path(const std::string& key) const { return prefix_ + key; }
  void fail(const std::string& key, const std::string& value, const std::string& message);

 private:
  bool scalar(const std::string& key, bool required, std::string& out);
  YAML::Node map_;
  std::string file_, prefix_;
  std::vector<Problem>& problems_;
  std::set<std::string> read_;
};

// Parses text into a mapping node, or records why it can't.
YAML::Node parse_yaml_map(const std::string& text, const std::string& file, std::vector<Problem>& problems);

}  // namespace remat
