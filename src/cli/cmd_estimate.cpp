// remat estimate: one plan, per-stage memory and time, fits or not.
#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "commands.hpp"
#include "options.hpp"
#include "remat/cost/estimate.hpp"
#include "remat/report/tables.hpp"
#include "remat/search/layer_plan_text.hpp"
#include "remat/spec/validate.hpp"

namespace remat::cli {

namespace {

struct EstimateOptions {
  CommonOptions common;
  std::string strategy = "none";
  std::string recompute_layers;
  std::string offload_layers;
  std::string layer_plan;
  double budget_GiB = -1;  // < 0: the GPU's capacity less its reserve
  bool budget_given = false;
};

Plan plan_from(const EstimateOptions& o) {
  Plan p;
  if (!parse_strategy(o.strategy, p.strategy))
    throw InputError(
        {{"command line", "--strategy", o.strategy, "must be one of none, full, selective, standard, eagle, offload"}});
  if (!o.recompute_layers.empty()) p.recompute_layers = parse_int_list("--recompute-layers", o.recompute_layers);
  if (!o.offload_layers.empty()) p.offload_layers = parse_int_list("--offload-layers", o.offload_layers);
  return p;
}

}  // namespace

Runner add_estimate_command(CLI::App& app) {
  auto opts = std::make_shared<EstimateOptions>();
  CLI::App* sub = app.add_subcommand("estimate", "one plan: per-stage memory breakdown, time, MFU, fits or not");
  add_common_options(*sub, opts->common);
  sub->add_option("--strategy", opts->strategy, "none, full, selective, standard, eagle or offload")
      ->capture_default_str();
  sub->add_option("--recompute-layers", opts->recompute_layers,
                  "R: layers per stage that use the strategy; one value or one per stage (9,9,8,4); default all");
  sub->add_option("--offload-layers", opts->offload_layers, "layers per stage offloaded after the recomputed ones");
  sub->add_option("--layer-plan", opts->layer_plan,
                  "per-layer choices, e.g. '0-9:eagle;10:gqa=eagle,mlp=offload;11-19:full' (wins over R)");
  sub->add_option("--memory-budget-GiB", opts->budget_GiB, "per-GPU budget; default capacity less reserve")
      ->each([opts](const std::string&) { opts->budget_given = true; });
  return [opts]() {
    const Inputs in = load_inputs(opts->common, "estimate");
    Plan plan = plan_from(*opts);
    if (!opts->layer_plan.empty()) plan.layer_overrides = parse_layer_plan(opts->layer_plan, in.model, in.training);
    auto problems = validate_plan(plan, in.training, in.model);
    if (!problems.empty()) throw InputError(std::move(problems));
    const Estimate e = estimate(in.model, in.hardware, in.training, plan,
                                memory_budget_bytes(opts->budget_given, opts->budget_GiB, in.hardware));
    emit(opts->common, estimate_table(in.model, in.hardware, in.training, plan, e),
         estimate_report(in.meta, in.model, in.hardware, in.training, plan, e));
    return e.fits ? kExitOk : kExitNoFit;
  };
}

}  // namespace remat::cli
