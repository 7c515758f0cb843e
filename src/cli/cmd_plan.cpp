// remat plan: the fastest plan under the memory budget, the frontier, the
// Megatron-LM flags that run it.
#include <memory>

#include "commands.hpp"
#include "options.hpp"
#include "remat/report/plan_report.hpp"
#include "remat/spec/problems.hpp"
#include "remat/spec/validate.hpp"

namespace remat::cli {

namespace {

struct PlanOptions {
  CommonOptions common;
  double budget_GiB = -1;
  bool budget_given = false;
  std::string strategies = "full,selective,standard,eagle";
  bool no_uniform_r = false, no_per_stage_r = false, no_per_layer = false, no_offload = false;
};

std::vector<Strategy> parse_strategies(const std::string& text) {
  std::vector<Strategy> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    Strategy s;
    const std::string item = text.substr(start, comma - start);
    if (!parse_strategy(item, s) || s == Strategy::none || s == Strategy::offload || s == Strategy::streambp)
      throw InputError(
          {{"command line", "--strategies", text, "takes a comma-separated list of full, selective, standard, eagle"}});
    out.push_back(s);
    start = comma + 1;
  }
  return out;
}

}  // namespace

SearchOptions search_options(const PlanOptions& o, const HardwareSpec& hw) {
  SearchOptions s;
  s.strategies = parse_strategies(o.strategies);
  s.uniform_r = !o.no_uniform_r;
  s.per_stage_r = !o.no_per_stage_r;
  s.per_layer = !o.no_per_layer;
  s.offload = !o.no_offload;
  s.budget_bytes = memory_budget_bytes(o.budget_given, o.budget_GiB, hw);
  return s;
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
  return [opts]() {
    const Inputs in = load_inputs(opts->common, "plan");
    const SearchOptions so = search_options(*opts, in.hardware);
    const SearchSpace space = build_search_space(in.model, in.hardware, in.training, so);
    const PlanSearchResult res = plan_search(space, so);
    std::optional<Estimate> est;
    if (res.best) est = estimate(in.model, in.hardware, in.training, res.best_plan, so.budget_bytes);
    const Estimate* e = est ? &*est : nullptr;
    emit(opts->common, plan_search_table(space, so, res, e), plan_search_report(in.meta, space, so, res, e));
    return res.best ? kExitOk : kExitNoFit;
  };
}

}  // namespace remat::cli
