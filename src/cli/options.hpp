#pragma once
// Flags every subcommand shares, and turning them into specs.
#include <CLI/CLI.hpp>
#include <set>
#include <string>
#include <vector>

#include "remat/io/spec_loader.hpp"
#include "remat/report/json_report.hpp"
#include "remat/spec/pipeline_split.hpp"
#include "remat/spec/plan.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat::cli {

// Exit codes (DESIGN.md "CLI contract").
constexpr int kExitOk = 0, kExitNoFit = 1, kExitBadInput = 2, kExitInternal = 3;

struct CommonOptions {
  std::string model = "llama3-70b";
  std::string hardware = "a100-80gb-pcie";
  int64_t tp = 8, pp = 4, dp = 1, ep = 1, mbs = 4, gbs = 0, seq = 4096;
  int64_t prompt_tokens = 0;
  std::set<std::string> layout_given;  // which of --tp --pp --dp --ep --mbs --gbs --seq were typed
  int64_t num_layers = 0;
  std::string layers_per_stage;
  MegatronSplitText megatron_split;  // --decoder-first/last-pipeline-num-layers, --pipeline-model-parallel-layout
  bool no_sequence_parallel = false;
  std::string precision = "mixed", optimizer = "adam";
  int64_t zero_stage = 1;
  bool zero_stage_given = false;  // set after parsing: --framework megatron-local defaults to 0
  std::string framework = "generic";
  bool swiglu_unfused = false, gqa_expand_kv = false, no_fp32_logits = false, no_flash = false;
  std::string replay = "full";
  int64_t streambp_chunks = 1, lm_head_chunks = 1;  // StreamBP partitions D and C
  std::string objective = "sft";
  int64_t grpo_group = 8, lora_rank = 0;
  std::string lora_targets = "qkv,o,mlp";
  double lora_dropout = 0;
  std::string attention;      // sdpa | eager; empty: --no-flash decides
  std::string mixer_kernels;  // fused | torch; empty: the framework profile's
  std::string json_path;
  std::string format = "table";
  std::set<std::string> given;  // set after parsing: the flags below that were on the command line
};

void add_common_options(CLI::App& app, CommonOptions& o);

// Everything a subcommand needs, loaded and validated.
struct Inputs {
  ModelSpec model;
  HardwareSpec hardware;
  TrainingSpec training;
  ReportMeta meta;
  std::vector<std::string> notes;  // the framework's gaps on this GPU (framework_time_gaps), for print_notes
};

// Throws InputError on any bad value.
Inputs load_inputs(const CommonOptions& o, const std::string& command);

// The inputs' notes on stderr, one line each. A command calls it once its own options passed their
// checks, so that a refused option prints its one-line error alone.
void print_notes(const Inputs& in);

// "a,b,c" -> {"a","b","c"}
std::vector<std::string> split_list(const std::string& text);

// "9,9,8,4" -> {9,9,8,4}; throws InputError naming the flag.
std::vector<int64_t> parse_int_list(const std::string& flag, const std::string& text);

// The plan estimate and simulate run: --strategy, --recompute-layers, --offload-layers.
struct StrategyOptions {
  std::string strategy = "none";
  std::string recompute_layers, offload_layers;
};
void add_strategy_options(CLI::App& sub, StrategyOptions& o);
// Throws InputError naming the flag (unknown strategy, malformed list).
Plan plan_from(const StrategyOptions& o);
// The strategies of `wanted` that t's framework profile runs; with `typed` (the user named
// them) one it does not run is refused naming `flag`.
std::vector<Strategy> profile_strategies(const TrainingSpec& t, const std::vector<Strategy>& wanted, bool typed,
                                         const char* flag);
// Whether t's profile runs per-block recompute (standard or eagle), which the per-layer search
// chooses from (hf: every layer or none).
bool profile_runs_block_choices(const TrainingSpec& t);

// The per-GPU memory budget: --memory-budget-GiB when given (finite, >= 0),
// else the GPU's capacity less the hardware file's reserve.
double memory_budget_bytes(bool given, double gib, const HardwareSpec& hw);

// --threads as given (0: one per core); throws InputError outside 0 to 1024.
int64_t worker_threads(int64_t requested);

// Prints the table or JSON to stdout and writes --json FILE; throws InputError
// when the file cannot be written.
void emit(const CommonOptions& o, const std::string& table, const Json& report);

// Writes to stdout and flushes; throws InputError when the write fails (a
// full disk, a closed pipe with SIGPIPE ignored).
void write_stdout(const std::string& text);
// Writes FILE whole; throws InputError naming the flag when it cannot be
// opened or written (checked after the close: a full disk shows at the flush).
void write_text_file(const std::string& path, const std::string& flag, const std::string& text);
// A table for the terminal: control characters and bytes that are not UTF-8
// from names in the inputs escaped, newlines kept.
std::string terminal_text(const std::string& table);

}  // namespace remat::cli
