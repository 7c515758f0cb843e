// Hostile inputs at the library level: the measurements reader, the inputs
// the fuzzers found, one-line problems, every YAML key's bad values; and the
// hostile inputs of issue 25 that need generated data (deep nesting, long
// lines, huge files, variants of a committed Megatron-LM log, FIFOs, a full
// disk), through the library or the binary.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "remat/io/file_text.hpp"
#include "remat/io/hf_run_log.hpp"
#include "remat/io/measurements.hpp"
#include "remat/io/megatron_log.hpp"
#include "remat/io/spec_loader.hpp"
#include "remat/report/json_text.hpp"
#include "remat/spec/framework.hpp"
#include "remat/spec/text.hpp"
#include "remat/validate/megatron_report.hpp"
#include "shell_run.hpp"
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

// Found by fuzz_hf_config (issue 25's fuzzing): a repeated key under a key
// named "byte ..." was taken for the parser's "byte N" and std::stoull threw
// (exit code 3).
TEST(RobustFuzzRegressions, KeyNamedByteIsNotAnOffset) {
  EXPECT_EQ(rejection([] { parse_hf_config(R"({"model_type": "llama", "byte 1": {"a": 1, "a": 2}})", "c.json"); }),
            "c.json: byte 1.a: duplicate key");
  EXPECT_EQ(rejection([] { parse_hf_config(R"({"model_type": "llama", "byte x": [1,]})", "c.json"); }),
            "c.json: byte 38: malformed JSON");
}

