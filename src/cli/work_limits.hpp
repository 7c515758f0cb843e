#pragma once
// Bounds on the work one command does, checked before it starts: each input
// within its own limit can still multiply into hours or gigabytes (a pipeline
// of 100,000 stages, 100,000 microbatches to simulate, a sweep of millions of
// layouts). Every refusal names the flag, the product and the cap.
#include <cstdint>
#include <string>

#include "options.hpp"

namespace remat::cli {

inline constexpr int64_t kMaxPipelineStages = 1024;      // --pp (with --virtual-stages: pp x v)
inline constexpr int64_t kMaxSimulatedPasses = 250'000;  // simulate: microbatches x layers
inline constexpr int64_t kMaxSearchLayers = 1024;        // plan, scenarios, sweep: layers in all
inline constexpr int64_t kMaxSearchStageLayers = 512;    // plan, scenarios: layers of the largest stage
inline constexpr int64_t kMaxPerLayerLayers = 256;       // plan's (and sweep's) per-layer search: layers in all
inline constexpr int64_t kMaxPerLayerStageLayers = 128;  // the per-layer search: layers of the largest stage
inline constexpr int64_t kDefaultMaxLayouts = 10'000;    // sweep --max-layouts

// --pp beyond kMaxPipelineStages (every command; load_inputs calls it).
void check_pipeline_stages(const CommonOptions& o);

// simulate: the microbatches times the layers it steps through.
void check_simulated_passes(const CommonOptions& o, const Inputs& in);

// plan and scenarios: the layers the R search walks (per_layer: also the
// per-layer search's); `command` names the subcommand in the message.
void check_search_layers(const CommonOptions& o, const Inputs& in, const std::string& command, bool per_layer);

}  // namespace remat::cli
