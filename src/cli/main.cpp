// remat: activation-memory planning for large-model training.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "options.hpp"
#include "remat/spec/problems.hpp"

namespace {
// With no subcommand remat runs `compare`: flags go to it.
std::vector<std::string> with_default_command(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const bool help = !args.empty() && (args[0] == "-h" || args[0] == "--help" || args[0] == "--version");
  if (!help && (args.empty() || args[0].rfind("-", 0) == 0)) args.insert(args.begin(), "compare");
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments reversed
  return args;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace remat::cli;
  CLI::App app{"remat: per-GPU memory, FLOPs and step time of activation recomputation plans"};
  app.set_version_flag("--version", REMAT_VERSION);
  app.require_subcommand(0, 1);
  Runner modules = add_modules_command(app);
  Runner estimate = add_estimate_command(app);
  Runner compare = add_compare_command(app);
  Runner simulate = add_simulate_command(app);
  try {
    auto args = with_default_command(argc, argv);
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: command line: " << e.what() << "\n";
    return kExitBadInput;
  }
  try {
    if (app.got_subcommand("modules")) return modules();
    if (app.got_subcommand("estimate")) return estimate();
    if (app.got_subcommand("simulate")) return simulate();
    return compare();
  } catch (const remat::InputError& e) {
    for (const auto& p : e.problems()) std::cerr << "error: " << p.line() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}
