// remat plan: the fastest plan under the memory budget, the frontier, the
// Megatron-LM flags that run it.
#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <iostream>
#include <memory>
#include <utility>

#include "commands.hpp"
#include "options.hpp"
#include "refused.hpp"
#include "remat/cost/estimate.hpp"
#include "remat/cost/streambp.hpp"
#include "remat/report/hf_snippet.hpp"
#include "remat/report/plan_report.hpp"
#include "remat/report/tables.hpp"
#include "remat/search/megatron_flags.hpp"
#include "remat/spec/framework.hpp"
#include "remat/spec/problems.hpp"
#include "remat/spec/validate.hpp"
#include "work_limits.hpp"

namespace remat::cli {

namespace {

struct PlanOptions {
  CommonOptions common;
  double budget_GiB = -1;
  bool budget_given = false;
  std::string strategies = strategy_names(searched_strategies(), ",");
  bool no_uniform_r = false, no_per_stage_r = false, no_per_layer = false, no_offload = false;
  std::string maximize;                       // "", "seq" or "mbs"
  std::string layer_partitions = "500,2000";  // StreamBP tokens per layer chunk to try
  int64_t head_partition = 100;               // StreamBP tokens per LM-head chunk
  bool emit_megatron_args = false;            // print only "<gpus> <flags>" of the Megatron-runnable plan
  int64_t threads = 0;                        // 0: one per core
};

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int64_t kMaxSeq = int64_t(1) << 22, kMaxMbs = int64_t(1) << 14;

struct MaxRow {
  Strategy strategy = Strategy::none;
  int64_t value = 0, layer_partition = 0, d = 1, c = 1;
  Estimate est;
};

// The spec at `value` of the maximized quantity, with StreamBP's chunks from the partition sizes.
TrainingSpec at_value(TrainingSpec t, bool seq, int64_t value, int64_t layer_tokens, int64_t head_tokens) {
  (seq ? t.seq : t.mbs) = value;
  if (!seq) t.gbs = 0;  // 4 pp microbatches per dp rank at this mbs; a longer sequence keeps --gbs
  t.streambp_chunks = layer_tokens > 0 ? chunks_for(t.seq, layer_tokens) : 1;
  t.lm_head_chunks = layer_tokens > 0 ? chunks_for(t.seq, head_tokens) : 1;
  return with_defaults(t);
}

MaxRow maximize_one(const Inputs& in, const PlanOptions& o, Strategy s, int64_t layer_tokens, double budget) {
  const bool seq = o.maximize == "seq";
  Plan plan;
  plan.strategy = s;
  const auto fits = [&](int64_t v) {
    const TrainingSpec t = at_value(in.training, seq, v, layer_tokens, o.head_partition);
    return estimate(in.model, in.hardware, t, plan, budget).fits;
  };
  MaxRow row;
  row.strategy = s, row.layer_partition = layer_tokens;
  // a model with a position table (GPT-2's, GPT-J's, MPT's) takes no sequence beyond it
  const int64_t table = in.model.max_sequence_tokens;
  row.value = largest_fitting(seq ? (table > 0 ? std::min(kMaxSeq, table) : kMaxSeq) : kMaxMbs, fits);
  const TrainingSpec t = at_value(in.training, seq, std::max<int64_t>(row.value, 1), layer_tokens, o.head_partition);
  row.d = t.streambp_chunks, row.c = t.lm_head_chunks;
  row.est = estimate(in.model, in.hardware, t, plan, budget);
  return row;
}

Json max_row_json(const MaxRow& r) {
  return {{"strategy", to_string(r.strategy)},
          {"value", r.value},
          {"streambp_chunks", r.d},
          {"lm_head_chunks", r.c},
          {"layer_partition_tokens", r.layer_partition},
          {"peak_memory_bytes", r.est.peak_memory_bytes},
          {"iteration_time_s", r.est.iteration.time_s},
          {"tokens_per_s", r.est.iteration.tokens_per_s}};
}

// --maximize: the longest sequence (or largest microbatch) each of none, full and streambp fits.
int run_maximize(const Inputs& in, const PlanOptions& o) {
  if (o.maximize != "seq" && o.maximize != "mbs")
    throw InputError({{"command line", "--maximize", o.maximize, "must be seq or mbs"}});
  if (o.head_partition < 1)
    throw InputError(
        {{"command line", "--lm-head-partition-tokens", std::to_string(o.head_partition), "must be at least 1"}});
  const double budget = memory_budget_bytes(o.budget_given, o.budget_GiB, in.hardware);
  print_notes(in);
  if (o.maximize == "seq" && in.model.max_sequence_tokens > 0)
    std::cerr << "note: --maximize seq: at most the model's " << in.model.max_sequence_key << " = "
              << in.model.max_sequence_tokens << ", the rows of its position table\n";
  // only what the framework profile runs (hf: no StreamBP)
  const std::vector<Strategy> runs =
      profile_strategies(in.training, {Strategy::none, Strategy::full, Strategy::streambp}, false, "--maximize");
  std::vector<MaxRow> rows;
  for (Strategy s : runs) {
    if (s != Strategy::streambp) {
      rows.push_back(maximize_one(in, o, s, 0, budget));
      continue;
    }
    MaxRow best;
    for (int64_t p : parse_int_list("--streambp-partition-tokens", o.layer_partitions)) {
      if (p < 1)
        throw InputError({{"command line", "--streambp-partition-tokens", o.layer_partitions, "values must be >= 1"}});
      MaxRow r = maximize_one(in, o, Strategy::streambp, p, budget);
      if (best.layer_partition == 0 || r.value > best.value) best = std::move(r);
    }
    rows.push_back(std::move(best));
  }
  Json list = Json::array();
  std::vector<std::vector<std::string>> table_rows;
  for (const MaxRow& r : rows) {
    list.push_back(max_row_json(r));
    table_rows.push_back({to_string(r.strategy), std::to_string(r.value),
                          r.strategy == Strategy::streambp ? fmt::format("{} / {}", r.d, r.c) : "-",
                          fmt::format("{:.1f}", r.est.peak_memory_bytes / kGiB),
                          fmt::format("{:.3f}", r.est.iteration.time_s)});
  }
  const auto value_of = [&rows](Strategy s) {
    for (const MaxRow& r : rows)
      if (r.strategy == s) return r.value;
    return int64_t(0);
  };
  const bool streambp =
      std::any_of(rows.begin(), rows.end(), [](const MaxRow& r) { return r.strategy == Strategy::streambp; });
  const int64_t full_value = value_of(Strategy::full);
  const double ratio = streambp && full_value > 0 ? double(value_of(Strategy::streambp)) / double(full_value) : 0;
  Json report = {{"meta", meta_json(in.meta)},
                 {"model", model_json(in.model)},
                 {"hardware", hardware_json(in.hardware)},
                 {"training", training_json(in.training)},
                 {"maximize", o.maximize},
                 {"budget_bytes", budget},
                 {"results", list}};
  if (streambp) report["streambp_over_full"] = ratio;
  std::string table = fmt::format("{} on {}: largest {} under {:.1f} GiB (tp {} pp {} dp {} zero {})\n", in.model.name,
                                  in.hardware.name, o.maximize, budget / kGiB, in.training.tp, in.training.pp,
                                  in.training.dp, in.training.zero_stage);
  table += render_table({"strategy", o.maximize, "D / C", "peak GiB", "iter s"}, table_rows);
  if (streambp)
    table += fmt::format("streambp / full: {:.2f}x\n", ratio);
  else
    table += fmt::format("streambp: not run by the {} profile\n", in.training.framework);
  int64_t longest = 0;
  for (const MaxRow& r : rows) longest = std::max(longest, r.value);
  emit(o.common, table, report);
  return longest > 0 ? kExitOk : kExitNoFit;
}

std::vector<Strategy> parse_strategies(const std::string& text) {
  std::vector<Strategy> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    Strategy s;
    const std::string item = text.substr(start, comma - start);
    if (!parse_strategy(item, s) || !kStrategies[size_t(s)].searched)
      throw InputError({{"command line", "--strategies", text,
                         "takes a comma-separated list of " + strategy_names(searched_strategies())}});
    out.push_back(s);
    start = comma + 1;
  }
  return out;
}

// "<gpus> <flags>" for examples/megatron/check_flags.py.
int emit_megatron_line(const Inputs& in, const RunnablePlan& rp, bool te) {
  if (!rp.best) {
    fmt::print(stderr, "{}\n", rp.reason);
    return kExitNoFit;
  }
  const MegatronArgs a = megatron_args(in.model, rp.training, rp.split, rp.best->setting, te);
  write_stdout(fmt::format("{} {}\n", rp.training.gpus(), one_line(a.all())));
  return kExitOk;
}

}  // namespace

