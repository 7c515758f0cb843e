// Kernels StreamBP needs: accumulating chunk gradients, the loss's fp32 copy of the logits and
// the softmax cross-entropy with its gradient.
#include <cuda_bf16.h>

#include <cfloat>

#include "kernels.hpp"
#include "launch.hpp"

namespace remat::cuda::k {

namespace {

using bf16 = __nv_bfloat16;
constexpr int kThreads = 256;

__global__ void add_kernel(bf16* y, const bf16* x, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16(__bfloat162float(y[i]) + __bfloat162float(x[i]));
}

__global__ void to_f32_kernel(const bf16* x, float* y, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = __bfloat162float(x[i]);
}

__global__ void to_bf16_kernel(const float* x, bf16* y, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16(x[i]);
}

// Max and sum over the block, fixed order (deterministic).
__device__ float block_reduce(float v, bool is_max) {
  __shared__ float part[32];
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, other) : v + other;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  float r = is_max ? -FLT_MAX : 0.f;
  for (int w = 0; w < int(blockDim.x >> 5); ++w) r = is_max ? fmaxf(r, part[w]) : r + part[w];
  return r;
}

// One block per row: max, sum of exponentials, then the loss and (optionally) the gradient.
__global__ void cross_entropy_kernel(const float* logits, const int* labels, const bf16* w, bf16* loss, float* grad,
                                     int64_t vocab) {
  const int64_t r = blockIdx.x;
  const float* z = logits + r * vocab;
  float mx = -FLT_MAX;
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) mx = fmaxf(mx, z[j]);
  mx = block_reduce(mx, true);
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) sum += __expf(z[j] - mx);
  sum = block_reduce(sum, false);
  const int label = labels[r];
  const float weight = __bfloat162float(w[r]);
  if (loss && threadIdx.x == 0) loss[r] = __float2bfloat16(weight * (logf(sum) + mx - z[label]));
  if (!grad) return;
  float* g = grad + r * vocab;
  const float inv = 1.f / sum;
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x)
    g[j] = weight * (__expf(z[j] - mx) * inv - (j == label ? 1.f : 0.f));
}

}  // namespace

void add_bf16(void* y, const void* x, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  add_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(static_cast<bf16*>(y), static_cast<const bf16*>(x), n);
  check_launch("add_kernel");
}

void bf16_to_f32(const void* x, float* y, int64_t n, cudaStream_t s) {
  to_f32_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(static_cast<const bf16*>(x), y, n);
  check_launch("to_f32_kernel");
}

void f32_to_bf16(const float* x, void* y, int64_t n, cudaStream_t s) {
  to_bf16_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(x, static_cast<bf16*>(y), n);
  check_launch("to_bf16_kernel");
}

void cross_entropy(const float* logits, const int* labels, const void* w, void* loss, float* grad, int64_t rows,
                   int64_t vocab, cudaStream_t s) {
  if (rows <= 0) return;
  cross_entropy_kernel<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(logits, labels, static_cast<const bf16*>(w),
                                                                        static_cast<bf16*>(loss), grad, vocab);
  check_launch("cross_entropy_kernel");
}

}  // namespace remat::cuda::k
