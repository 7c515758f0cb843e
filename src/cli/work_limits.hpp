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
inline constexpr int64_t kMaxSimulatedPasses = 100'000;  // simulate: microbatches x layers
inline constexpr int64_t kMaxStagePasses = 20'000'000;   // simulate: microbatches x layers x pipeline stages
inline constexpr int64_t kMaxPlottedPasses = 15'000;     // simulate --trace, --svg*: every event is written
inline constexpr int64_t kMaxSweptPasses = 400'000;      // simulate --svg-sweep: one simulation per R
inline constexpr int64_t kMaxSearchLayers = 100'000;     // plan, scenarios: layers in all (the per-layer search too)
inline constexpr int64_t kMaxSearchStageLayers = 512;    // plan, scenarios: layers of the largest stage
inline constexpr int64_t kMaxSweepLayers = 256;          // sweep (its layouts include a single stage)
inline constexpr int64_t kMaxSweepPerLayerLayers = 128;  // sweep --per-layer
inline constexpr int64_t kDefaultMaxLayouts = 10'000;    // sweep --max-layouts

// --pp beyond kMaxPipelineStages (every command; load_inputs calls it).
void check_pipeline_stages(const CommonOptions& o);

// simulate: the microbatches times the layers it steps through; with
// `output` (--trace FILE, --svg FILE, ...) the lower cap of what it writes.
void check_simulated_passes(const CommonOptions& o, const Inputs& in, const std::string& output_flag = "",
                            const std::string& output_path = "");

// simulate --svg-sweep PATH: one simulation per R from 0 to the smallest
// stage's layer count (per strategy), each of microbatches x layers passes.
void check_swept_simulations(const Inputs& in, const std::string& path);

// plan and scenarios: the layers the R and per-layer searches walk; `command` names the
// subcommand in the message.
void check_search_layers(const CommonOptions& o, const Inputs& in, const std::string& command);

// sweep: the layers each layout's search walks, a single stage among them.
void check_sweep_layers(const CommonOptions& o, const Inputs& in, bool per_layer);

}  // namespace remat::cli
