#pragma once
// Implementation profiles: the choices and extra memory of one training
// framework, set together (--framework).
#include <string>
#include <vector>

#include "remat/spec/hardware_spec.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

const char* to_string(Framework f);
bool parse_framework(const std::string& text, Framework& out);

// `t` with every implementation choice of `f` set: Megatron-LM with
// --transformer-impl local (no Transformer Engine, no Apex, no fused kernels)
// materializes the softmax, repeats keys and values to every head, runs
// SwiGLU and RoPE unfused, and keeps the buffers documented in
// src/spec/framework.cpp. Layout, batch and recompute choices are untouched.
TrainingSpec apply_framework(TrainingSpec t, Framework f);

// `hw` with the framework's fitted efficiencies (frameworks.<name> in the
// hardware file) in effect; unchanged when the file has none for `f`.
HardwareSpec apply_framework(HardwareSpec hw, Framework f);

// What the hardware file leaves unfitted for `f` and `model`, one sentence each:
// times then come from remat-bench's kernel efficiencies, not the framework's.
std::vector<std::string> framework_time_gaps(const HardwareSpec& hw, Framework f, const ModelSpec& model);

}  // namespace remat