SearchOptions search_options(const PlanOptions& o, const HardwareSpec& hw, const TrainingSpec& t) {
  SearchOptions s;
  const bool typed = o.strategies != PlanOptions{}.strategies;
  s.strategies = profile_strategies(t, parse_strategies(o.strategies), typed, "--strategies");
  s.uniform_r = !o.no_uniform_r;
  s.per_stage_r = !o.no_per_stage_r;
  // per-layer block modes and offloading only where the profile runs them (hf: whole layers only)
  s.per_layer = !o.no_per_layer && profile_runs_block_choices(t);
  s.offload = !o.no_offload && !profile_strategies(t, {Strategy::offload}, false, "").empty();
  // Chen's checkpoint-interval rows only where the stack runs whole-layer recompute (not a model whose
  // transformers class has no gradient checkpointing, under hf)
  s.intervals = !profile_strategies(t, {Strategy::full}, false, "").empty();
  s.budget_bytes = memory_budget_bytes(o.budget_given, o.budget_GiB, hw);
  s.threads = worker_threads(o.threads);
  return s;
}

// plan's modes read different flags: --maximize and --emit-megatron-args search no R or per-layer
// plans, and only --maximize reads StreamBP's partition sizes. A flag the mode does not read is
// refused.
void refuse_unread_flags(const CLI::App& sub, const PlanOptions& o) {
  const auto refuse_given = [&](std::initializer_list<const char*> flags, const std::string& why) {
    for (const char* flag : flags)
      if (sub.count(flag) > 0) throw InputError({{"command line", flag, "", why}});
  };
  if (!o.maximize.empty() && o.emit_megatron_args)
    refuse_given({"--emit-megatron-args"}, "plan --maximize prints the longest fits, not Megatron-LM flags");
  const char* mode = !o.maximize.empty() ? "--maximize" : o.emit_megatron_args ? "--emit-megatron-args" : nullptr;
  if (mode)
    refuse_given({"--strategies", "--no-uniform-r", "--no-per-stage-r", "--no-per-layer", "--no-offload", "--threads"},
                 std::string("plan ") + mode + " does not run the R and per-layer search this flag sets");
  if (o.maximize.empty())
    refuse_given({"--streambp-partition-tokens", "--lm-head-partition-tokens"}, "read only with plan --maximize");
}

