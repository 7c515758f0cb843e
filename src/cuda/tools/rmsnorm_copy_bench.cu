// RMSNorm forward microbenchmark (standalone, not built by CMake): kernel variants against a
// device-to-device copy of the same bytes (cudaMemcpyAsync and copy kernels), h 4096 and 5120,
// rows 4096..16384. Build: nvcc -O3 -arch=sm_90a -std=c++17 -I$CUDNN_INCLUDE rmsnorm_copy_bench.cu -o rmsbench.
// Bandwidth = 4*rows*h bytes (read x + write y) / time; fractions of 4800 GB/s. Loads: cs =
// __ldcs, nc = ld.global.nc.L1::no_allocate.L2::256B, plain; stores: cs = __stcs, cg, plain.
#include <cuda_bf16.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include "../check.hpp"
using bf16 = __nv_bfloat16;
constexpr int kVec = 8;
__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline uint4 ld_stream(const uint4* p) { return __ldcs(p); }
__device__ inline uint4 ld_nc(const uint4* p) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}
template <int MODE>
__device__ inline uint4 ldx(const uint4* p) {
  if (MODE == 0)
    return __ldcs(p);
  else if (MODE == 1)
    return ld_nc(p);
  else
    return *p;
}
template <int MODE>
__device__ inline void sty(uint4* p, uint4 v) {
  if (MODE == 0)
    __stcs(p, v);
  else if (MODE == 1)
    __stcg(p, v);
  else
    *p = v;
}

template <int VPL>
__device__ inline uint4 norm_vec(const uint4& c, const uint4& graw, float rstd) {
  const __nv_bfloat162* g2 = reinterpret_cast<const __nv_bfloat162*>(&graw);
  const __nv_bfloat162* h2 = reinterpret_cast<const __nv_bfloat162*>(&c);
  uint4 out;
  __nv_bfloat162* o2 = reinterpret_cast<__nv_bfloat162*>(&out);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 f = __bfloat1622float2(h2[i]), gv = __bfloat1622float2(g2[i]);
    o2[i] = __floats2bfloat162_rn(f.x * rstd * gv.x, f.y * rstd * gv.y);
  }
  return out;
}
__device__ inline float sumsq(const uint4& c) {
  const __nv_bfloat162* h2 = reinterpret_cast<const __nv_bfloat162*>(&c);
  float s = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 f = __bfloat1622float2(h2[i]);
    s += f.x * f.x + f.y * f.y;
  }
  return s;
}

