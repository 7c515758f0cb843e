// Memory-bound kernels of the backend besides RMSNorm (kernels_norm.cu): SwiGLU, the MoE router,
// permutation and combine, MLA key assembly, fills and comparisons. 16-byte vector accesses, fp32
// math, bf16 storage (vec.cuh).
#include <cuda_bf16.h>

#include <algorithm>
#include <cfloat>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "check.hpp"
#include "kernels.hpp"
#include "launch.hpp"
#include "vec.cuh"

namespace remat::cuda::k {

namespace {

__device__ inline void swiglu_fwd_vec(const uint4& gate_raw, const uint4& up_raw, bf16* a, float sc) {
  float gv[kVec], uv[kVec], o[kVec];
  unpack8(gate_raw, gv);
  unpack8(up_raw, uv);
#pragma unroll
  for (int i = 0; i < kVec; ++i) o[i] = gv[i] / (1.f + __expf(-gv[i])) * uv[i] * sc;
  store8(a, o);
}

// Returns this vector's share of d(scale): sum of da * silu(gate) * up.
__device__ inline float swiglu_bwd_vec(const bf16* gu, const bf16* da, bf16* dgu, int inter, int64_t row, int c,
                                       float sc) {
  float gv[kVec], uv[kVec], dv[kVec], dg[kVec], du[kVec];
  load8(gu + row * 2 * inter + c * kVec, gv);
  load8(gu + row * 2 * inter + inter + c * kVec, uv);
  load8(da + row * inter + c * kVec, dv);
  float dsum = 0.f;
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    const float sg = 1.f / (1.f + __expf(-gv[i]));
    const float silu = gv[i] * sg;
    const float d = dv[i] * sc;
    du[i] = d * silu;
    dg[i] = d * uv[i] * sg * (1.f + gv[i] * (1.f - sg));
    dsum += dv[i] * silu * uv[i];
  }
  store8(dgu + row * 2 * inter + c * kVec, dg);
  store8(dgu + row * 2 * inter + inter + c * kVec, du);
  return dsum;
}

constexpr int kSwigluThreads = 256;

// Threads per row of the forward: a power of two from a warp to the whole block, about four
// vectors per thread (moe experts, inter 1536: a warp a row; mlp, inter 14336: the block a row).
int swiglu_threads_per_row(int64_t inter) {
  int tpr = 32;
  while (tpr < kSwigluThreads && tpr * 2 <= inter / kVec / 4) tpr *= 2;
  return tpr;
}

// kSwigluThreads / tpr rows a block, tpr threads a row walking it in 16-byte vectors.
__global__ void swiglu_fwd_kernel(const bf16* gu, bf16* a, int64_t rows, int inter, const float* scale,
                                  const int* scale_idx, int tpr) {
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  if (row >= rows) return;
  const float sc = scale ? scale[scale_idx[row]] : 1.f;
  for (int c = threadIdx.x % tpr; c < inter / kVec; c += tpr) {
    const uint4 gate = *reinterpret_cast<const uint4*>(gu + row * 2 * inter + c * kVec);
    const uint4 up = *reinterpret_cast<const uint4*>(gu + row * 2 * inter + inter + c * kVec);
    swiglu_fwd_vec(gate, up, a + row * inter + c * kVec, sc);
  }
}

__global__ void swiglu_bwd_kernel(const bf16* gu, const bf16* da, bf16* dgu, int64_t rows, int inter,
                                  const float* scale, const int* scale_idx) {
  const int nv = inter / kVec;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * nv;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / nv;
    swiglu_bwd_vec(gu, da, dgu, inter, row, int(i - row * nv), scale ? scale[scale_idx[row]] : 1.f);
  }
}

constexpr int kRowsPerSwigluBlock = 8;  // the scaled backward: a warp per row

__global__ void swiglu_bwd_dscale_kernel(const bf16* gu, const bf16* da, bf16* dgu, int64_t rows, int inter,
                                         const float* scale, const int* scale_idx, float* dscale) {
  const int64_t row = int64_t(blockIdx.x) * kRowsPerSwigluBlock + (threadIdx.x >> 5);
  if (row >= rows) return;
  const float sc = scale[scale_idx[row]];
  float dsum = 0.f;
#pragma unroll 4
  for (int c = threadIdx.x & 31; c < inter / kVec; c += 32) dsum += swiglu_bwd_vec(gu, da, dgu, inter, row, c, sc);
  const float total = warp_sum(dsum);
  if ((threadIdx.x & 31) == 0) dscale[scale_idx[row]] = total;
}

