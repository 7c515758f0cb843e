#pragma once
// Measured Hugging Face training steps (reports/hf/*.jsonl), each compared with its prediction.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/params.hpp"
#include "remat/io/hf_run_log.hpp"
#include "remat/io/spec_loader.hpp"
#include "remat/spec/framework.hpp"
#include "remat/validate/hf_run.hpp"
#include "test_helpers.hpp"

namespace remat::test {

// One sequence of `seq` tokens, bf16, under the hf profile (LoRA of `lora_rank` where not 0), no ZeRO.
// A Hugging Face config.json as --framework hf builds it.
inline ModelSpec hf_model_as_built(const std::string& file) {
  return model_as_built(parse_hf_config(read_text(file), file), kHfFramework);
}

inline TrainingSpec hf_training(int64_t seq, int64_t lora_rank) {
  TrainingSpec t;
  t.mbs = 1, t.gbs = 1, t.seq = seq, t.precision = Precision::bf16, t.lora_rank = lora_rank;
  t = apply_framework(t, kHfFramework);
  t.zero_stage = 0;
  return t;
}

// The last step of every case in reports/hf/`file`, predicted on `hardware` (a hardware/ name).
inline std::vector<HfComparison> measured_hf_steps(const std::string& file, const std::string& hardware) {
  const std::string root = std::string(REMAT_TEST_DATA) + "/../";
  std::ifstream in(root + "reports/hf/" + file);
  std::stringstream text;
  text << in.rdbuf();
  const HardwareSpec hw = test::hardware(hardware);
  std::vector<HfComparison> out;
  for (const HfStep& s : completed_last_steps(text.str(), file)) {
    ModelSpec m = test::model(root + s.config);
    m.set_layer_count(s.num_layers);
    out.push_back(compare_hf(s, m, hw, file));
  }
  return out;
}

// Every case of reports/hf/`file`: the bytes before the step within `before_pct` and the step peak
// within `peak_pct` of the prediction; `steps` cases in all.
inline void expect_steps_within(const std::string& file, const std::string& hardware, double before_pct,
                                double peak_pct, int steps) {
  int checked = 0;
  for (const HfComparison& c : measured_hf_steps(file, hardware)) {
    EXPECT_LE(std::abs(c.before_error_pct()), before_pct) << c.measured.case_name;
    EXPECT_LE(std::abs(c.peak_error_pct()), peak_pct) << c.measured.case_name;
    ++checked;
  }
  EXPECT_EQ(checked, steps) << file;
}

// Each file of examples/hf/unseen<set>/realcfg/ that transformers built (param-counts-realcfg<set>-
// h200.jsonl), loaded: its count expected equal to transformers', or its refusal's message handed to
// `refused`. Returns {exact, refused}.
// `differs`: files whose count remat knowingly reads otherwise (a flat step3p7 file's keys at the top,
// which transformers' wrapper config ignores), with remat's count.
inline std::pair<int, int> tally_real_configs(const std::string& set,
                                              const std::function<void(const std::string&)>& refused,
                                              const std::map<std::string, double>& differs = {}) {
  const std::string root = std::string(REMAT_TEST_DATA) + "/../";
  std::ifstream lines(root + "reports/hf/param-counts-realcfg" + set + "-h200.jsonl");
  std::pair<int, int> tally{0, 0};
  for (std::string line; std::getline(lines, line);) {
    const auto row = nlohmann::json::parse(line);
    if (!row.contains("file") || !row.contains("params")) continue;  // the versions line; not built
    const std::string file = root + "examples/hf/unseen" + set + "/realcfg/" + row.at("file").get<std::string>();
    try {
      const ModelSpec m = test::model(file);
      const auto known = differs.find(row.at("file").get<std::string>());
      if (known != differs.end()) {
        EXPECT_EQ(model_params(m, m.num_hidden_layers), known->second) << file;
        continue;
      }
      EXPECT_EQ(model_params(m, m.num_hidden_layers), row.at("params").get<double>()) << file;
      ++tally.first;
    } catch (const InputError& e) {
      ++tally.second;
      refused(e.what());
    }
  }
  return tally;
}

// The measured steps of reports/hf/`file` named in `expected`, each within 0.1 of its peak error
// (percent), priced on the H200.
inline void expect_peak_errors(const std::string& file, const std::map<std::string, double>& expected) {
  size_t found = 0;
  for (const HfComparison& c : measured_hf_steps(file, "h200")) {
    const auto it = expected.find(c.measured.case_name);
    if (it == expected.end()) continue;
    ++found;
    EXPECT_NEAR(c.peak_error_pct(), it->second, 0.1) << it->first;
  }
  EXPECT_EQ(found, expected.size()) << file;
}

// The layer's block named `name` (a test failure, and the first block, where it has none).
inline const Block& block_named(const LayerDef& layer, const std::string& name) {
  for (const Block& b : layer.blocks)
    if (b.name == name) return b;
  ADD_FAILURE() << name;
  return layer.blocks.front();
}

}  // namespace remat::test
