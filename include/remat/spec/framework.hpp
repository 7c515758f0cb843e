#pragma once
// Framework profiles (--framework): what one training stack keeps per op, its
// buffers and transients, its recompute vocabulary and replay, its defaults.
// One source file per profile under src/spec/profiles/; the build registers
// every file there (src/CMakeLists.txt), so a new profile is one file.
#include <string>
#include <string_view>
#include <vector>

#include "remat/spec/hardware_spec.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/plan.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

inline constexpr const char* kGenericFramework = "generic";
inline constexpr const char* kMegatronLocalFramework = "megatron-local";
inline constexpr const char* kHfFramework = "hf";

struct FrameworkProfile {
  const char* name = "";       // the --framework value
  const char* summary = "";    // one line for --help
  const char* read_from = "";  // the framework source (and version) its terms were read from
  // ZeRO stage when --zero-stage is not given; -1 keeps remat's default (1)
  int64_t default_zero_stage = -1;
  // the --strategy values this stack runs; a plan using another is refused
  std::vector<Strategy> strategies;
  // the hybrid mixers' kernels this stack runs when --mixer-kernels is not given
  MixerKernels mixer_kernels = MixerKernels::fused;
  // whether --replay picks the checkpoint's replay (PyTorch's use_reentrant) or the stack fixes it
  bool replay_choosable = true;
  // whether it runs each model's own class: a model without an sdpa path (ModelSpec::
  // eager_attention_only) runs eager, the default then and --attention sdpa refused; one without
  // gradient checkpointing (ModelSpec::gradient_checkpointing_unsupported) recomputes nothing
  bool runs_model_code = false;
  // whether it builds a model's multi-token prediction modules (ModelSpec::num_nextn_predict_layers):
  // Megatron-LM does (--mtp-num-layers); transformers' model classes build none
  bool builds_mtp_modules = true;
  // why this stack cannot run `m` (a construct it has no implementation of), "" where it can;
  // nullptr: it runs every model remat builds
  std::string (*cannot_run)(const ModelSpec& m) = nullptr;
  // `t` with every implementation choice and buffer of the stack set; layout,
  // batch, objective and recompute untouched
  TrainingSpec (*apply_training)(TrainingSpec t) = nullptr;
  // `hw` with the stack's fitted time constants in effect; nullptr: unchanged
  HardwareSpec (*apply_hardware)(HardwareSpec hw) = nullptr;
  // what the hardware file leaves unfitted for this stack, one sentence each
  std::vector<std::string> (*time_gaps)(const HardwareSpec& hw, const ModelSpec& m, const TrainingSpec& t) = nullptr;
};

// Every registered profile, sorted by name.
const std::vector<const FrameworkProfile*>& framework_profiles();
// The profile named `name`, or nullptr.
const FrameworkProfile* find_framework(std::string_view name);
// The registered names, comma-separated ("generic, hf, megatron-local").
std::string framework_names();
// Why `name` cannot run `m` with sdpa attention (its transformers class has no sdpa path), or "".
std::string sdpa_refusal(std::string_view name, const ModelSpec& m);
// Whether `profile` runs `s`.
bool framework_runs(const FrameworkProfile& profile, Strategy s);

// `t` with `name`'s choices applied and t.framework set to it (name must be registered).
TrainingSpec apply_framework(TrainingSpec t, std::string_view name);
// `hw` with the named framework's fitted efficiencies in effect; unchanged when it has none.
HardwareSpec apply_framework(HardwareSpec hw, std::string_view name);
// `m` as the named framework builds it: without multi-token prediction modules where it builds
// none, with a note saying so (name must be registered).
ModelSpec model_as_built(ModelSpec m, std::string_view name);
// What the hardware file leaves unfitted for the framework and `model`, one sentence each.
std::vector<std::string> framework_time_gaps(const HardwareSpec& hw, std::string_view name, const ModelSpec& model,
                                             const TrainingSpec& training);

}  // namespace remat