constexpr int kRouterMaxPerLane = 8;  // experts <= 256

__global__ void router_select_kernel(const bf16* logits, float* probs, int* idx, float* p, int64_t tokens, int experts,
                                     int topk, int mode) {
  const int64_t t = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (t >= tokens) return;
  float v[kRouterMaxPerLane];
  float mx = -FLT_MAX;
#pragma unroll
  for (int j = 0; j < kRouterMaxPerLane; ++j) {
    const int e = j * 32 + lane;
    v[j] = e < experts ? __bfloat162float(logits[t * experts + e]) : -FLT_MAX;
    mx = fmaxf(mx, v[j]);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  float sum = 0.f;
#pragma unroll
  for (int j = 0; j < kRouterMaxPerLane; ++j) {
    const int e = j * 32 + lane;
    v[j] = e < experts ? __expf(v[j] - mx) : 0.f;
    sum += v[j];
  }
  sum = warp_sum(sum);
#pragma unroll
  for (int j = 0; j < kRouterMaxPerLane; ++j) {
    const int e = j * 32 + lane;
    v[j] = e < experts ? v[j] / sum : -1.f;
    if (e < experts) probs[t * experts + e] = v[j];
  }
  __syncwarp();
  for (int kk = 0; kk < topk; ++kk) {
    int best_e;
    if (mode == 1) {
      best_e = int((t * topk + kk) % experts);
    } else {
      float bv = -2.f;
      best_e = experts;
#pragma unroll
      for (int j = 0; j < kRouterMaxPerLane; ++j) {
        const int e = j * 32 + lane;
        if (v[j] > bv) {
          bv = v[j];
          best_e = e;
        }
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        const int oe = __shfl_xor_sync(0xffffffffu, best_e, o);
        if (ov > bv || (ov == bv && oe < best_e)) {
          bv = ov;
          best_e = oe;
        }
      }
#pragma unroll
      for (int j = 0; j < kRouterMaxPerLane; ++j)
        if (j * 32 + lane == best_e) v[j] = -1.f;
    }
    if (lane == 0) {
      idx[t * topk + kk] = best_e;
      p[t * topk + kk] = probs[t * experts + best_e];
    }
  }
}

__global__ void router_bwd_kernel(const float* probs, const int* idx, const float* dp, bf16* dlogits, int64_t tokens,
                                  int experts, int topk) {
  const int64_t t = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (t >= tokens) return;
  float dot = 0.f;
  for (int kk = 0; kk < topk; ++kk) dot += dp[t * topk + kk] * probs[t * experts + idx[t * topk + kk]];
  for (int e = lane; e < experts; e += 32) {
    float dpe = 0.f;
    for (int kk = 0; kk < topk; ++kk)
      if (idx[t * topk + kk] == e) dpe += dp[t * topk + kk];
    const float pe = probs[t * experts + e];
    dlogits[t * experts + e] = __float2bfloat16(pe * (dpe - dot));
  }
}

__global__ void gather_rows_kernel(const bf16* src, int64_t ld_src, const int* src_row, bf16* dst, int h) {
  const int64_t r = blockIdx.x;
  const int64_t sr = src_row[r];
  const uint4* s = reinterpret_cast<const uint4*>(src + sr * ld_src);
  uint4* d = reinterpret_cast<uint4*>(dst + r * h);
  for (int c = threadIdx.x; c < h / kVec; c += blockDim.x) d[c] = s[c];
}

__global__ void combine_rows_kernel(const bf16* rows, const int* pos, const bf16* base, bf16* out, int topk, int h) {
  const int64_t t = blockIdx.x;
  for (int c = threadIdx.x; c < h / kVec; c += blockDim.x) {
    float acc[kVec] = {};
    if (base) load8(base + t * h + c * kVec, acc);
    for (int kk = 0; kk < topk; ++kk) {
      float v[kVec];
      load8(rows + int64_t(pos[t * topk + kk]) * h + c * kVec, v);
#pragma unroll
      for (int i = 0; i < kVec; ++i) acc[i] += v[i];
    }
    store8(out + t * h + c * kVec, acc);
  }
}

__global__ void mla_k_assemble_kernel(const bf16* k_nope, const bf16* k_rope, int64_t ld_rope, bf16* k, int heads,
                                      int dn, int dr) {
  const int64_t t = blockIdx.x;
  const int per_head = (dn + dr) / kVec, nope_v = dn / kVec;
  for (int v = threadIdx.x; v < heads * per_head; v += blockDim.x) {
    const int hd = v / per_head, w = v % per_head;
    const uint4* src = w < nope_v ? reinterpret_cast<const uint4*>(k_nope + t * heads * dn + hd * dn + w * kVec)
                                  : reinterpret_cast<const uint4*>(k_rope + t * ld_rope + (w - nope_v) * kVec);
    reinterpret_cast<uint4*>(k + t * heads * (dn + dr))[v] = *src;
  }
}

__global__ void mla_k_split_kernel(const bf16* dk, bf16* dk_nope, bf16* dk_rope, int64_t ld_rope, int heads, int dn,
                                   int dr) {
  const int64_t t = blockIdx.x;
  const int nope_v = dn / kVec, per_head = (dn + dr);
  for (int v = threadIdx.x; v < heads * nope_v; v += blockDim.x) {
    const int hd = v / nope_v, w = v % nope_v;
    reinterpret_cast<uint4*>(dk_nope + t * heads * dn + hd * dn)[w] =
        reinterpret_cast<const uint4*>(dk + t * heads * per_head + hd * per_head)[w];
  }
  for (int j = threadIdx.x; j < dr; j += blockDim.x) {
    float s = 0.f;
    for (int hd = 0; hd < heads; ++hd) s += __bfloat162float(dk[t * heads * per_head + hd * per_head + dn + j]);
    dk_rope[t * ld_rope + j] = __float2bfloat16(s);
  }
}

__device__ inline uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__global__ void fill_uniform_kernel(bf16* x, int64_t n, uint64_t seed, float scale, float offset) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t r = splitmix64(seed * 0x100000001b3ull + uint64_t(i));
    const float u = float(r >> 40) * (1.f / 16777216.f);  // [0, 1)
    x[i] = __float2bfloat16((2.f * u - 1.f) * scale + offset);
  }
}

