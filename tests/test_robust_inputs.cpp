// Hostile inputs at the library level: the measurements reader, the inputs
// the fuzzers found, one-line problems, every YAML key's bad values.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "remat/io/measurements.hpp"
#include "remat/io/spec_loader.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

using test::read_text;

// The first problem's line, or "(accepted)".
template <class F>
std::string rejection(F&& parse) {
  try {
    parse();
  } catch (const InputError& e) {
    return e.problems().front().line();
  }
  return "(accepted)";
}

const std::string kSeeds = std::string(REMAT_TEST_DATA) + "/fuzz/seeds/measurements/";

TEST(RobustMeasurements, ReadsTheCommittedSeeds) {
  const Measurements m = parse_measurements(read_text(kSeeds + "measurements-h200-small.json"), "m.json");
  EXPECT_EQ(m.schema_version, "1.0");
  ASSERT_FALSE(m.cases.empty());
  EXPECT_EQ(m.cases[0].block, "rmsnorm_linear");
  EXPECT_EQ(m.cases[0].dims.at("hidden_size"), 4096);
  EXPECT_GT(m.cases[0].total_s, 0);
  EXPECT_GE(m.cases[0].peak_bytes, m.cases[0].kept_bytes);
}

TEST(RobustMeasurements, RejectsBadCasesWithKeyPathAndValue) {
  const std::string head = R"({"schema": "remat.gpu_measurements", "schema_version": "1.0", "cases": [)";
  const std::string good =
      R"({"block": "mlp", "strategy": "eagle", "dims": {"b": 1, "s": 1024, "model": "x"},
          "forward_s": 1e-3, "backward_s": 2e-3, "recompute_s": 0, "total_s": 3e-3, "kept_bytes": 10, "peak_bytes": 20})";
  auto parse = [&](const std::string& c) {
    return [=] { parse_measurements(head + good + "," + c + "]}", "m.json"); };
  };
  EXPECT_EQ(rejection(parse(good)), "(accepted)");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  EXPECT_EQ(rejection(parse(with("\"eagle\"", "\"magic\""))),
            "m.json: cases[1].strategy: must be one of none, standard, eagle, offload, streambp (got \"magic\")");
  EXPECT_EQ(rejection(parse(with("\"s\": 1024", "\"s\": -4"))),
            "m.json: cases[1].dims.s: must be an integer between 0 and 1000000000 (got -4)");
  EXPECT_EQ(rejection(parse(with("\"s\": 1024", "\"s\": 0"))),
            "m.json: cases[1].dims.s: must be an integer between 1 and 1000000000 (got 0)");
  EXPECT_EQ(rejection(parse(with("\"total_s\": 3e-3", "\"total_s\": -1"))),
            "m.json: cases[1].total_s: must be a finite number of seconds >= 0 (got -1)");
  EXPECT_EQ(rejection(parse(with("\"kept_bytes\": 10", "\"kept_bytes\": 1.5"))),
            "m.json: cases[1].kept_bytes: must be an integer (got 1.5)");
  EXPECT_EQ(rejection(parse(with("\"peak_bytes\": 20", "\"peak_bytes\": 5"))),
            "m.json: cases[1].peak_bytes: must not be below kept_bytes (got 5)");
  EXPECT_EQ(rejection(parse(with("\"kept_bytes\": 10", "\"kept_bytes\": 18446744073709551615"))),
            "m.json: cases[1].kept_bytes: must be an integer between 0 and 9223372036854775807 "
            "(got 18446744073709551615)");
  EXPECT_EQ(rejection([] {
              parse_measurements(R"({"schema": "remat.gpu_measurements", "schema_version": "2.0",
      "cases": []})",
                                 "m.json");
            }),
            "m.json: schema_version: must be 1.x (got \"2.0\")");
  EXPECT_EQ(rejection([] { parse_measurements("[1e99999]", "m.json"); }),
            "m.json: (document): malformed JSON: number overflow parsing '1e99999'");
}

// Found by fuzz_hf_config: a number beyond double escaped as json::out_of_range
// (exit code 3, "internal error") instead of a bad-input message.
TEST(RobustFuzzRegressions, HfNumberOverflowIsBadInput) {
  const std::string text = read_text(std::string(REMAT_TEST_DATA) + "/bad_inputs/fuzz_number_overflow.json");
  EXPECT_EQ(rejection([&] { parse_hf_config(text, "c.json"); }),
            "c.json: (document): malformed JSON: number overflow parsing '1E8432'");
}

