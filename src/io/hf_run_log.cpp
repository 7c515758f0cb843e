#include "remat/io/hf_run_log.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <regex>
#include <set>

#include "remat/report/json_text.hpp"
#include "remat/spec/lora_placement.hpp"
#include "remat/spec/problems.hpp"

namespace remat {

namespace {

using nlohmann::json;

constexpr size_t kMaxLineBytes = 1 << 20;

struct Line {
  const json& j;
  const std::string& file;
  size_t line_number;
  std::string where(const char* key) const { return "line " + std::to_string(line_number) + ": " + key; }
  [[noreturn]] void fail(const char* key, const std::string& value, const std::string& why) const {
    throw InputError({{file, where(key), value, why}});
  }
  const json& at(const char* key) const {
    if (!j.contains(key)) fail(key, "", "is missing");
    return j.at(key);
  }
  std::string text(const char* key) const {
    const json& v = at(key);
    if (!v.is_string()) fail(key, v.dump(), "must be a string");
    return v.get<std::string>();
  }
  int64_t integer(const char* key, bool null_is_zero = false) const {
    const json& v = at(key);
    if (null_is_zero && v.is_null()) return 0;
    if (!v.is_number_integer() || v.get<int64_t>() < 0) fail(key, v.dump(), "must be a non-negative integer");
    return v.get<int64_t>();
  }
  double real(const char* key) const {
    const json& v = at(key);
    if (!v.is_number() || !(v.get<double>() >= 0)) fail(key, v.dump(), "must be a non-negative number");
    return v.get<double>();
  }
};

HfStep step_from(const Line& l) {
  HfStep s;
  s.case_name = l.text("case"), s.config = l.text("config"), s.mode = l.text("mode");
  s.checkpointing = l.text("checkpointing"), s.attention = l.text("attention"), s.precision = l.text("precision");
  s.objective = l.text("objective"), s.gpu = l.text("gpu");
  s.num_layers = l.integer("num_hidden_layers"), s.seq = l.integer("seq"), s.mbs = l.integer("mbs");
  s.lora_rank = l.integer("lora_rank"), s.grpo_group = l.integer("grpo_group", true), s.step = l.integer("step");
  s.lora_dropout = l.real("lora_dropout");
  // the first R decoder layers checkpointed, where the case says (hf_step.py's checkpoint_layers)
  if (l.j.contains("checkpoint_layers") && !l.j["checkpoint_layers"].is_null())
    s.checkpoint_layers = l.integer("checkpoint_layers");
  // examples/hf/hf_step.py's GRPO batch is one prompt's group of completions, whatever the case's mbs:
  // the prompts per step are the sequences it ran over the group
  if (s.objective == "grpo" && s.grpo_group > 0 && l.j.contains("batch_sequences")) {
    const int64_t sequences = l.integer("batch_sequences");
    if (sequences % s.grpo_group != 0)
      l.fail("batch_sequences", std::to_string(sequences), "must be a multiple of grpo_group");
    s.mbs = sequences / s.grpo_group;
  }
  // the names handed to PEFT where the log records them (hf_step.py from 2026-11-30 on); before, the
  // names in the case, which the harness renamed on LFM2 (its PEFT_MODULES)
  const bool handed = l.j.contains("lora_target_modules");
  const char* targets_key = handed ? "lora_target_modules" : "lora_targets";
  const json& targets = l.at(targets_key);
  if (!targets.is_array()) l.fail(targets_key, targets.dump(), "must be a list of module names");
  for (const json& t : targets) {
    if (!t.is_string()) l.fail(targets_key, t.dump(), "must be a module name");
    s.lora_targets.push_back(t.get<std::string>());
  }
  const std::string model_type = l.j.contains("model_type") && l.j["model_type"].is_string()
                                     ? l.j["model_type"].get<std::string>()
                                     : std::string();
  if (!handed && (model_type == "lfm2" || model_type == "lfm2_moe"))
    for (std::string& t : s.lora_targets)
      t = t == "o_proj"      ? "self_attn.out_proj"
          : t == "gate_proj" ? "w1"
          : t == "up_proj"   ? "w3"
          : t == "down_proj" ? "w2"
                             : t;
  // PEFT adapts the target names the model has (BioGPT has q_proj, k_proj and v_proj, not o_proj or
  // the MLP's) and skips the rest, which remat would refuse: a name is kept where a matched module
  // carries it (the end of its path), gate_proj, up_proj and down_proj where PEFT converted them onto
  // the experts (its ParamWrapper, "experts"; w1, w3 and w2 on Mixtral), and all-linear
  if (l.j.contains("lora_modules_matched") && l.j["lora_modules_matched"].is_array()) {
    std::vector<std::string> matched;
    for (const json& t : l.j["lora_modules_matched"])
      if (t.is_string()) matched.push_back(t.get<std::string>());
    const bool experts = std::find(matched.begin(), matched.end(), "experts") != matched.end();
    const auto kept = [&](const std::string& t) {
      // the expert names PEFT converts: Qwen2-MoE's pattern and Mixtral's (w1, w3, w2)
      const bool expert_name =
          t == "gate_proj" || t == "up_proj" || t == "down_proj" || t == "w1" || t == "w3" || t == "w2";
      if (t == "all-linear" || (experts && expert_name)) return true;
      return std::any_of(matched.begin(), matched.end(), [&](const std::string& m) { return peft_names_module(t, m); });
    };
    std::erase_if(s.lora_targets, [&](const std::string& t) { return !kept(t); });
  }
  if (l.j.contains("lora_param_dtype") && l.j["lora_param_dtype"].is_string())
    s.lora_adapter_dtype = l.j["lora_param_dtype"].get<std::string>();
  s.peak_bytes = l.real("peak_allocated_bytes"), s.before_bytes = l.real("allocated_before_bytes");
  s.step_time_s = l.real("step_time_s");
  // the run's own parameter counts, where it recorded them
  if (l.j.contains("params") && !l.j["params"].is_null()) s.params = l.integer("params");
  if (l.j.contains("trainable_params") && !l.j["trainable_params"].is_null())
    s.trainable_params = l.integer("trainable_params");
  if (s.seq < 1 || s.mbs < 1 || s.num_layers < 1)
    l.fail("seq", std::to_string(s.seq), "seq, mbs and layers must be >= 1");
  if (s.peak_bytes <= 0) l.fail("peak_allocated_bytes", "0", "must be positive");
  return s;
}

bool out_of_memory_record(const json& j) {
  const auto oom = j.find("oom");
  return oom != j.end() && oom->is_boolean() && oom->get<bool>();
}

// PyTorch's out-of-memory message: "Tried to allocate 48.00 GiB ... Of the allocated memory 52.61 GiB
// is allocated by PyTorch": their sum, or 0 where the message says neither.
double oom_needed_bytes(const std::string& message) {
  static const std::regex request(R"(Tried to allocate ([0-9.]+) (GiB|MiB))");
  static const std::regex allocated(R"(Of the allocated memory ([0-9.]+) (GiB|MiB) is allocated by PyTorch)");
  const auto bytes = [&](const std::regex& pattern) {
    std::smatch m;
    if (!std::regex_search(message, m, pattern)) return -1.0;
    return std::stod(m[1].str()) * (m[2].str() == "GiB" ? 1024.0 * 1024 * 1024 : 1024.0 * 1024);
  };
  const double asked = bytes(request), held = bytes(allocated);
  return asked < 0 || held < 0 ? 0 : asked + held;
}

// A training step that ran out of GPU memory, as a step whose peak is the GPU's whole memory (the
// out-of-memory record carries the case's settings; a model that failed to build, or hf_step.py's
// diagnostic pass, is no training step).
void add_out_of_memory(const json& j, const std::string& file, size_t number, std::vector<HfStep>& out) {
  const auto phase = j.find("oom_phase");
  if (!out_of_memory_record(j)) return;
  if (phase == j.end() || !phase->is_string() || !phase->get<std::string>().starts_with("step")) return;
  const Line l{j, file, number};
  if (l.real("gpu_total_bytes") <= 0) l.fail("gpu_total_bytes", "0", "must be positive: the GPU's memory");
  json step = j;
  step["step"] = 1, step["peak_allocated_bytes"] = j.at("gpu_total_bytes");
  step["allocated_before_bytes"] = 0, step["step_time_s"] = 0;
  out.push_back(step_from(Line{step, file, number}));
  const auto error = j.find("error");
  if (error != j.end() && error->is_string()) out.back().oom_needed_bytes = oom_needed_bytes(error->get<std::string>());
}

// hf_step.py's line for a case its --deadline left unrun: {"case", "config", "skipped": true, "reason"}
bool skipped_record(const json& j) {
  const auto skipped = j.find("skipped");
  return skipped != j.end() && skipped->is_boolean() && skipped->get<bool>();
}

void for_each_record(const std::string& text, const std::string& file,
                     const std::function<void(const json&, size_t)>& record) {
  size_t start = 0, number = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    start = end + 1, ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (line.size() > kMaxLineBytes)
      throw InputError({{file, "line " + std::to_string(number), std::to_string(line.size()) + " bytes",
                         "is longer than 1 MiB: not a step record"}});
    json j;
    JsonParseFailure failure;
    const bool parsed = parse_json_bounded(line, j, failure);
    if (parsed ? !j.is_object() : failure.malformed)
      throw InputError({{file, "line " + std::to_string(number), line.substr(0, 60), "is not a JSON object"}});
    if (!parsed) throw InputError({{file, "line " + std::to_string(number) + ": " + failure.key, "", failure.message}});
    record(j, number);
  }
}

}  // namespace

