// remat simulate: one iteration as events; memory over time, the peak and
// what is alive then; Chrome trace, SVG plots, JSON summary.
#include <fmt/format.h>

#include <fstream>
#include <memory>

#include "commands.hpp"
#include "options.hpp"
#include "refused.hpp"
#include "remat/report/json_text.hpp"
#include "remat/report/svg.hpp"
#include "remat/report/trace.hpp"
#include "remat/sim/simulate.hpp"
#include "remat/spec/validate.hpp"
#include "work_limits.hpp"

namespace remat::cli {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct SimulateOptions {
  CommonOptions common;
  StrategyOptions plan;
  int64_t virtual_stages = 1, stage = -1, top = 8;
  std::string trace_path, svg_path, svg_sweep_path, svg_stages_path;
};

void write_file(const std::string& flag, const std::string& path, const std::string& text) {
  write_text_file(path, flag, text);
}

std::string summary_table(const Simulation& sim, int64_t only_stage) {
  std::string out = fmt::format("iteration {:.3f} s simulated, {:.3f} s analytical ({} microbatches, {})\n",
                                sim.iteration_s, sim.estimate.iteration.time_s, sim.microbatches,
                                sim.virtual_stages > 1 ? fmt::format("interleaved v={}", sim.virtual_stages) : "1F1B");
  for (const auto& st : sim.stages) {
    if (only_stage >= 0 && st.index != only_stage) continue;
    out += fmt::format("stage {:>2}: peak {:7.2f} GiB at {:.3f} s", st.index, st.peak.bytes / kGiB, st.peak.t_s);
    if (sim.virtual_stages == 1)
      out += fmt::format("  (estimate {:.2f} GiB)", sim.estimate.stages[size_t(st.index)].memory_bytes.peak / kGiB);
    if (st.exposed_copy_s > 0) out += fmt::format("  exposed copies {:.3f} s", st.exposed_copy_s);
    out += "\n  alive at the peak:";
    for (const auto& b : st.peak.top) out += fmt::format(" {} {:.2f} GiB;", b.name, b.bytes / kGiB);
    out += "\n";
  }
  for (const auto& st : sim.stages)
    if (st.peak.bytes > sim.estimate.budget_bytes)
      out += fmt::format("stage {} does not fit: peak {:.2f} GiB, {:.2f} GiB over the budget of {:.2f} GiB\n", st.index,
                         st.peak.bytes / kGiB, (st.peak.bytes - sim.estimate.budget_bytes) / kGiB,
                         sim.estimate.budget_bytes / kGiB);
  return out;
}

void write_plots(const SimulateOptions& o, const Inputs& in, const Plan& plan, const Simulation& sim) {
  const std::string what =
      fmt::format("{} tp {} pp {}: {}", in.model.name, in.training.tp, in.training.pp, to_string(plan.strategy));
  if (!o.svg_path.empty()) write_file("--svg", o.svg_path, memory_timeline_svg(sim, what + ", memory", o.stage));
  const std::vector<Strategy> compared = {Strategy::none, Strategy::full, Strategy::standard, Strategy::eagle};
  if (!o.svg_sweep_path.empty())
    write_file("--svg-sweep", o.svg_sweep_path,
               recompute_sweep_svg(sweep_recompute_layers(in.model, in.hardware, in.training, compared),
                                   fmt::format("{} tp {} pp {}", in.model.name, in.training.tp, in.training.pp)));
  if (!o.svg_stages_path.empty()) {
    std::vector<Simulation> sims;
    for (Strategy s : compared) {
      Plan p = plan_from(o.plan);  // the same R, each strategy
      p.strategy = s;
      sims.push_back(simulate(in.model, in.hardware, in.training, p, {o.virtual_stages, o.top}));
    }
    std::vector<StageBarsInput> runs;
    for (size_t i = 0; i < sims.size(); ++i) runs.push_back({compared[i], &sims[i]});
    write_file("--svg-stages", o.svg_stages_path,
               stage_memory_bars_svg(runs, fmt::format("{} tp {} pp {}: memory per stage", in.model.name,
                                                       in.training.tp, in.training.pp)));
  }
}

}  // namespace

Runner add_simulate_command(CLI::App& app) {
  auto opts = std::make_shared<SimulateOptions>();
  CLI::App* sub = app.add_subcommand("simulate", "one iteration as events: memory over time, peak, traces, plots");
  add_common_options(*sub, opts->common);
  add_strategy_options(*sub, opts->plan);
  sub->add_option("--virtual-stages", opts->virtual_stages, "interleaved 1F1B with v model chunks per stage")
      ->capture_default_str();
  sub->add_option("--stage", opts->stage, "report only this stage (the simulation runs all)");
  sub->add_option("--top", opts->top, "buffers listed at each peak")->capture_default_str();
  sub->add_option("--trace", opts->trace_path, "Chrome trace event JSON (Perfetto, chrome://tracing)");
  sub->add_option("--svg", opts->svg_path, "memory over time per stage, stacked by category");
  sub->add_option("--svg-sweep", opts->svg_sweep_path, "iteration time and peak memory against R per strategy");
  sub->add_option("--svg-stages", opts->svg_stages_path, "first/middle/last stage memory for none/full/standard/eagle");
  return [opts]() {
    const SimulateOptions& o = *opts;
    const Inputs in = load_inputs(o.common, "simulate");
    check_simulated_passes(o.common, in);
    for (const auto& [flag, path] : {std::pair{"--trace", o.trace_path},
                                     {"--svg", o.svg_path},
                                     {"--svg-sweep", o.svg_sweep_path},
                                     {"--svg-stages", o.svg_stages_path}})
      check_simulated_passes(o.common, in, flag, path);
    check_swept_simulations(in, o.svg_sweep_path);
    if (o.stage < -1 || o.stage >= in.training.pp)
      throw InputError({{"command line", "--stage", std::to_string(o.stage), "must be a stage index below --pp"}});
    if (o.top < 0) throw InputError({{"command line", "--top", std::to_string(o.top), "must not be negative"}});
    const Plan plan = plan_from(o.plan);
    refuse_streambp_chunks_unless(o.common, plan.strategy == Strategy::streambp);
    auto problems = validate_plan(plan, in.training, in.model);
    if (!problems.empty()) throw InputError(std::move(problems));
    print_notes(in);
    const Simulation sim = simulate(in.model, in.hardware, in.training, plan, {o.virtual_stages, o.top});
    if (!o.trace_path.empty()) write_file("--trace", o.trace_path, dump_json_text(chrome_trace(sim, o.stage)) + "\n");
    write_plots(o, in, plan, sim);
    emit(o.common, summary_table(sim, o.stage),
         simulate_report(in.meta, in.model, in.hardware, in.training, plan, sim, o.stage));
    return fits_budget(sim) ? kExitOk : kExitNoFit;
  };
}

}  // namespace remat::cli