Runner add_plan_command(CLI::App& app) {
  auto opts = std::make_shared<PlanOptions>();
  CLI::App* sub = app.add_subcommand("plan", "the fastest plan under the memory budget, the frontier, Megatron flags");
  add_common_options(*sub, opts->common);
  sub->add_option("--memory-budget-GiB", opts->budget_GiB, "per-GPU budget; default capacity less reserve")
      ->each([opts](const std::string&) { opts->budget_given = true; });
  sub->add_option("--strategies", opts->strategies, "recompute strategies to consider")->capture_default_str();
  sub->add_flag("--no-uniform-r", opts->no_uniform_r, "skip one R for all stages (Megatron's)");
  sub->add_flag("--no-per-stage-r", opts->no_per_stage_r, "skip one R per stage");
  sub->add_flag("--no-per-layer", opts->no_per_layer, "skip per-layer, per-block choices");
  sub->add_flag("--no-offload", opts->no_offload, "never offload activations to host memory");
  sub->add_option("--maximize", opts->maximize, "seq or mbs: the largest that fits, for none, full and streambp");
  sub->add_option("--streambp-partition-tokens", opts->layer_partitions,
                  "with --maximize: StreamBP layer chunk sizes (tokens) to try")
      ->capture_default_str();
  sub->add_option("--lm-head-partition-tokens", opts->head_partition, "with --maximize: StreamBP LM-head chunk size")
      ->capture_default_str();
  sub->add_option("--threads", opts->threads,
                  "per-layer search: stages and splits searched at once (0: one per core); the plan does not "
                  "depend on it")
      ->capture_default_str();
  sub->add_flag("--emit-megatron-args", opts->emit_megatron_args,
                "print only '<gpus> <flags>' of the best plan Megatron-LM runs as-is (exit 1 when none fits)");
  return [opts, sub]() {
    refuse_unread_flags(*sub, *opts);
    refuse_streambp_chunks(opts->common, opts->maximize.empty()
                                             ? no_streambp("plan")
                                             : "plan --maximize sets StreamBP's chunks from "
                                               "--streambp-partition-tokens and --lm-head-partition-tokens");
    const Inputs in = load_inputs(opts->common, "plan");
    check_search_layers(opts->common, in, "plan");
    if (!opts->maximize.empty()) return run_maximize(in, *opts);
    const SearchOptions so = search_options(*opts, in.hardware, in.training);
    if (!so.uniform_r && !so.per_stage_r && !so.per_layer)
      throw InputError(
          {{"command line", "--no-uniform-r --no-per-stage-r --no-per-layer", "", "leave nothing to search"}});
    print_notes(in);
    // under hf the plan is printed as transformers code; Megatron-LM's flags are not its framework's
    const bool hf = in.training.framework == kHfFramework;
    if (hf && opts->emit_megatron_args)
      throw InputError({{"command line", "--emit-megatron-args", "",
                         "--framework hf plans a transformers + PEFT step: plan prints its Python lines instead"}});
    // generic costs are those of fused kernels and flash attention: Megatron with Transformer Engine
    const bool te = in.training.framework != kMegatronLocalFramework;
    const RunnablePlan runnable =
        hf ? RunnablePlan{} : runnable_megatron_plan(in.model, in.hardware, in.training, {so.budget_bytes, te});
    if (opts->emit_megatron_args) return emit_megatron_line(in, runnable, te);
    // the split is a plan choice: the exact search also runs on the split the Megatron-runnable
    // search chose (beside the default split's, with more than one thread), and keeps whichever
    // finds the faster plan
    std::future<std::pair<SearchSpace, PlanSearchResult>> other;
    if (in.training.layers_per_stage.empty() && !runnable.training.layers_per_stage.empty() &&
        runnable.training.layers_per_stage != megatron_split(in.model, in.training).layers_per_stage) {
      TrainingSpec on_split = in.training;
      on_split.layers_per_stage = runnable.training.layers_per_stage;
      other = std::async(so.threads > 1 ? std::launch::async : std::launch::deferred, [&in, &so, on_split] {
        SearchSpace sp = build_search_space(in.model, in.hardware, on_split, so);
        PlanSearchResult r = plan_search(sp, so);
        return std::pair{std::move(sp), std::move(r)};
      });
    }
    SearchSpace space = build_search_space(in.model, in.hardware, in.training, so);
    PlanSearchResult res = plan_search(space, so);
    if (other.valid()) {
      auto [other_space, other_res] = other.get();
      if (other_res.best && (!res.best || other_res.best->time_s < res.best->time_s))
        space = std::move(other_space), res = std::move(other_res);
    }
    // the best plan, or when nothing fits the smallest footprint searched
    std::optional<Estimate> est;
    if (const auto plan = reported_plan(res, space))
      est = estimate(in.model, in.hardware, space.training, *plan, so.budget_bytes);
    const Estimate* e = est ? &*est : nullptr;
    std::string table = plan_search_table(space, so, res, e, hf ? nullptr : &runnable, te);
    Json report = plan_search_report(in.meta, space, so, res, e, hf ? nullptr : &runnable, te);
    if (hf && e && res.best) {
      const std::vector<std::string> lines = transformers_snippet(in.model, space.training, *e);
      table += "\ntransformers + PEFT, the best plan in a training script (PATH: the model's folder or name):\n";
      for (const std::string& line : lines) table += "  " + line + "\n";
      report["transformers"] = lines;
    }
    emit(opts->common, table, report);
    return res.best ? kExitOk : kExitNoFit;
  };
}

}  // namespace remat::cli
