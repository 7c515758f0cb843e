// Host-side launch helpers shared by our kernel files: the grid for n elements and the check
// after a launch.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace remat::cuda::k {

// Blocks of `threads` covering n elements (grid-stride kernels), at least 1, at most 2^20.
inline unsigned grid_for(int64_t n, int threads) {
  const int64_t g = (n + threads - 1) / threads;
  return static_cast<unsigned>(g < 65536 * 16 ? (g > 0 ? g : 1) : 65536 * 16);
}

// Throws naming the kernel when its launch failed.
inline void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("kernel launch failed: ") + what + ": " + cudaGetErrorString(e));
}

// Calls f(std::integral_constant<int, N>{}) for the N among Ns that equals n (a kernel template's
// size parameter chosen at run time); false when none does.
template <int... Ns, typename F>
bool dispatch_int(int64_t n, F&& f) {
  return ((n == Ns ? (f(std::integral_constant<int, Ns>{}), true) : false) || ...);
}

}  // namespace remat::cuda::k
