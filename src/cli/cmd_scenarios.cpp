// remat scenarios: the EAGLE paper's Table 3 (fixed R) and Table 4 (best R)
// scenarios, predicted for one model and layout.
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "commands.hpp"
#include "options.hpp"
#include "refused.hpp"
#include "remat/report/tables.hpp"
#include "remat/search/scenarios.hpp"
#include "work_limits.hpp"

namespace remat::cli {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

Json scenario_json(const ScenarioResult& s) {
  Json rows = Json::array();
  for (const auto& r : s.rows) {
    rows.push_back({{"strategy", to_string(r.strategy)},
                    {"recompute_layers", r.r},
                    {"first_stage_peak_bytes", int64_t(std::llround(r.first_peak_bytes))},
                    {"middle_stage_peak_bytes", int64_t(std::llround(r.middle_peak_bytes))},
                    {"last_stage_peak_bytes", int64_t(std::llround(r.last_peak_bytes))},
                    {"iteration_s", r.time_s},
                    {"mfu", r.mfu},
                    {"tokens_per_s", r.tokens_per_s},
                    {"fits", r.fits}});
    if (!r.reason.empty()) rows.back()["reason"] = r.reason;
  }
  return {{"scenario", s.scenario}, {"rows", rows}, {"eagle_vs_full_mfu_gain", s.eagle_vs_full_mfu_gain}};
}

std::string scenario_table(const ScenarioResult& s) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : s.rows)
    rows.push_back({to_string(r.strategy), std::to_string(r.r), fmt::format("{:.1f}", r.first_peak_bytes / kGiB),
                    fmt::format("{:.1f}", r.middle_peak_bytes / kGiB), fmt::format("{:.1f}", r.last_peak_bytes / kGiB),
                    r.fits ? "yes" : "NO", fmt::format("{:.2f}", r.time_s), fmt::format("{:.1f}", 100 * r.mfu)});
  std::string why;
  for (const auto& r : s.rows)
    if (!r.reason.empty()) why += fmt::format("{}: {}\n", to_string(r.strategy), r.reason);
  return fmt::format("{}:\n",
                     s.scenario == "fixed-r" ? "fixed R (Table 3 scenario)" : "best R per method (Table 4 scenario)") +
         render_table({"method", "R", "first GiB", "middle GiB", "last GiB", "fits", "iter s", "MFU %"}, rows) + why +
         fmt::format("EAGLE vs full recompute MFU: {:+.1f}%\n", 100 * s.eagle_vs_full_mfu_gain);
}

struct ScenarioOptions {
  CommonOptions common;
  double budget_GiB = -1;
  bool budget_given = false;
};

}  // namespace

Runner add_scenarios_command(CLI::App& app) {
  auto o = std::make_shared<ScenarioOptions>();
  CLI::App* sub = app.add_subcommand("scenarios", "the EAGLE paper's fixed-R and best-R scenarios for one layout");
  add_common_options(*sub, o->common);
  sub->add_option("--memory-budget-GiB", o->budget_GiB, "per-GPU budget; default capacity less reserve")
      ->each([o](const std::string&) { o->budget_given = true; });
  return [o]() {
    refuse_streambp_chunks(o->common, no_streambp("scenarios"));
    const Inputs in = load_inputs(o->common, "scenarios");
    check_search_layers(o->common, in, "scenarios");
    print_notes(in);
    const double budget = memory_budget_bytes(o->budget_given, o->budget_GiB, in.hardware);
    const ScenarioResult fixed = fixed_r_scenario(in.model, in.hardware, in.training, budget);
    const ScenarioResult best = best_r_scenario(in.model, in.hardware, in.training, budget);
    const auto& t = in.training;
    const std::string head =
        fmt::format("{} on {}  tp {} pp {} dp {} ep {}  mbs {} gbs {} seq {}  budget {:.1f} GiB\n", in.model.name,
                    in.hardware.name, t.tp, t.pp, t.dp, t.ep, t.mbs, t.gbs, t.seq, budget / kGiB);
    const Json report = {{"meta", meta_json(in.meta)},
                         {"model", model_json(in.model)},
                         {"hardware", hardware_json(in.hardware)},
                         {"training", training_json(in.training)},
                         {"budget_bytes", int64_t(std::llround(budget))},
                         {"scenarios", {scenario_json(fixed), scenario_json(best)}}};
    emit(o->common, head + scenario_table(fixed) + "\n" + scenario_table(best), report);
    // the layout does not fit when no method fits at any R
    const bool any_fits = std::any_of(best.rows.begin(), best.rows.end(), [](const ScenarioRow& r) { return r.fits; });
    return any_fits ? kExitOk : kExitNoFit;
  };
}

}  // namespace remat::cli