__global__ void compare_kernel(const bf16* a, const bf16* b, int64_t n, double* out) {
  float mx = 0.f;
  double sa = 0, sr = 0, cnt = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float av = __bfloat162float(a[i]), bv = __bfloat162float(b[i]);
    const float d = fabsf(av - bv);
    mx = fmaxf(mx, d);
    sa += d;
    sr += d / fmaxf(fabsf(bv), 1e-10f);
    cnt += (__bfloat16_as_ushort(a[i]) != __bfloat16_as_ushort(b[i])) ? 1.0 : 0.0;
  }
  for (int o = 16; o > 0; o >>= 1) {
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    sa += __shfl_xor_sync(0xffffffffu, sa, o);
    sr += __shfl_xor_sync(0xffffffffu, sr, o);
    cnt += __shfl_xor_sync(0xffffffffu, cnt, o);
  }
  if ((threadIdx.x & 31) == 0) {
    const double mxd = mx;
    atomicMax(reinterpret_cast<unsigned long long*>(out), static_cast<unsigned long long>(__double_as_longlong(mxd)));
    atomicAdd(out + 1, sa);
    atomicAdd(out + 2, sr);
    atomicAdd(out + 3, cnt);
  }
}

}  // namespace

void swiglu_fwd(const void* gu, void* a, int64_t rows, int64_t inter, const float* scale, const int* scale_idx,
                cudaStream_t s) {
  check_vec(inter, "swiglu_fwd");
  if (rows == 0) return;
  const int tpr = swiglu_threads_per_row(inter);
  const int64_t rows_per_block = kSwigluThreads / tpr;
  swiglu_fwd_kernel<<<static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block), kSwigluThreads, 0, s>>>(
      static_cast<const bf16*>(gu), static_cast<bf16*>(a), rows, int(inter), scale, scale_idx, tpr);
  check_launch("swiglu_fwd_kernel");
}

void swiglu_bwd(const void* gu, const void* da, void* dgu, int64_t rows, int64_t inter, const float* scale,
                const int* scale_idx, float* dscale, cudaStream_t s) {
  check_vec(inter, "swiglu_bwd");
  if (rows == 0) return;
  if (dscale) {
    if (!scale) throw std::runtime_error("swiglu_bwd: a scale gradient needs the scale");
    const unsigned blocks = static_cast<unsigned>((rows + kRowsPerSwigluBlock - 1) / kRowsPerSwigluBlock);
    swiglu_bwd_dscale_kernel<<<blocks, 32 * kRowsPerSwigluBlock, 0, s>>>(
        static_cast<const bf16*>(gu), static_cast<const bf16*>(da), static_cast<bf16*>(dgu), rows, int(inter), scale,
        scale_idx, dscale);
    check_launch("swiglu_bwd_dscale_kernel");
    return;
  }
  swiglu_bwd_kernel<<<grid_for(rows * inter / kVec, 256), 256, 0, s>>>(
      static_cast<const bf16*>(gu), static_cast<const bf16*>(da), static_cast<bf16*>(dgu), rows, int(inter), scale,
      scale_idx);
  check_launch("swiglu_bwd_kernel");
}

