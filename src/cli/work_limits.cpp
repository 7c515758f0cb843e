#include "work_limits.hpp"

#include <algorithm>

#include "remat/spec/problems.hpp"
#include "remat/spec/validate.hpp"

namespace remat::cli {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

// The flag (or model key) that set the layer count, and its value.
Problem layers_problem(const CommonOptions& o, const Inputs& in, const std::string& message) {
  if (o.num_layers > 0) return {"command line", "--num-layers", str(o.num_layers), message};
  return {in.meta.inputs.empty() ? "model" : in.meta.inputs.front().source, "num_hidden_layers",
          str(in.model.num_hidden_layers), message};
}

int64_t largest_stage(const Inputs& in) {
  int64_t most = 0;
  for (const auto& [first, last] : stage_layer_ranges(in.model, in.training)) most = std::max(most, last - first);
  return most;
}

}  // namespace

void check_pipeline_stages(const CommonOptions& o) {
  if (o.pp > kMaxPipelineStages)
    throw InputError({{"command line", "--pp", str(o.pp),
                       "must be at most " + str(kMaxPipelineStages) + " pipeline stages (remat's cap on one run)"}});
}

void check_simulated_passes(const CommonOptions& o, const Inputs& in, const std::string& output_flag,
                            const std::string& output_path) {
  const int64_t layers = effective_layers(in.model, in.training);
  const int64_t microbatches = in.training.microbatches();
  int64_t passes = 0;
  if (!output_flag.empty() && !output_path.empty() && !checked_product(microbatches, layers, kMaxPlottedPasses, passes))
    throw InputError(
        {{"command line", output_flag, output_path,
          "writes every event: " + str(microbatches) + " microbatches x " + str(layers) + " layers is more than the " +
              str(kMaxPlottedPasses) + " layer passes it writes (a smaller --gbs, or no " + output_flag + ")"}});
  if (checked_product(microbatches, layers, kMaxSimulatedPasses, passes)) {
    int64_t stage_passes = 0;  // the event loop's work grows with the stages too
    if (checked_product(passes, in.training.pp, kMaxStagePasses, stage_passes)) return;
    throw InputError({{"command line", "--pp", str(o.pp),
                       "makes " + str(microbatches) + " microbatches x " + str(layers) + " layers x " + str(o.pp) +
                           " stages to simulate, more than the " + str(kMaxStagePasses) +
                           " simulate steps through (a smaller --gbs)"}});
  }
  const std::string message = "makes " + str(microbatches) + " microbatches x " + str(layers) +
                              " layers to simulate, more than the " + str(kMaxSimulatedPasses) +
                              " layer passes simulate steps through";
  if (o.gbs > 0) throw InputError({{"command line", "--gbs", str(o.gbs), message}});
  throw InputError({{"command line", "--pp", str(o.pp), message + " (the default --gbs is 4 x pp microbatches)"}});
}

void check_swept_simulations(const Inputs& in, const std::string& path) {
  if (path.empty()) return;
  int64_t smallest = effective_layers(in.model, in.training);
  for (const auto& [first, last] : stage_layer_ranges(in.model, in.training))
    smallest = std::min(smallest, last - first);
  const int64_t passes = in.training.microbatches() * effective_layers(in.model, in.training);  // checked before
  int64_t swept = 0;
  if (!checked_product(smallest + 1, passes, kMaxSweptPasses, swept))
    throw InputError({{"command line", "--svg-sweep", path,
                       "simulates each R from 0 to " + str(smallest) + " (" + str(smallest + 1) + " x " + str(passes) +
                           " layer passes), more than the " + str(kMaxSweptPasses) +
                           " it runs (a smaller --gbs or a larger --pp)"}});
}

void check_sweep_layers(const CommonOptions& o, const Inputs& in, bool per_layer) {
  const int64_t layers = effective_layers(in.model, in.training);
  const int64_t cap = per_layer ? kMaxSweepPerLayerLayers : kMaxSweepLayers;
  if (layers > cap)
    throw InputError({layers_problem(o, in,
                                     std::string(per_layer ? "sweep --per-layer" : "sweep") + " searches at most " +
                                         str(cap) + " layers (its layouts include a pipeline of one stage)")});
}

void check_search_layers(const CommonOptions& o, const Inputs& in, const std::string& command) {
  const int64_t layers = effective_layers(in.model, in.training), stage = largest_stage(in);
  if (layers > kMaxSearchLayers || stage > kMaxSearchStageLayers)
    throw InputError({layers_problem(o, in,
                                     command + " searches at most " + str(kMaxSearchLayers) + " layers, " +
                                         str(kMaxSearchStageLayers) + " in one pipeline stage (" + str(stage) +
                                         " in the largest stage here)")});
}

}  // namespace remat::cli