// ---- issue 25: hostile input, round two ----

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// A scratch folder under the build's temp dir, removed at the end.
struct Scratch {
  std::filesystem::path dir;
  explicit Scratch(const std::string& name)
      : dir(std::filesystem::temp_directory_path() / ("remat-hostile-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string path = (dir / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
};

TEST(Hostile2Nesting, DeepJsonIsOneLineNotARecursion) {
  for (size_t depth : {100'000u, 1'000'000u}) {
    const std::string config = R"({"model_type": "llama", "hidden_size": )" + nested(depth) + "}";
    EXPECT_EQ(rejection([&] { parse_hf_config(config, "c.json"); }),
              "c.json: hidden_size[0][0][0][0][0][0][0]...: nests deeper than 64 levels of arrays and objects");
    const std::string measurements = R"({"schema": "remat.gpu_measurements", "cases": )" + nested(depth) + "}";
    EXPECT_EQ(rejection([&] { parse_measurements(measurements, "m.json"); }),
              "m.json: cases[0][0][0][0][0][0][0]...: nests deeper than 64 levels of arrays and objects");
  }
}

TEST(Hostile2Nesting, DeepHfRunLineIsOneLine) {
  EXPECT_EQ(rejection([&] { parse_hf_run(nested(100'000) + "\n", "r.jsonl"); }),
            "r.jsonl: line 1: [0][0][0][0][0][0][0][0]...: nests deeper than 64 levels of arrays and objects");
  EXPECT_EQ(rejection([&] { parse_hf_run(nested(1'000'000) + "\n", "r.jsonl"); }),
            "r.jsonl: line 1: is longer than 1 MiB: not a step record (got 2000000 bytes)");
}

// A record without "oom" or "error" is a step: its "step" must be there and an integer >= 0 (0 is the
// diagnostic record, which holds no measured step).
TEST(Hostile2HfRun, StepKeyIsCheckedNotSkipped) {
  const std::string run = read_text(std::string(REMAT_TEST_DATA) + "/../reports/hf/steps-h100.jsonl");
  const size_t line_start = run.rfind('\n', run.find("\"step\": 3")) + 1;  // a measured step's record
  const std::string first = run.substr(line_start, run.find('\n', line_start) - line_start);
  const size_t at = first.find("\"step\": ");
  ASSERT_NE(at, std::string::npos);
  const size_t end = first.find_first_of(",}", at);
  auto with_step = [&](const std::string& value) {
    return first.substr(0, at) + "\"step\": " + value + first.substr(end) + "\n";
  };
  EXPECT_EQ(rejection([&] { parse_hf_run(with_step("-1"), "r.jsonl"); }),
            "r.jsonl: line 1: step: must be a non-negative integer (got -1)");
  EXPECT_EQ(rejection([&] { parse_hf_run(with_step("1.5"), "r.jsonl"); }),
            "r.jsonl: line 1: step: must be a non-negative integer (got 1.5)");
  EXPECT_EQ(rejection([&] { parse_hf_run(with_step("\"3\""), "r.jsonl"); }),
            "r.jsonl: line 1: step: must be a non-negative integer (got \"3\")");
  EXPECT_EQ(rejection([&] { parse_hf_run(with_step("0"), "r.jsonl"); }),
            "r.jsonl: step: holds no measured step (step >= 1)");
  const auto steps = parse_hf_run(with_step("0") + with_step("2"), "r.jsonl");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].step, 2);
  // a case the harness's deadline left unrun is no step; "skipped" must be true to say so
  const std::string skipped = R"({"case": "c", "config": "c.json", "skipped": true, "reason": "deadline"})";
  EXPECT_EQ(parse_hf_run(with_step("2") + skipped + "\n", "r.jsonl").size(), 1u);
  EXPECT_EQ(rejection([&] { parse_hf_run(skipped + "\n", "r.jsonl"); }),
            "r.jsonl: step: holds no measured step (step >= 1)");
  EXPECT_EQ(rejection([&] {
              parse_hf_run(R"({"case": "c", "config": "c.json", "skipped": false})"
                           "\n",
                           "r.jsonl");
            }),
            "r.jsonl: line 1: step: is missing");
}

TEST(Hostile2Nesting, WritingEscapesBytesThatAreNotUtf8) {
  nlohmann::ordered_json j = {{"name", std::string("a\xff\xfe b")}, {"ok", "\xc3\xa9"}};
  const nlohmann::json back = nlohmann::json::parse(dump_json_text(j));
  EXPECT_EQ(back["name"], "a\\xff\\xfe b");
  EXPECT_EQ(back["ok"], "\xc3\xa9");
}

TEST(Hostile2Text, EscapedForTheTerminalAndQuotedForYaml) {
  EXPECT_EQ(escape_text("a\x1b[0m\xff\xc3\xa9\n\xe2\x82"), "a\\x1b[0m\\xff\xc3\xa9\\n\\xe2\\x82");
  EXPECT_EQ(escape_text("row 1\nrow\t2\n", true), "row 1\nrow\\t2\n");
  EXPECT_TRUE(is_valid_utf8("\xc3\xa9\xf0\x9f\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));  // a UTF-16 surrogate
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));      // overlong '/'
  EXPECT_EQ(yaml_double_quoted("a\"b\\c\n"), "\"a\\\"b\\\\c\\x0a\"");
}

// The committed Megatron-LM log, changed by `edit`, parsed and compared as `remat validate` does.
const std::string kLog =
    std::string(REMAT_TEST_DATA) + "/../reports/megatron/logs/dense-tp1pp2-s4096-mbs1-gbs4-none.log";

std::string megatron_rejection(const std::string& text) {
  return rejection([&] {
    const MegatronLog log = parse_megatron_log(text, "m.log");
    compare_megatron(log, load_hardware(read_spec_source("h200", "hardware")));
  });
}

std::string edited_log(const std::string& pattern, const std::string& replacement, bool all = false) {
  const std::string text = read_text(kLog);
  return std::regex_replace(text, std::regex(pattern), replacement,
                            all ? std::regex_constants::format_default : std::regex_constants::format_first_only);
}

TEST(Hostile2Megatron, TheCommittedLogIsAccepted) { EXPECT_EQ(megatron_rejection(read_text(kLog)), "(accepted)"); }

TEST(Hostile2Megatron, LongLineIsRefusedWithoutRegex) {
  const std::string text =
      read_text(kLog) + "[Rank 0] (after 1 iterations) memory (MB) | allocated: " + std::string(2'000'000, '1') + "\n";
  EXPECT_EQ(megatron_rejection(text),
            "m.log: line 1064: is longer than 1 MiB: not a Megatron-LM log line (got 2000055 bytes)");
}

TEST(Hostile2Megatron, HugeArgumentsAreNamedByTheLog) {
  EXPECT_EQ(megatron_rejection(edited_log(R"((  tensor_model_parallel_size \.+ )1)", "$019223372036854775807")),
            "m.log: tensor_model_parallel_size: must be an integer between 0 and 1000000000 "
            "(got 9223372036854775807)");
  EXPECT_EQ(megatron_rejection(edited_log(R"((  pipeline_model_parallel_size \.+ )2)", "$014611686018427387904")),
            "m.log: pipeline_model_parallel_size: must be an integer between 0 and 1000000000 "
            "(got 4611686018427387904)");
  EXPECT_EQ(megatron_rejection(edited_log(R"((  vocab_size \.+ )\d+)", "$019223372036854775000")),
            "m.log: vocab_size: must be an integer between 0 and 1000000000 (got 9223372036854775000)");
  EXPECT_EQ(megatron_rejection(edited_log(R"((  pipeline_model_parallel_size \.+ )2)", "$013")),
            "m.log: world_size: must be a multiple of tensor_model_parallel_size x pipeline_model_parallel_size = 3 "
            "(got 2)");
  EXPECT_EQ(megatron_rejection(edited_log(R"((  tensor_model_parallel_size \.+ )1)", "$013")),
            "m.log: world_size: must be a multiple of tensor_model_parallel_size x pipeline_model_parallel_size = 6 "
            "(got 2)");
}

TEST(Hostile2Megatron, ZeroMalformedMissingOrConcatenatedAreRefused) {
  const std::string zero_mib =
      megatron_rejection(edited_log(R"(max allocated: [\d.]+ \| reserved: [\d.]+ \| max reserved: [\d.]+)",
                                    "max allocated: 0 | reserved: 0 | max reserved: 0", true));
  EXPECT_EQ(zero_mib.substr(0, zero_mib.find(" (got")),
            "m.log: line 999: reports a peak of 0 MiB (max allocated and max reserved must be positive)");
  const std::string zero_ms = megatron_rejection(
      edited_log(R"(elapsed time per iteration \(ms\): [\d.]+)", "elapsed time per iteration (ms): 0.0", true));
  EXPECT_EQ(zero_ms.substr(0, zero_ms.find(" (got")), "m.log: line 998: reports an iteration time of 0 ms");
  const std::string malformed = megatron_rejection(edited_log(R"(max allocated: (\d+)\.)", "max allocated: $01.1."));
  EXPECT_EQ(malformed.substr(0, malformed.find(" (got")), "m.log: line 999: is a malformed memory report");
  EXPECT_EQ(megatron_rejection(edited_log(R"(\[Rank 1\][^\n]*\n)", "", true)),
            "m.log: memory (MB): no rank of this pipeline stage reports its memory (ranks missing from the log) "
            "(got stage 1)");
  const std::string twice = megatron_rejection(read_text(kLog) + read_text(kLog));
  EXPECT_EQ(twice.substr(0, twice.find(" (got")),
            "m.log: line 1074: starts a second argument block: one run per log (two logs concatenated?)");
  const std::string gb = megatron_rejection(
      edited_log(R"(\[Rank 1\] \(after 1 iterations\) memory \(MB\))", "[Rank 1] (after 1 iterations) memory (GB)"));
  EXPECT_EQ(gb.substr(0, gb.find(" (got")), "m.log: line 1000: reports memory in another unit than MB");
}

TEST(Hostile2Megatron, DeepOrNonUtf8HostLineIsKeptAsEscapedText) {
  const HardwareSpec hw = load_hardware(read_spec_source("h200", "hardware"));
  EXPECT_EQ(rejection([&] { parse_megatron_log("# host: " + nested(1'000'000) + "\n" + read_text(kLog), "m.log"); }),
            "m.log: line 1: is longer than 1 MiB: not a Megatron-LM log line (got 2000008 bytes)");
  for (const std::string host : {nested(400'000), std::string("{\"cpu\": \"\xff\xfe\"}")}) {
    const MegatronLog log = parse_megatron_log("# host: " + host + "\n" + read_text(kLog), "m.log");
    const std::vector<MegatronRun> runs = {{"m.log", compare_megatron(log, hw), log.device, log.host, ""}};
    const nlohmann::json report = nlohmann::json::parse(dump_json_text(megatron_report({}, runs, hw.name)));
    const std::string kept = report["runs"][0]["host"].get<std::string>();
    EXPECT_EQ(kept.substr(0, 13), host[0] == '[' ? "[[[[[[[[[[[[[" : "{\"cpu\": \"\\xff");
  }
}

TEST(Hostile2Files, SizeCapsRefuseBeforeReading) {
  Scratch tmp("size");
  const std::string config = (tmp.dir / "config.json").string(), log = (tmp.dir / "big.log").string();
  std::ofstream(config) << "{}";
  std::filesystem::resize_file(config, 100ull << 20);  // sparse: nothing written
  std::ofstream(log) << "x";
  std::filesystem::resize_file(log, 1ull << 30);
  EXPECT_EQ(rejection([&] { read_spec_source(config, "models"); }),
            config + ": (file): is larger than the 4 MiB remat reads for --model (got 104857600 bytes)");
  EXPECT_EQ(rejection([&] { read_input_file(log, "--megatron-log", kMaxLogFileBytes); }),
            log + ": (file): is larger than the 64 MiB remat reads for --megatron-log (got 1073741824 bytes)");
}

TEST(Hostile2Files, FifoIsNotReportedAsMissing) {
  Scratch tmp("fifo");
  const std::string fifo = (tmp.dir / "model.yaml").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(rejection([&] { read_spec_source(fifo, "models"); }),
            "command line: --model: is not a regular file (a FIFO, device or socket): remat reads its inputs from "
            "files (got " +
                fifo + ")");
}

TEST(Hostile2Cli, StdoutWriteFailureExitsTwo) {
  const auto r = test::run_shell(test::remat_command({"estimate", "--strategy", "full"}) + " 2>&1 >/dev/full");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "error: stdout: (output): cannot be written: No space left on device\n");
}

TEST(Hostile2Cli, ControlCharactersInANameAndNonUtf8InAPathAreEscaped) {
  Scratch tmp("name");
  const std::string model =
      tmp.write("m\xff\xfe.yaml",
                "name: \"red \\e[31m x\"\nhidden_size: 64\nintermediate_size: 128\nnum_attention_heads: 4\n"
                "vocab_size: 1000\nnum_hidden_layers: 4\n");
  const auto table = test::run_shell(test::remat_command({"estimate", "--model", model, "--tp", "1", "--pp", "1"}));
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_EQ(table.out.find('\x1b'), std::string::npos);
  EXPECT_NE(table.out.find("red \\x1b[31m x"), std::string::npos) << table.out;
  const auto json =
      test::run_shell(test::remat_command({"estimate", "--model", model, "--tp", "1", "--pp", "1", "--json", "-"}));
  EXPECT_EQ(json.exit_code, 0);
  const auto report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["meta"]["inputs"][0]["source"], (tmp.dir / "m\\xff\\xfe.yaml").string());
  EXPECT_EQ(report["model"]["name"], "red \x1b[31m x");  // valid UTF-8: JSON escapes it itself
}

TEST(Hostile2Cli, SweepCountsARepeatedValueOnce) {
  const auto once = test::run_shell(test::remat_command({"sweep", "--gpus", "8", "--format", "json"}));
  std::string repeated = "8";
  for (int i = 0; i < 15'000; ++i) repeated += ",8";
  const auto many = test::run_shell(test::remat_command({"sweep", "--gpus", repeated, "--format", "json"}));
  ASSERT_EQ(once.exit_code, many.exit_code);
  EXPECT_EQ(nlohmann::json::parse(once.out)["evaluated"], nlohmann::json::parse(many.out)["evaluated"]);
}

TEST(Hostile2Cli, KvHeadsNullIsReadAsMhaWithANote) {
  Scratch tmp("kv");
  const std::string config = tmp.write(
      "c.json", R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
      "num_key_value_heads": null, "vocab_size": 1000, "num_hidden_layers": 4})");
  const auto r = test::run_shell(test::remat_command({"estimate", "--model", config, "--tp", "1", "--pp", "1"}) +
                                 " 2>&1 >/dev/null");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "note: " + config +
                       ": num_key_value_heads is null: read as num_attention_heads (multi-head attention), as "
                       "transformers does\n");
}

// calibrate --megatron-log rewrote the hardware file only up to `frameworks:`
// (later keys vanished) and quoted the log names unescaped.
TEST(Hostile2Cli, CalibrateKeepsKeysAfterFrameworksAndQuotesNames) {
  Scratch tmp("calibrate");
  const std::string hw_text = read_text(std::string(REMAT_TEST_DATA) + "/../hardware/h200.yaml");
  const size_t at = hw_text.find("\nframeworks:");
  ASSERT_NE(at, std::string::npos);
  // frameworks first, then the rest: the keys after it must survive
  const std::string moved = hw_text.substr(at + 1) + hw_text.substr(0, at + 1);
  const std::string hw = tmp.write("h.yaml", moved);
  const std::string log = tmp.write("a\"b.log", read_text(kLog));
  const std::string out = (tmp.dir / "out.yaml").string();
  const auto r = test::run_shell(
      test::remat_command({"calibrate", "--megatron-log", log, "--hardware", hw, "--out", out}) + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const HardwareSpec fitted = parse_hardware_yaml(read_text(out), "out.yaml");
  EXPECT_EQ(fitted.framework_fits.at(std::string(kMegatronLocalFramework)).calibrated_from, "a\"b.log");
  EXPECT_EQ(fitted.name, parse_hardware_yaml(hw_text, "h200.yaml").name);
  EXPECT_GT(fitted.hbm_bytes, 0);
}

}  // namespace
}  // namespace remat
