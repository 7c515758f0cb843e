// Megatron-LM's architecture flags for a model's layer (norm, MLP, biases,
// positions, q/k norms) and what of the layer Megatron-LM cannot express.
#pragma once
#include <string>
#include <vector>

#include "remat/spec/model_spec.hpp"

namespace remat {

// --swiglu or the activation, --normalization, bias flags, position embedding, --bf16.
std::vector<std::string> megatron_architecture_flags(const ModelSpec& m);
// One line per construct the flags cannot express (a parallel attention+MLP block, ...).
std::vector<std::string> megatron_inexpressible(const ModelSpec& m);

}  // namespace remat
