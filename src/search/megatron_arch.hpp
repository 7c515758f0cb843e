// Megatron-LM's architecture flags for a model's layer (norm, MLP, biases,
// positions, q/k norms) and what of the layer Megatron-LM cannot express.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "remat/spec/model_spec.hpp"

namespace remat {

// --swiglu or the activation, --normalization, bias flags, position embedding, --bf16.
std::vector<std::string> megatron_architecture_flags(const ModelSpec& m);
// Per-layer patterns over the first `layers` layers: --window-size with
// --window-attn-skip-freq, --no-rope-freq.
std::vector<std::string> megatron_layer_pattern_flags(const ModelSpec& m, int64_t layers);
// Megatron-LM's list expression, shell-quoted, 1 where `one` holds: '([1]*3+[0]*1)'.
std::string megatron_layer_pattern(int64_t layers, const std::function<bool(int64_t)>& one);
// One line per construct the flags cannot express (a parallel attention+MLP block, ...).
std::vector<std::string> megatron_inexpressible(const ModelSpec& m);

}  // namespace remat