void router_select(const void* logits, float* probs, int* idx, float* p, int64_t tokens, int experts, int topk,
                   int mode, cudaStream_t s) {
  if (experts > 32 * kRouterMaxPerLane) throw std::runtime_error("router: more than 256 experts");
  router_select_kernel<<<grid_for(tokens * 32, 256), 256, 0, s>>>(static_cast<const bf16*>(logits), probs, idx, p,
                                                                  tokens, experts, topk, mode);
  check_launch("router_select_kernel");
}

void router_bwd(const float* probs, const int* idx, const float* dp, void* dlogits, int64_t tokens, int experts,
                int topk, cudaStream_t s) {
  router_bwd_kernel<<<grid_for(tokens * 32, 256), 256, 0, s>>>(probs, idx, dp, static_cast<bf16*>(dlogits), tokens,
                                                               experts, topk);
  check_launch("router_bwd_kernel");
}

void gather_rows(const void* src, int64_t ld_src, const int* src_row, void* dst, int64_t rows, int64_t h,
                 cudaStream_t s) {
  check_vec(h, "gather_rows");
  if (rows == 0) return;
  gather_rows_kernel<<<static_cast<unsigned>(rows), 128, 0, s>>>(static_cast<const bf16*>(src), ld_src, src_row,
                                                                 static_cast<bf16*>(dst), int(h));
  check_launch("gather_rows_kernel");
}

void combine_rows(const void* rows, const int* pos, const void* base, void* out, int64_t tokens, int topk, int64_t h,
                  cudaStream_t s) {
  check_vec(h, "combine_rows");
  combine_rows_kernel<<<static_cast<unsigned>(tokens), 128, 0, s>>>(
      static_cast<const bf16*>(rows), pos, static_cast<const bf16*>(base), static_cast<bf16*>(out), topk, int(h));
  check_launch("combine_rows_kernel");
}

void mla_k_assemble(const void* k_nope, const void* k_rope, int64_t ld_rope, void* k, int64_t tokens, int heads, int dn,
                    int dr, cudaStream_t s) {
  check_vec(dn, "mla_k_assemble");
  check_vec(dr, "mla_k_assemble");
  mla_k_assemble_kernel<<<static_cast<unsigned>(tokens), 256, 0, s>>>(static_cast<const bf16*>(k_nope),
                                                                      static_cast<const bf16*>(k_rope), ld_rope,
                                                                      static_cast<bf16*>(k), heads, dn, dr);
  check_launch("mla_k_assemble_kernel");
}

void mla_k_split(const void* dk, void* dk_nope, void* dk_rope, int64_t ld_rope, int64_t tokens, int heads, int dn,
                 int dr, cudaStream_t s) {
  check_vec(dn, "mla_k_split");
  mla_k_split_kernel<<<static_cast<unsigned>(tokens), 256, 0, s>>>(
      static_cast<const bf16*>(dk), static_cast<bf16*>(dk_nope), static_cast<bf16*>(dk_rope), ld_rope, heads, dn, dr);
  check_launch("mla_k_split_kernel");
}

void fill_uniform(void* x, int64_t n, uint64_t seed, float scale, float offset, cudaStream_t s) {
  fill_uniform_kernel<<<grid_for(n, 256), 256, 0, s>>>(static_cast<bf16*>(x), n, seed, scale, offset);
  check_launch("fill_uniform_kernel");
}

void compare_bf16(const void* a, const void* b, int64_t n, double* out, cudaStream_t s) {
  CUDA_CHECK(cudaMemsetAsync(out, 0, 4 * sizeof(double), s));
  const unsigned grid = grid_for(n, 256) < 1024 ? grid_for(n, 256) : 1024;
  compare_kernel<<<grid, 256, 0, s>>>(static_cast<const bf16*>(a), static_cast<const bf16*>(b), n, out);
  check_launch("compare_kernel");
}

}  // namespace remat::cuda::k
