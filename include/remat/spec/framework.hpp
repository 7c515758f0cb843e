#pragma once
// Implementation profiles: the choices and extra memory of one training
// framework, set together (--framework).
#include <string>

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

}  // namespace remat
