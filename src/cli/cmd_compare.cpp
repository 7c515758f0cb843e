// remat compare (the default job): every strategy on one layout, side by side.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "commands.hpp"
#include "options.hpp"
#include "remat/cost/estimate.hpp"
#include "remat/cost/streambp.hpp"
#include "remat/report/tables.hpp"

namespace remat::cli {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct CompareOptions {
  CommonOptions common;
  std::string recompute_layers;  // empty: every layer of each stage
};

std::vector<std::string> summary_row(Strategy s, const Estimate& e) {
  std::string peaks;
  for (const auto& st : e.stages)
    peaks += (peaks.empty() ? "" : " ") + fmt::format("{:.1f}", st.memory_bytes.peak / kGiB);
  return {to_string(s),
          peaks,
          fmt::format("{:.1f}", e.peak_memory_bytes / kGiB),
          e.fits ? "yes" : "NO",
          fmt::format("{:.3f}", e.iteration.time_s),
          fmt::format("{:.1f}", 100 * e.iteration.mfu),
          fmt::format("{:.0f}", e.iteration.tokens_per_s)};
}

// StreamBP's chunks for the comparison: the flags when given, else the paper's partitions (App. D:
// 500 tokens per layer chunk, 100 per LM-head chunk), since D = C = 1 is layer checkpointing.
TrainingSpec streambp_defaults(TrainingSpec t) {
  if (t.streambp_chunks == 1 && t.lm_head_chunks == 1) {
    t.streambp_chunks = chunks_for(t.seq, 500);
    t.lm_head_chunks = chunks_for(t.seq, 100);
  }
  return t;
}

}  // namespace

Runner add_compare_command(CLI::App& app) {
  auto opts = std::make_shared<CompareOptions>();
  CLI::App* sub = app.add_subcommand("compare", "every strategy on one layout: peak memory per stage, time, MFU");
  add_common_options(*sub, opts->common);
  sub->add_option("--recompute-layers", opts->recompute_layers,
                  "R per stage (one value or one per stage); default all");
  return [opts]() {
    const Inputs in = load_inputs(opts->common, "compare");
    print_notes(in);
    Json report = {{"meta", meta_json(in.meta)},
                   {"model", model_json(in.model)},
                   {"hardware", hardware_json(in.hardware)},
                   {"training", training_json(in.training)}};
    Json list = Json::array();
    std::vector<std::vector<std::string>> rows;
    bool any_fits = false;
    // the strategies the framework profile runs (hf: none and full)
    for (Strategy s : profile_strategies(in.training, all_strategies(), false, "--framework")) {
      Plan plan;
      plan.strategy = s;
      if (!opts->recompute_layers.empty())
        plan.recompute_layers = parse_int_list("--recompute-layers", opts->recompute_layers);
      const TrainingSpec t = s == Strategy::streambp ? streambp_defaults(in.training) : in.training;
      const Estimate e = estimate(in.model, in.hardware, t, plan, default_budget_bytes(in.hardware));
      rows.push_back(summary_row(s, e));
      any_fits = any_fits || e.fits;
      if (s == Strategy::streambp)
        rows.back()[0] = fmt::format("streambp D={} C={}", t.streambp_chunks, t.lm_head_chunks);
      list.push_back(estimate_report(in.meta, in.model, in.hardware, t, plan, e));
    }
    report["estimates"] = list;
    const auto& t = in.training;
    std::string table = fmt::format("{} on {}  tp {} pp {} dp {} ep {}  mbs {} gbs {} seq {}  budget {:.1f} GiB\n",
                                    in.model.name, in.hardware.name, t.tp, t.pp, t.dp, t.ep, t.mbs, t.gbs, t.seq,
                                    default_budget_bytes(in.hardware) / kGiB);
    table += render_table({"strategy", "peak GiB per stage", "max GiB", "fits", "iter s", "MFU %", "tokens/s"}, rows);
    if (!any_fits) table += "no strategy fits: each one's max GiB is over the budget\n";
    emit(opts->common, table, report);
    return any_fits ? kExitOk : kExitNoFit;  // the layout fits under no strategy
  };
}

}  // namespace remat::cli