// current pipe kernel (contiguous rows per warp, 1-row prefetch), LM/SM modes
template <int VPL, int LM, int SM>
__global__ void __launch_bounds__(128)
    pipe_k(const bf16* x, const bf16* g, bf16* y, int64_t rows, int h, float eps, int64_t rpw) {
  __shared__ uint4 gs[VPL * 32];
  for (int i = threadIdx.x; i < VPL * 32; i += blockDim.x) gs[i] = reinterpret_cast<const uint4*>(g)[i];
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const int64_t warp = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int64_t first = warp * rpw;
  const int64_t last = min(first + rpw, rows);
  if (first >= last) return;
  uint4 cur[VPL], nxt[VPL];
#pragma unroll
  for (int j = 0; j < VPL; ++j)
    cur[j] = ldx<LM>(reinterpret_cast<const uint4*>(x + first * h + (j * 32 + lane) * kVec));
  for (int64_t row = first; row < last; ++row) {
    if (row + 1 < last) {
#pragma unroll
      for (int j = 0; j < VPL; ++j)
        nxt[j] = ldx<LM>(reinterpret_cast<const uint4*>(x + (row + 1) * h + (j * 32 + lane) * kVec));
    }
    float ss = 0.f;
#pragma unroll
    for (int j = 0; j < VPL; ++j) ss += sumsq(cur[j]);
    const float rstd = rsqrtf(warp_sum(ss) / h + eps);
#pragma unroll
    for (int j = 0; j < VPL; ++j)
      sty<SM>(reinterpret_cast<uint4*>(y + row * h + (j * 32 + lane) * kVec),
              norm_vec<VPL>(cur[j], gs[j * 32 + lane], rstd));
#pragma unroll
    for (int j = 0; j < VPL; ++j) cur[j] = nxt[j];
  }
}
// strided rows (warp w handles rows w, w+W, ...), 1-row prefetch: adjacent warps touch adjacent rows
template <int VPL, int LM, int SM, int WPB>
__global__ void __launch_bounds__(WPB * 32)
    strided_k(const bf16* x, const bf16* g, bf16* y, int64_t rows, int h, float eps) {
  __shared__ uint4 gs[VPL * 32];
  for (int i = threadIdx.x; i < VPL * 32; i += blockDim.x) gs[i] = reinterpret_cast<const uint4*>(g)[i];
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const int64_t W = int64_t(gridDim.x) * WPB;
  int64_t row = int64_t(blockIdx.x) * WPB + threadIdx.x / 32;
  if (row >= rows) return;
  uint4 cur[VPL], nxt[VPL];
#pragma unroll
  for (int j = 0; j < VPL; ++j) cur[j] = ldx<LM>(reinterpret_cast<const uint4*>(x + row * h + (j * 32 + lane) * kVec));
  for (; row < rows; row += W) {
    if (row + W < rows) {
#pragma unroll
      for (int j = 0; j < VPL; ++j)
        nxt[j] = ldx<LM>(reinterpret_cast<const uint4*>(x + (row + W) * h + (j * 32 + lane) * kVec));
    }
    float ss = 0.f;
#pragma unroll
    for (int j = 0; j < VPL; ++j) ss += sumsq(cur[j]);
    const float rstd = rsqrtf(warp_sum(ss) / h + eps);
#pragma unroll
    for (int j = 0; j < VPL; ++j)
      sty<SM>(reinterpret_cast<uint4*>(y + row * h + (j * 32 + lane) * kVec),
              norm_vec<VPL>(cur[j], gs[j * 32 + lane], rstd));
#pragma unroll
    for (int j = 0; j < VPL; ++j) cur[j] = nxt[j];
  }
}
// one row per warp, non-persistent grid (rows/WPB blocks)
template <int VPL, int LM, int SM, int WPB>
__global__ void __launch_bounds__(WPB * 32)
    flat_k(const bf16* x, const bf16* g, bf16* y, int64_t rows, int h, float eps) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * WPB + threadIdx.x / 32;
  if (row >= rows) return;
  uint4 cur[VPL];
#pragma unroll
  for (int j = 0; j < VPL; ++j) cur[j] = ldx<LM>(reinterpret_cast<const uint4*>(x + row * h + (j * 32 + lane) * kVec));
  float ss = 0.f;
#pragma unroll
  for (int j = 0; j < VPL; ++j) ss += sumsq(cur[j]);
  const float rstd = rsqrtf(warp_sum(ss) / h + eps);
#pragma unroll
  for (int j = 0; j < VPL; ++j) {
    uint4 gr = __ldg(reinterpret_cast<const uint4*>(g) + j * 32 + lane);
    sty<SM>(reinterpret_cast<uint4*>(y + row * h + (j * 32 + lane) * kVec), norm_vec<VPL>(cur[j], gr, rstd));
  }
}
// block per row: h/8 threads, one uint4 each
template <int LM, int SM>
__global__ void rowblk_k(const bf16* x, const bf16* g, bf16* y, int64_t rows, int h, float eps) {
  __shared__ float red[32];
  const int64_t row = blockIdx.x;
  const int t = threadIdx.x;
  uint4 c = ldx<LM>(reinterpret_cast<const uint4*>(x + row * h) + t);
  float ss = warp_sum(sumsq(c));
  if ((t & 31) == 0) red[t >> 5] = ss;
  __syncthreads();
  float tot = 0;
  for (int w = 0; w < (int)(blockDim.x >> 5); ++w) tot += red[w];
  const float rstd = rsqrtf(tot / h + eps);
  sty<SM>(reinterpret_cast<uint4*>(y + row * h) + t,
          norm_vec<1>(c, __ldg(reinterpret_cast<const uint4*>(g) + t), rstd));
}
template <int LM, int SM>
__global__ void copy_k(const uint4* a, uint4* b, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    sty<SM>(b + i, ldx<LM>(a + i));
}

