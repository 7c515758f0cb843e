// Device helpers shared by the memory-bound kernel files: 8 bf16 per 16-byte vector unpacked to
// and packed from fp32, warp and block sums (fixed order: deterministic), the feature-size check.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace remat::cuda::k {

using bf16 = __nv_bfloat16;
constexpr int kVec = 8;  // bf16 per 16-byte vector

__device__ inline void unpack8(const uint4& raw, float (&v)[kVec]) {
  const __nv_bfloat162* h2 = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(h2[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}

__device__ inline void load8(const bf16* p, float (&v)[kVec]) { unpack8(*reinterpret_cast<const uint4*>(p), v); }

__device__ inline void store8(bf16* p, const float (&v)[kVec]) {
  uint4 raw;
  __nv_bfloat162* h2 = reinterpret_cast<__nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) h2[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
  *reinterpret_cast<uint4*>(p) = raw;
}

__device__ inline float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum of two values over the block (fixed order: deterministic).
__device__ inline float2 block_sum2(float a, float b) {
  __shared__ float sa[32], sb[32];
  a = warp_sum(a);
  b = warp_sum(b);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarp = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) {
    sa[warp] = a;
    sb[warp] = b;
  }
  __syncthreads();
  float ra = 0.f, rb = 0.f;
  for (int w = 0; w < nwarp; ++w) {
    ra += sa[w];
    rb += sb[w];
  }
  return make_float2(ra, rb);
}

// Throws unless h is a whole number of 16-byte vectors.
inline void check_vec(int64_t h, const char* what) {
  if (h % kVec != 0) throw std::runtime_error(std::string(what) + ": feature size must be a multiple of 8");
}

}  // namespace remat::cuda::k
