// remat: activation-memory planning for large-model training.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "options.hpp"
#include "remat/spec/problems.hpp"
#include "version.hpp"

namespace {
// With no subcommand remat runs `compare`: flags go to it.
std::vector<std::string> with_default_command(std::vector<std::string> args) {
  const bool help = !args.empty() && (args[0] == "-h" || args[0] == "--help" || args[0] == "--version");
  if (!help && (args.empty() || args[0].rfind("-", 0) == 0)) args.insert(args.begin(), "compare");
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments reversed
  return args;
}
}  // namespace

namespace remat::cli {

namespace {
// --help and --version print to stdout: a failed write (a full disk) is not a success.
int checked_output(int code) {
  std::cout.flush();
  if (std::cout) return code;
  std::cerr << "error: stdout: (output): cannot be written\n";
  return kExitBadInput;
}
}  // namespace

// The whole program but for the process: `args` without the program name;
// returns the exit code. The fuzz target in tests/fuzz drives it in-process.
int run_cli(std::vector<std::string> args) {
  CLI::App app{"remat: per-GPU memory, FLOPs and step time of activation recomputation plans"};
  app.set_version_flag("--version", REMAT_VERSION);
  app.require_subcommand(0, 1);
  Runner modules = add_modules_command(app);
  Runner estimate = add_estimate_command(app);
  Runner compare = add_compare_command(app);
  Runner validate = add_validate_command(app);
  Runner calibrate = add_calibrate_command(app);
  Runner simulate = add_simulate_command(app);
  Runner plan = add_plan_command(app);
  Runner sweep = add_sweep_command(app);
  Runner scenarios = add_scenarios_command(app);
  try {
    args = with_default_command(std::move(args));
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return checked_output(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return checked_output(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return checked_output(app.exit(e));
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: command line: " << e.what() << "\n";
    return kExitBadInput;
  }
  try {
    if (app.got_subcommand("modules")) return modules();
    if (app.got_subcommand("estimate")) return estimate();
    if (app.got_subcommand("validate")) return validate();
    if (app.got_subcommand("calibrate")) return calibrate();
    if (app.got_subcommand("simulate")) return simulate();
    if (app.got_subcommand("plan")) return plan();
    if (app.got_subcommand("sweep")) return sweep();
    if (app.got_subcommand("scenarios")) return scenarios();
    return compare();
  } catch (const remat::InputError& e) {
    for (const auto& p : e.problems()) std::cerr << "error: " << p.line() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace remat::cli

#ifndef REMAT_NO_MAIN
int main(int argc, char** argv) { return remat::cli::run_cli(std::vector<std::string>(argv + 1, argv + argc)); }
#endif