int sms;
template <class F>
float timeit(F f, int reps = 20) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> ts;
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(a);
    f();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    ts.push_back(ms);
  }
  CUDA_CHECK(cudaGetLastError());
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}
template <int VPL, int LM, int SM>
void run_pipe(const bf16* x, const bf16* g, bf16* y, int64_t rows, int h, int bps_override, const char* tag) {
  int bps;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, pipe_k<VPL, LM, SM>, 128, 0);
  if (bps_override > 0) bps = std::min(bps, bps_override);
  int64_t warps = int64_t(sms) * bps * 4, per = (rows + warps - 1) / warps, used = (rows + per - 1) / per;
  unsigned grid = (used + 3) / 4;
  float ms = timeit([&] { pipe_k<VPL, LM, SM><<<grid, 128>>>(x, g, y, rows, h, 1e-6f, per); });
  printf("%-28s bps=%d grid=%u rpw=%lld %.1f us %.0f GB/s %.3f\n", tag, bps, grid, (long long)per, ms * 1e3,
         4.0 * rows * h / ms / 1e6, 4.0 * rows * h / ms / 1e6 / 4800);
}
template <int VPL, int LM, int SM, int WPB>
void run_strided(const bf16* x, const bf16* g, bf16* y, int64_t rows, int h, int waves, const char* tag) {
  int bps;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, strided_k<VPL, LM, SM, WPB>, WPB * 32, 0);
  int64_t grid = std::min<int64_t>(int64_t(sms) * bps * waves, (rows + WPB - 1) / WPB);
  float ms = timeit([&] { strided_k<VPL, LM, SM, WPB><<<grid, WPB * 32>>>(x, g, y, rows, h, 1e-6f); });
  printf("%-28s bps=%d grid=%lld %.1f us %.0f GB/s %.3f\n", tag, bps, (long long)grid, ms * 1e3,
         4.0 * rows * h / ms / 1e6, 4.0 * rows * h / ms / 1e6 / 4800);
}
template <int VPL, int LM, int SM, int WPB>
void run_flat(const bf16* x, const bf16* g, bf16* y, int64_t rows, int h, const char* tag) {
  int64_t grid = (rows + WPB - 1) / WPB;
  float ms = timeit([&] { flat_k<VPL, LM, SM, WPB><<<grid, WPB * 32>>>(x, g, y, rows, h, 1e-6f); });
  printf("%-28s grid=%lld %.1f us %.0f GB/s %.3f\n", tag, (long long)grid, ms * 1e3, 4.0 * rows * h / ms / 1e6,
         4.0 * rows * h / ms / 1e6 / 4800);
}
template <int VPL>
void sweep(bf16* x, bf16* g, bf16* y, int64_t rows, int h) {
  printf("== h=%d rows=%lld bytes=%.1f MB\n", h, (long long)rows, 4.0 * rows * h / 1e6);
  const size_t n = size_t(rows) * h * 2;
  float ms = timeit([&] { cudaMemcpyAsync(y, x, n, cudaMemcpyDeviceToDevice); });
  printf("%-28s %.1f us %.0f GB/s %.3f\n", "memcpy D2D", ms * 1e3, 2.0 * n / ms / 1e6, 2.0 * n / ms / 1e6 / 4800);
  for (int w : {1, 2, 4}) {
    ms = timeit([&] { copy_k<0, 0><<<sms * 8 * w, 256>>>((const uint4*)x, (uint4*)y, n / 16); });
    printf("copy_k cs/cs waves=%d          %.1f us %.0f GB/s %.3f\n", w, ms * 1e3, 2.0 * n / ms / 1e6,
           2.0 * n / ms / 1e6 / 4800);
  }
  ms = timeit([&] { copy_k<2, 2><<<(n / 16 + 255) / 256, 256>>>((const uint4*)x, (uint4*)y, n / 16); });
  printf("%-28s %.1f us %.0f GB/s %.3f\n", "copy_k flat plain", ms * 1e3, 2.0 * n / ms / 1e6,
         2.0 * n / ms / 1e6 / 4800);
  run_pipe<VPL, 0, 0>(x, g, y, rows, h, 0, "pipe cs/cs (current)");
  run_pipe<VPL, 1, 0>(x, g, y, rows, h, 0, "pipe nc256/cs");
  run_pipe<VPL, 2, 2>(x, g, y, rows, h, 0, "pipe plain/plain");
  run_pipe<VPL, 0, 1>(x, g, y, rows, h, 0, "pipe cs/cg");
  run_pipe<VPL, 0, 0>(x, g, y, rows, h, 2, "pipe cs/cs bps<=2");
  run_strided<VPL, 0, 0, 4>(x, g, y, rows, h, 1, "strided4 cs/cs w1");
  run_strided<VPL, 1, 0, 4>(x, g, y, rows, h, 1, "strided4 nc/cs w1");
  run_strided<VPL, 0, 0, 8>(x, g, y, rows, h, 1, "strided8 cs/cs w1");
  run_strided<VPL, 2, 2, 4>(x, g, y, rows, h, 1, "strided4 plain w1");
  run_flat<VPL, 0, 0, 4>(x, g, y, rows, h, "flat4 cs/cs");
  run_flat<VPL, 1, 0, 4>(x, g, y, rows, h, "flat4 nc/cs");
  run_flat<VPL, 2, 2, 4>(x, g, y, rows, h, "flat4 plain");
  run_flat<VPL, 0, 0, 8>(x, g, y, rows, h, "flat8 cs/cs");
  run_flat<VPL, 0, 0, 2>(x, g, y, rows, h, "flat2 cs/cs");
  {
    float m2 = timeit([&] { rowblk_k<0, 0><<<rows, h / 8>>>(x, g, y, rows, h, 1e-6f); });
    printf("%-28s %.1f us %.0f GB/s %.3f\n", "rowblk cs/cs", m2 * 1e3, 4.0 * rows * h / m2 / 1e6,
           4.0 * rows * h / m2 / 1e6 / 4800);
  }
  {
    float m2 = timeit([&] { rowblk_k<2, 2><<<rows, h / 8>>>(x, g, y, rows, h, 1e-6f); });
    printf("%-28s %.1f us %.0f GB/s %.3f\n", "rowblk plain", m2 * 1e3, 4.0 * rows * h / m2 / 1e6,
           4.0 * rows * h / m2 / 1e6 / 4800);
  }
}
int run() {
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, 0);
  printf("%s sms=%d L2=%d MB\n", p.name, sms, p.l2CacheSize >> 20);
  const int64_t maxrows = 16384;
  bf16 *x, *y, *g;
  CUDA_CHECK(cudaMalloc(&x, maxrows * 8192 * 2));
  CUDA_CHECK(cudaMalloc(&y, maxrows * 8192 * 2));
  CUDA_CHECK(cudaMalloc(&g, 8192 * 2));
  CUDA_CHECK(cudaMemset(x, 0x3c, maxrows * 8192 * 2));
  CUDA_CHECK(cudaMemset(g, 0x3c, 8192 * 2));
  for (int64_t rows : {4096, 8192, 16384}) {
    sweep<16>(x, g, y, rows, 4096);
    sweep<20>(x, g, y, rows, 5120);
  }
  return 0;
}

int main() {
  try {
    return run();
  } catch (const std::exception& e) {  // a failed CUDA call, named by CUDA_CHECK
    std::fprintf(stderr, "rmsnorm_copy_bench: %s\n", e.what());
    return 1;
  }
}