// Found by fuzz_hf_config: nlohmann's message quotes the whole number, so a
// 300-digit number made a problem line of any length.
TEST(RobustFuzzRegressions, HfLongNumberMessageIsCut) {
  const std::string text = read_text(std::string(REMAT_TEST_DATA) + "/bad_inputs/fuzz_long_number.json");
  const std::string line = rejection([&] { parse_hf_config(text, "c.json"); });
  EXPECT_EQ(line.rfind("c.json: (document): malformed JSON: number overflow parsing '1111", 0), 0u) << line;
  EXPECT_LE(line.size(), 260u);
  EXPECT_EQ(line.substr(line.size() - 3), "...");
}

// Found by fuzz_model_yaml: an empty key gave a problem with an empty key name.
TEST(RobustFuzzRegressions, EmptyYamlKeyIsNamed) {
  EXPECT_EQ(rejection([] { parse_model_yaml(": 64\nname: x\n", "m.yaml"); }),
            "m.yaml: hidden_size: required key is missing");
  try {
    parse_model_yaml(": 64\n", "m.yaml");
  } catch (const InputError& e) {
    EXPECT_EQ(e.problems().back().line(), "m.yaml: (empty key): unknown key");
  }
}

// json::value() threw a type_error on a non-string model_type (exit code 3).
TEST(RobustFuzzRegressions, HfModelTypeNotAString) {
  EXPECT_EQ(rejection([] {
              parse_hf_config(R"({"model_type": [1], "hidden_size": 64, "intermediate_size": 128,
                  "num_attention_heads": 4, "vocab_size": 100, "num_hidden_layers": 2})",
                              "c.json");
            }),
            "c.json: model_type: must be a string (got [1])");
}

TEST(RobustProblems, OneLineControlCharactersEscapedLongValuesCut) {
  const Problem p{"f.yaml", "a\nb", std::string(500, 'x') + "\r", "unknown key"};
  const std::string line = p.line();
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.find('\r'), std::string::npos);
  EXPECT_EQ(line.rfind("f.yaml: a\\nb: unknown key (got xxx", 0), 0u) << line;
  EXPECT_LT(line.size(), 200u);
}

// Every numeric key of the hardware file: NaN, inf, negative and text rejected,
// naming the key.
TEST(RobustKeys, EveryHardwareNumberRejectsNanInfNegativeText) {
  std::string hw;
  for (const auto& b : builtin_specs())
    if (std::string(b.kind) == "hardware" && std::string(b.name) == "h100-sxm") hw = b.text;
  ASSERT_FALSE(hw.empty());
  for (const char* key :
       {"peak_bf16_tflops", "peak_fp16_tflops", "hbm_GiB", "hbm_GBps", "host_link_GBps", "nvlink_GBps", "network_GBps",
        "memory_reserve_GiB", "attention_fwd", "memory_bound", "nvlink_domain_gpus"}) {
    size_t at = hw.find(std::string("\n") + key + ":");
    if (at == std::string::npos) at = hw.find(std::string(" ") + key + ":");  // under efficiency:
    ASSERT_NE(at, std::string::npos) << key;
    const size_t value = hw.find(':', at + 1) + 1, end = hw.find_first_of("#\n", value);
    for (const char* bad : {".nan", ".inf", "-5", "lots", "[1, 2]"}) {
      std::string text = hw;
      text.replace(value, end - value, std::string(" ") + bad + " ");
      const std::string line = rejection([&] { parse_hardware_yaml(text, "h.yaml"); });
      EXPECT_NE(line.find(key), std::string::npos) << key << " = " << bad << ": " << line;
      EXPECT_EQ(line.rfind("h.yaml: ", 0), 0u) << line;
    }
  }
}

// Every integer key of the model file: negative, fractional, NaN, overflow.
TEST(RobustKeys, EveryModelIntegerRejectsBadValues) {
  const std::string base =
      "name: x\nhidden_size: 64\nintermediate_size: 128\nnum_attention_heads: 4\nvocab_size: 100\n"
      "num_hidden_layers: 4\n";
  for (const char* key :
       {"hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size",
        "num_hidden_layers", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
        "first_k_dense_replace", "moe_layer_freq", "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim",
        "qk_nope_head_dim", "v_head_dim", "paper_num_hidden_layers"}) {
    for (const char* bad : {"-3", "2.5", ".nan", "1e3", "99999999999999999999", "9223372036854775807"}) {
      std::string text;
      std::istringstream in(base);
      for (std::string l; std::getline(in, l);)
        if (l.rfind(std::string(key) + ":", 0) != 0) text += l + "\n";
      text += std::string(key) + ": " + bad + "\n";
      const std::string line = rejection([&] { parse_model_yaml(text, "m.yaml"); });
      EXPECT_EQ(line.rfind("m.yaml: ", 0), 0u) << key << " = " << bad << ": " << line;
      EXPECT_NE(line, "(accepted)") << key << " = " << bad;
    }
  }
}

}  // namespace
}  // namespace remat