std::vector<HfStep> parse_hf_run(const std::string& text, const std::string& file) {
  std::vector<HfStep> steps;
  for_each_record(text, file, [&](const json& j, size_t number) {
    const Line l{j, file, number};
    if (out_of_memory_record(j) || j.contains("error") || skipped_record(j)) return;
    // step 0 is hf_step.py's saved-tensor diagnostic: a forward and backward before the measured steps
    if (l.integer("step") == 0) return;
    steps.push_back(step_from(l));
  });
  if (steps.empty()) throw InputError({{file, "step", "", "holds no measured step (step >= 1)"}});
  return steps;
}

std::vector<HfStep> parse_hf_out_of_memory(const std::string& text, const std::string& file) {
  std::vector<HfStep> steps;
  for_each_record(text, file, [&](const json& j, size_t number) { add_out_of_memory(j, file, number, steps); });
  return steps;
}

std::vector<HfStep> last_steps(const std::vector<HfStep>& steps) {
  std::vector<HfStep> out;
  std::map<std::string, size_t> index;
  for (const HfStep& s : steps) {
    auto [it, fresh] = index.try_emplace(s.case_name, out.size());
    if (fresh)
      out.push_back(s);
    else if (s.step >= out[it->second].step)
      out[it->second] = s;
  }
  return out;
}

std::vector<HfStep> completed_last_steps(const std::string& text, const std::string& file) {
  std::set<std::string> out_of_memory;
  for (const HfStep& s : parse_hf_out_of_memory(text, file)) out_of_memory.insert(s.case_name);
  std::vector<HfStep> out;
  for (HfStep& s : last_steps(parse_hf_run(text, file)))
    if (!out_of_memory.contains(s.case_name)) out.push_back(std::move(s));
  return out;
}

}  // namespace remat
