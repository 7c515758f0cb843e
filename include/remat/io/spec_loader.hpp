#pragma once
// Reading specs: our YAML files (unknown keys rejected), Hugging Face
// config.json (unused keys ignored), and the files built into the binary.
// Every function throws InputError listing each problem with file and key.
#include <string>
#include <vector>

#include "remat/spec/hardware_spec.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/problems.hpp"

namespace remat {

ModelSpec parse_model_yaml(const std::string& text, const std::string& file);
HardwareSpec parse_hardware_yaml(const std::string& text, const std::string& file);
ModelSpec parse_hf_config(const std::string& text, const std::string& file);

// The spec text and the name it was found under.
struct SpecSource {
  std::string label;  // path, or "models/NAME.yaml (built-in)"
  std::string text;
};

// A path to a file, or the name of a built-in spec ("llama3-70b",
// "models/llama3-70b.yaml"). kind is "models" or "hardware".
SpecSource read_spec_source(const std::string& path_or_name, const std::string& kind);
ModelSpec load_model(const SpecSource& src);
HardwareSpec load_hardware(const SpecSource& src);

struct BuiltinSpec {
  const char* kind;  // "models" or "hardware"
  const char* name;  // file stem
  const char* text;
};
const std::vector<BuiltinSpec>& builtin_specs();
// The built-in specs of one kind ("models", "hardware"), comma-separated.
std::string builtin_names(const std::string& kind);

}  // namespace remat
