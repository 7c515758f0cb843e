#pragma once
// Reading the CUDA backend's measurements JSON (schema remat.gpu_measurements
// 1.x, src/cuda/README.md). Reads what `remat validate` needs to predict the
// same cases (block, strategy, dims, times, bytes and the buffer lists) and
// what `remat calibrate` fits (kernels, offload copies); the rest of the file
// (correctness, gradients, summary) is ignored. The structs are in
// remat/validate/measured.hpp.
#include <string>

#include "remat/validate/measured.hpp"

namespace remat {

// Throws InputError naming the file, the key path (cases[3].dims.s) and the
// bad value for every problem found.
Measurements parse_measurements(const std::string& text, const std::string& file);

}  // namespace remat
