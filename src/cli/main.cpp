// remat: activation-memory planning for large-model training.
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#include "options.hpp"
#include "remat/spec/problems.hpp"

int main(int argc, char** argv) {
  using namespace remat::cli;
  CLI::App app{"remat: per-GPU memory, FLOPs and step time of activation recomputation plans"};
  app.set_version_flag("--version", REMAT_VERSION);
  app.require_subcommand(0, 1);
  Runner modules = add_modules_command(app);
  Runner estimate = add_estimate_command(app);
  try {
    app.parse(argc, argv);
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
    return estimate();  // no subcommand: the default plan's estimate
  } catch (const remat::InputError& e) {
    for (const auto& p : e.problems()) std::cerr << "error: " << p.line() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}
