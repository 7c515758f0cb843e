// remat modules: per recompute block and strategy, kept bytes, FLOPs, times.
#include <memory>

#include "commands.hpp"
#include "options.hpp"
#include "remat/cost/modules.hpp"
#include "remat/report/tables.hpp"

namespace remat::cli {

namespace {
struct ModulesOptions {
  CommonOptions common;
  std::string formulas = "exact";
};
}  // namespace

Runner add_modules_command(CLI::App& app) {
  auto opts = std::make_shared<ModulesOptions>();
  CLI::App* sub = app.add_subcommand("modules", "per recompute block and strategy: memory, FLOPs, predicted time");
  add_common_options(*sub, opts->common);
  sub->add_option("--formulas", opts->formulas, "paper (EAGLE Table 1) or exact (real shapes)")
      ->check(CLI::IsMember({"paper", "exact"}))
      ->capture_default_str();
  return [opts]() {
    const Inputs in = load_inputs(opts->common, "modules");
    print_notes(in);
    const Formulas f = opts->formulas == "paper" ? Formulas::paper : Formulas::exact;
    const auto rows = module_rows(in.model, in.hardware, in.training, f);
    emit(opts->common, modules_table(in.model, in.hardware, rows),
         modules_report(in.meta, in.model, in.hardware, in.training, rows));
    return kExitOk;
  };
}

}  // namespace remat::cli
