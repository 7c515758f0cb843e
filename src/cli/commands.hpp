#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace remat::cli {

// Each adds its subcommand to `app` and returns the function that runs it
// (returning the exit code) once the command line is parsed.
using Runner = std::function<int()>;
Runner add_modules_command(CLI::App& app);
Runner add_estimate_command(CLI::App& app);
Runner add_compare_command(CLI::App& app);
Runner add_validate_command(CLI::App& app);
Runner add_calibrate_command(CLI::App& app);
Runner add_simulate_command(CLI::App& app);
Runner add_plan_command(CLI::App& app);
Runner add_sweep_command(CLI::App& app);
Runner add_scenarios_command(CLI::App& app);

}  // namespace remat::cli
