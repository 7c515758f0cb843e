// remat estimate: one plan, per-stage memory and time, fits or not.
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "options.hpp"
#include "refused.hpp"
#include "remat/cost/estimate.hpp"
#include "remat/report/tables.hpp"
#include "remat/search/layer_plan_text.hpp"
#include "remat/search/megatron_flags.hpp"
#include "remat/spec/validate.hpp"

namespace remat::cli {

namespace {

struct EstimateOptions {
  CommonOptions common;
  StrategyOptions plan;
  std::string layer_plan;
  MegatronRecomputeText megatron;  // Megatron-LM's --recompute-* flags, as pasted
  double budget_GiB = -1;          // < 0: the GPU's capacity less its reserve
  bool budget_given = false;
};

}  // namespace

Runner add_estimate_command(CLI::App& app) {
  auto opts = std::make_shared<EstimateOptions>();
  CLI::App* sub = app.add_subcommand("estimate", "one plan: per-stage memory breakdown, time, MFU, fits or not");
  add_common_options(*sub, opts->common);
  add_strategy_options(*sub, opts->plan);
  sub->add_option("--layer-plan", opts->layer_plan,
                  "per-layer choices, e.g. '0-9:eagle;10:gqa=eagle,mlp=offload;11-19:full' (wins over R)");
  sub->add_option("--memory-budget-GiB", opts->budget_GiB, "per-GPU budget; default capacity less reserve")
      ->each([opts](const std::string&) { opts->budget_given = true; });
  sub->add_option("--recompute-granularity", opts->megatron.granularity, "Megatron-LM's: full or selective");
  sub->add_option("--recompute-method", opts->megatron.method, "Megatron-LM's: uniform or block (full only)");
  sub->add_option("--recompute-num-layers", opts->megatron.num_layers, "Megatron-LM's N (full only)");
  sub->add_option("--recompute-modules", opts->megatron.modules, "Megatron-LM's modules (selective only)")
      ->expected(1, -1);
  return [opts]() {
    Inputs in = load_inputs(opts->common, "estimate");
    Plan plan = plan_from(opts->plan);
    profile_strategies(in.training, {plan.strategy}, true, "--strategy");
    refuse_streambp_chunks_unless(opts->common, plan.strategy == Strategy::streambp);
    if (!opts->layer_plan.empty()) plan.layer_overrides = parse_layer_plan(opts->layer_plan, in.model, in.training);
    const auto& mt = opts->megatron;
    if (!mt.granularity.empty() || !mt.method.empty() || !mt.num_layers.empty()) {
      plan.megatron = parse_megatron_recompute(mt, in.model);
    }
    auto problems = validate_plan(plan, in.training, in.model);
    if (!problems.empty()) throw InputError(std::move(problems));
    print_notes(in);
    const MegatronSplit split = megatron_split(in.model, in.training);
    const bool split_given = !opts->common.layers_per_stage.empty() || !opts->common.megatron_split.empty();
    if (!split_given && !split_flags(split).empty()) std::cerr << "note: " << split_note(split) << "\n";
    const Estimate e = estimate(in.model, in.hardware, in.training, plan,
                                memory_budget_bytes(opts->budget_given, opts->budget_GiB, in.hardware));
    emit(opts->common, estimate_table(in.model, in.hardware, in.training, plan, e),
         estimate_report(in.meta, in.model, in.hardware, in.training, plan, e));
    const int64_t host_bound = host_bound_layers(e);
    if (host_bound > 0)
      std::cerr << fmt::format(
          "note: {} MoE layers' forward waits on the framework's host ({:.1f} ms a pass, above their GPU time); "
          "host-bound time follows the host's speed (15-20% apart between runs of one session on the hosts measured) "
          "and the host time belongs to the machine: fit it on a no-recompute log of yours "
          "(remat calibrate --megatron-log; reports/megatron)\n",
          host_bound, in.hardware.moe_layer_host_s * 1e3);
    return e.fits ? kExitOk : kExitNoFit;
  };
}

}  // namespace remat::cli
