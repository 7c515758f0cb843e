// remat sweep: layouts for a GPU count, each planned, ranked by tokens/s.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>

#include "commands.hpp"
#include "options.hpp"
#include "refused.hpp"
#include "remat/report/tables.hpp"
#include "remat/search/sweep.hpp"
#include "remat/spec/pipeline_split.hpp"
#include "remat/spec/problems.hpp"
#include "work_limits.hpp"

namespace remat::cli {

namespace {

// none and the strategies the planner searches.
std::vector<Strategy> sweep_strategies() {
  std::vector<Strategy> out = {Strategy::none};
  for (Strategy s : searched_strategies()) out.push_back(s);
  return out;
}

struct SweepOptions {
  CommonOptions common;
  std::string gpus = "32", tps = "1,2,4,8", pps, eps, mbss = "1,2,4,8";
  std::string strategies = strategy_names(sweep_strategies(), ",");
  bool per_layer = false;
  std::string csv_path;
  int64_t top = 20, split_top = 20;
  int64_t max_layouts = kDefaultMaxLayouts;
  int64_t threads = 0;  // 0: one per core
  double budget_GiB = -1;
  bool budget_given = false;
};

std::vector<Strategy> strategy_list(const std::string& text) {
  const std::vector<Strategy> allowed = sweep_strategies();
  std::vector<Strategy> out;
  for (const auto& item : split_list(text)) {
    Strategy s;
    if (!parse_strategy(item, s) || std::find(allowed.begin(), allowed.end(), s) == allowed.end())
      throw InputError(
          {{"command line", "--strategies", text, "takes a comma-separated list of " + strategy_names(allowed)}});
    out.push_back(s);
  }
  return out;
}

// Each value once, in the order first given.
template <typename T>
std::vector<T> unique_in_order(const std::vector<T>& values) {
  std::vector<T> out;
  for (const T& v : values)
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  return out;
}

// More layouts than --max-layouts: refused before any is planned.
void check_layout_count(const ModelSpec& m, const SweepSpace& space, int64_t max_layouts) {
  if (max_layouts < 1)
    throw InputError({{"command line", "--max-layouts", std::to_string(max_layouts), "must be at least 1"}});
  const int64_t n = count_layouts(m, space, max_layouts);
  if (n > max_layouts)
    throw InputError({{"command line", "--max-layouts", std::to_string(max_layouts),
                       "the swept lists (--gpus, --tps, --pps, --eps, --mbss, --strategies) make more layouts than "
                       "this; narrow them or raise --max-layouts"}});
}

// The layout flags every subcommand shares: sweep takes its lists instead.
void refuse_layout_flags(const CLI::App& sub, const CommonOptions& o) {
  const std::pair<const char*, const char*> flags[] = {
      {"--tp", "--tps"}, {"--pp", "--pps"}, {"--ep", "--eps"}, {"--mbs", "--mbss"}, {"--dp", "--gpus"}};
  const int64_t values[] = {o.tp, o.pp, o.ep, o.mbs, o.dp};
  for (size_t i = 0; i < std::size(flags); ++i)
    if (sub.count(flags[i].first) > 0)
      throw InputError({{"command line", flags[i].first, std::to_string(values[i]),
                         std::string("sweep takes the sizes to try from ") + flags[i].second + " instead"}});
}

// One ordered list of columns feeds the CSV, the JSON rows and the table.
struct Column {
  const char* name;
  std::function<std::string(const SweepRow&)> text;
};

std::vector<Column> columns() {
  const auto r_text = [](const SweepRow& r) {
    std::string s;
    for (size_t i = 0; i < r.best.r.size(); ++i) s += (i ? ";" : "") + std::to_string(r.best.r[i]);
    return r.best.mode == SearchMode::per_layer ? std::string("per-layer") : s;
  };
  return {
      {"tp", [](const SweepRow& r) { return std::to_string(r.layout.tp); }},
      {"pp", [](const SweepRow& r) { return std::to_string(r.layout.pp); }},
      {"dp", [](const SweepRow& r) { return std::to_string(r.layout.dp); }},
      {"ep", [](const SweepRow& r) { return std::to_string(r.layout.ep); }},
      {"mbs", [](const SweepRow& r) { return std::to_string(r.layout.mbs); }},
      {"strategy", [](const SweepRow& r) { return std::string(to_string(r.strategy)); }},
      {"R", r_text},
      {"split",
       [](const SweepRow& r) {
         if (!r.split_searched) return std::string("default");
         return split_text(r.layout.layers_per_stage);
       }},
      {"peak_GiB", [](const SweepRow& r) { return fmt::format("{:.2f}", r.best.peak_bytes / (1024.0 * 1024 * 1024)); }},
      {"iteration_s", [](const SweepRow& r) { return fmt::format("{:.4f}", r.best.time_s); }},
      {"mfu_percent", [](const SweepRow& r) { return fmt::format("{:.1f}", 100 * r.mfu); }},
      {"tokens_per_s", [](const SweepRow& r) { return fmt::format("{:.0f}", r.tokens_per_s); }}};
}

void write_csv(const std::string& path, const SweepResult& res) {
  std::string out;
  const auto cols = columns();
  for (size_t i = 0; i < cols.size(); ++i) out += (i ? "," : "") + std::string(cols[i].name);
  out += "\n";
  for (const auto& row : res.rows) {
    for (size_t i = 0; i < cols.size(); ++i) out += (i ? "," : "") + cols[i].text(row);
    out += "\n";
  }
  write_text_file(path, "--csv", out);
}

}  // namespace

Runner add_sweep_command(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* sub = app.add_subcommand("sweep", "many layouts for a GPU count, each planned, ranked by tokens/s");
  add_common_options(*sub, o->common);
  sub->add_option("--gpus", o->gpus, "GPU counts, comma-separated")->capture_default_str();
  sub->add_option("--tps", o->tps, "tensor-parallel sizes to try")->capture_default_str();
  sub->add_option("--pps", o->pps, "pipeline sizes to try (default: every divisor up to the layer count)");
  sub->add_option("--eps", o->eps, "expert-parallel sizes to try (default: every divisor of the expert count)");
  sub->add_option("--mbss", o->mbss, "microbatch sizes to try")->capture_default_str();
  sub->add_option("--strategies", o->strategies, "strategies to try")->capture_default_str();
  sub->add_flag("--per-layer", o->per_layer, "also search per-layer choices (slower)");
  sub->add_option("--csv", o->csv_path, "write every feasible row as CSV");
  sub->add_option("--top", o->top, "rows in the table")->capture_default_str();
  sub->add_option("--split-top", o->split_top,
                  "plan the layouts that could rank among this many first rows on their best pipeline split too "
                  "(each stage its own layer count and R); 0: Megatron's default split only")
      ->capture_default_str();
  sub->add_option("--max-layouts", o->max_layouts, "refuse a sweep of more layouts than this")->capture_default_str();
  sub->add_option("--threads", o->threads,
                  "worker threads (0: one per core); the rows and their order do not depend on it")
      ->capture_default_str();
  sub->add_option("--memory-budget-GiB", o->budget_GiB, "per-GPU budget; default capacity less reserve")
      ->each([o](const std::string&) { o->budget_given = true; });
  return [o, sub]() {
    refuse_layout_flags(*sub, o->common);
    if (!o->common.layers_per_stage.empty())
      throw InputError({{"command line", "--layers-per-stage", o->common.layers_per_stage,
                         "sweep chooses the split of each pipeline size it tries (--split-top)"}});
    if (o->top < 0) throw InputError({{"command line", "--top", std::to_string(o->top), "must not be negative"}});
    if (o->split_top < 0 || o->split_top > 1000000)
      throw InputError({{"command line", "--split-top", std::to_string(o->split_top), "must be 0 to 10^6"}});
    const int64_t threads = worker_threads(o->threads);
    refuse_streambp_chunks(o->common, no_streambp("sweep"));
    CommonOptions common = o->common;
    if (common.gbs == 0) common.gbs = 512;  // one global batch for every layout, so tokens/s compare
    const std::vector<int64_t> gpus = unique_in_order(parse_int_list("--gpus", o->gpus));
    common.tp = common.pp = 1;  // the layout flags are swept; only the model and options are checked here
    common.dp = common.ep = 1;
    common.mbs = 1;
    Inputs in = load_inputs(common, "sweep");
    check_sweep_layers(common, in, o->per_layer);
    in.training.gbs = common.gbs;
    SweepSpace space;
    space.gpus = gpus;
    space.tp = unique_in_order(parse_int_list("--tps", o->tps));
    if (!o->pps.empty()) space.pp = unique_in_order(parse_int_list("--pps", o->pps));
    if (!o->eps.empty()) space.ep = unique_in_order(parse_int_list("--eps", o->eps));
    space.mbs = unique_in_order(parse_int_list("--mbss", o->mbss));
    space.strategies =
        unique_in_order(profile_strategies(in.training, strategy_list(o->strategies),
                                           o->strategies != strategy_names(sweep_strategies(), ","), "--strategies"));
    // per-layer block modes only where the profile runs them, as plan (hf: every layer or none)
    if (o->per_layer && !profile_runs_block_choices(in.training))
      throw InputError({{"command line", "--per-layer", "--framework " + in.training.framework,
                         "applies only to profiles with per-layer choices; this one checkpoints every layer or none"}});
    space.per_layer = o->per_layer;
    space.split_top = o->split_top;
    space.threads = threads;
    for (const auto& [flag, list] : {std::pair{"--gpus", gpus},
                                     {"--tps", space.tp},
                                     {"--pps", space.pp},
                                     {"--eps", space.ep},
                                     {"--mbss", space.mbs}})
      for (int64_t v : list)
        if (v < 1 || v > 1000000)
          throw InputError({{"command line", flag, std::to_string(v), "values must be 1..10^6"}});
    check_layout_count(in.model, space, o->max_layouts);
    print_notes(in);
    const auto start = std::chrono::steady_clock::now();
    const auto progress = [&](int64_t done, int64_t total) {
      if (std::chrono::steady_clock::now() - start > std::chrono::seconds(1))
        std::cerr << fmt::format("\rsweep: {}/{} layouts", done, total) << (done == total ? "\n" : "") << std::flush;
    };
    const double budget = memory_budget_bytes(o->budget_given, o->budget_GiB, in.hardware);
    const SweepResult res = sweep(in.model, in.hardware, in.training, space, budget, progress);
    const auto cols = columns();
    std::vector<std::string> headers;
    for (const auto& c : cols) headers.push_back(c.name);
    std::vector<std::vector<std::string>> table_rows;
    Json rows = Json::array();
    for (size_t i = 0; i < res.rows.size(); ++i) {
      Json j = Json::object();
      std::vector<std::string> line;
      for (const auto& c : cols) j[c.name] = c.text(res.rows[i]), line.push_back(c.text(res.rows[i]));
      rows.push_back(j);
      if (int64_t(i) < o->top) table_rows.push_back(line);
    }
    Json reasons = Json::object();
    std::string reason_text;
    for (const auto& [why, n] : res.infeasible_by_reason) {
      reasons[why] = n;
      reason_text += fmt::format("  {:>6}  {}\n", n, why);
    }
    const Json report = {{"meta", meta_json(in.meta)},
                         {"model", model_json(in.model)},
                         {"hardware", hardware_json(in.hardware)},
                         {"gbs", in.training.gbs},
                         {"seq", in.training.seq},
                         {"evaluated", res.evaluated},
                         {"feasible", res.rows.size()},
                         {"infeasible_by_reason", reasons},
                         {"gpus_without_layout", res.gpus_without_layout},
                         {"rows", rows}};
    std::string table = fmt::format("{} on {}: {} layouts, {} feasible, gbs {} seq {}\n", in.model.name,
                                    in.hardware.name, res.evaluated, res.rows.size(), in.training.gbs, in.training.seq);
    table += render_table(headers, table_rows) + "infeasible:\n" + reason_text;
    for (int64_t g : res.gpus_without_layout)
      table += fmt::format("  --gpus {}: no layout of the swept tp, pp and ep sizes\n", g);
    if (!o->csv_path.empty()) write_csv(o->csv_path, res);
    emit(common, table, report);
    return res.rows.empty() ? kExitNoFit : kExitOk;
  };
}

}  // namespace remat::cli
