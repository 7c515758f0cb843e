// Memory-bound kernels of the backend: 16-byte vector accesses, fp32 math, bf16 storage.
#include <cuda_bf16.h>

#include <algorithm>
#include <cfloat>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "check.hpp"
#include "kernels.hpp"
#include "launch.hpp"

namespace remat::cuda::k {

namespace {

using bf16 = __nv_bfloat16;
constexpr int kVec = 8;  // bf16 per 16-byte vector
constexpr int kNormThreads = 256;
constexpr int kNormMaxVec = 4;  // h <= 256 * 8 * 4 = 8192
constexpr int kBwdRowsPerBlock = 16;

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

__global__ void rmsnorm_fwd_kernel(const bf16* x, int64_t ldx, const bf16* g, bf16* y, int64_t ldy, int h, float eps) {
  const int64_t row = blockIdx.x;
  const int nv = h / kVec;
  float v[kNormMaxVec][kVec];
  float ss = 0.f;
#pragma unroll
  for (int j = 0; j < kNormMaxVec; ++j) {
    const int c = threadIdx.x + j * blockDim.x;
    if (c < nv) {
      load8(x + row * ldx + c * kVec, v[j]);
#pragma unroll
      for (int i = 0; i < kVec; ++i) ss += v[j][i] * v[j][i];
    }
  }
  const float rstd = rsqrtf(block_sum2(ss, 0.f).x / h + eps);
#pragma unroll
  for (int j = 0; j < kNormMaxVec; ++j) {
    const int c = threadIdx.x + j * blockDim.x;
    if (c < nv) {
      float gv[kVec], o[kVec];
      load8(g + c * kVec, gv);
#pragma unroll
      for (int i = 0; i < kVec; ++i) o[i] = v[j][i] * rstd * gv[i];
      store8(y + row * ldy + c * kVec, o);
    }
  }
}

// One warp per row, the whole row in registers (h == VPL * 256): no block barrier, VPL
// independent 16-byte loads in flight per lane.
template <int VPL>
__device__ inline void rmsnorm_row(const bf16* x, int64_t ldx, const bf16* g, bf16* y, int64_t ldy, int64_t row,
                                   int lane, int h, float eps) {
  uint4 raw[VPL];
#pragma unroll
  for (int j = 0; j < VPL; ++j) raw[j] = *reinterpret_cast<const uint4*>(x + row * ldx + (j * 32 + lane) * kVec);
  float ss = 0.f;
#pragma unroll
  for (int j = 0; j < VPL; ++j) {
    const __nv_bfloat162* h2 = reinterpret_cast<const __nv_bfloat162*>(&raw[j]);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __bfloat1622float2(h2[i]);
      ss += f.x * f.x + f.y * f.y;
    }
  }
  const float rstd = rsqrtf(warp_sum(ss) / h + eps);
#pragma unroll
  for (int j = 0; j < VPL; ++j) {
    const int c = (j * 32 + lane) * kVec;
    float gv[kVec], o[kVec];
    load8(g + c, gv);
    const __nv_bfloat162* h2 = reinterpret_cast<const __nv_bfloat162*>(&raw[j]);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __bfloat1622float2(h2[i]);
      o[2 * i] = f.x * rstd * gv[2 * i];
      o[2 * i + 1] = f.y * rstd * gv[2 * i + 1];
    }
    store8(y + row * ldy + c, o);
  }
}

template <int VPL>
__global__ void rmsnorm_fwd_warp_kernel(const bf16* x, int64_t ldx, const bf16* g, bf16* y, int64_t ldy, int64_t rows,
                                        int h, float eps) {
  const int lane = threadIdx.x & 31;
  const int64_t stride = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t row = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; row < rows; row += stride)
    rmsnorm_row<VPL>(x, ldx, g, y, ldy, row, lane, h, eps);
}

template <int VPL>
void launch_rmsnorm_warp(const bf16* x, int64_t ldx, const bf16* g, bf16* y, int64_t ldy, int64_t rows, int h,
                         float eps, cudaStream_t s) {
  // A grid that fills the GPU once (rows strided over it), so no partial last wave.
  constexpr int kWarps = 4;
  static int blocks_per_sm = -1, sms = 0;
  if (blocks_per_sm < 0) {
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, rmsnorm_fwd_warp_kernel<VPL>, kWarps * 32, 0));
  }
  const int64_t need = (rows + kWarps - 1) / kWarps, full = int64_t(sms) * std::max(blocks_per_sm, 1);
  const unsigned grid = static_cast<unsigned>(std::min(need, full));
  rmsnorm_fwd_warp_kernel<VPL><<<grid, kWarps * 32, 0, s>>>(x, ldx, g, y, ldy, rows, h, eps);
}

// Pipelined warp-per-row: each warp owns a contiguous run of rows (balanced over the grid, so
// no partial last wave), keeps its row in registers and issues the next row's 16-byte loads
// before normalizing and storing the current one, so a warp's reads overlap its writes. The
// weight is staged once per block in shared memory; x is read with no L1 allocation and y
// written evict-first (both streamed once).
template <int VPL>
__global__ void __launch_bounds__(128)
    rmsnorm_fwd_pipe_kernel(const bf16* x, int64_t ldx, const bf16* g, bf16* y, int64_t ldy, int64_t rows, int h,
                            float eps, int64_t rows_per_warp) {
  __shared__ uint4 gs[VPL * 32];
  for (int i = threadIdx.x; i < VPL * 32; i += blockDim.x) gs[i] = reinterpret_cast<const uint4*>(g)[i];
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const int64_t warp = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int64_t first = warp * rows_per_warp;
  const int64_t last = first + rows_per_warp < rows ? first + rows_per_warp : rows;
  if (first >= last) return;
  uint4 cur[VPL], nxt[VPL];
#pragma unroll
  for (int j = 0; j < VPL; ++j)
    cur[j] = __ldcs(reinterpret_cast<const uint4*>(x + first * ldx + (j * 32 + lane) * kVec));
  for (int64_t row = first; row < last; ++row) {
    if (row + 1 < last) {
#pragma unroll
      for (int j = 0; j < VPL; ++j)
        nxt[j] = __ldcs(reinterpret_cast<const uint4*>(x + (row + 1) * ldx + (j * 32 + lane) * kVec));
    }
    float ss = 0.f;
#pragma unroll
    for (int j = 0; j < VPL; ++j) {
      const __nv_bfloat162* h2 = reinterpret_cast<const __nv_bfloat162*>(&cur[j]);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 f = __bfloat1622float2(h2[i]);
        ss += f.x * f.x + f.y * f.y;
      }
    }
    const float rstd = rsqrtf(warp_sum(ss) / h + eps);
#pragma unroll
    for (int j = 0; j < VPL; ++j) {
      const uint4 graw = gs[j * 32 + lane];
      const __nv_bfloat162* g2 = reinterpret_cast<const __nv_bfloat162*>(&graw);
      const __nv_bfloat162* h2 = reinterpret_cast<const __nv_bfloat162*>(&cur[j]);
      uint4 out;
      __nv_bfloat162* o2 = reinterpret_cast<__nv_bfloat162*>(&out);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 f = __bfloat1622float2(h2[i]), gv = __bfloat1622float2(g2[i]);
        o2[i] = __floats2bfloat162_rn(f.x * rstd * gv.x, f.y * rstd * gv.y);
      }
      __stcs(reinterpret_cast<uint4*>(y + row * ldy + (j * 32 + lane) * kVec), out);
    }
#pragma unroll
    for (int j = 0; j < VPL; ++j) cur[j] = nxt[j];
  }
}

template <int VPL>
void launch_rmsnorm_pipe(const bf16* x, int64_t ldx, const bf16* g, bf16* y, int64_t ldy, int64_t rows, int h,
                         float eps, cudaStream_t s) {
  constexpr int kWarps = 4;
  static int blocks_per_sm = -1, sms = 0;
  if (blocks_per_sm < 0) {
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, rmsnorm_fwd_pipe_kernel<VPL>, kWarps * 32, 0));
  }
  const int64_t warps = int64_t(sms) * std::max(blocks_per_sm, 1) * kWarps;
  const int64_t per_warp = (rows + warps - 1) / warps;
  const int64_t used = (rows + per_warp - 1) / per_warp;
  const unsigned grid = static_cast<unsigned>((used + kWarps - 1) / kWarps);
  rmsnorm_fwd_pipe_kernel<VPL><<<grid, kWarps * 32, 0, s>>>(x, ldx, g, y, ldy, rows, h, eps, per_warp);
}

// One row per warp over a grid of rows / 4 blocks (not persistent), plain 16-byte loads; y plain
// or evict-first (stream_y); rows in reverse order when `reverse`. For an x larger than the L2
// cache this keeps the most requests in flight: on the H200 at 16384 x 4096 it reaches 0.80-0.83
// of HBM bandwidth in the blocks (the pipelined kernel 0.69-0.71; a device-to-device copy of the
// same bytes 0.82 in a standalone test). reports/gpu/rmsnorm-ab-h200.txt.
template <int VPL>
__global__ void __launch_bounds__(128)
    rmsnorm_fwd_flat_kernel(const bf16* x, int64_t ldx, const bf16* g, bf16* y, int64_t ldy, int64_t rows, int h,
                            float eps, bool reverse, bool stream_y) {
  const int lane = threadIdx.x & 31;
  int64_t row = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;
  if (reverse) row = rows - 1 - row;
  uint4 cur[VPL];
#pragma unroll
  for (int j = 0; j < VPL; ++j) cur[j] = *reinterpret_cast<const uint4*>(x + row * ldx + (j * 32 + lane) * kVec);
  float ss = 0.f;
#pragma unroll
  for (int j = 0; j < VPL; ++j) {
    const __nv_bfloat162* h2 = reinterpret_cast<const __nv_bfloat162*>(&cur[j]);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __bfloat1622float2(h2[i]);
      ss += f.x * f.x + f.y * f.y;
    }
  }
  const float rstd = rsqrtf(warp_sum(ss) / h + eps);
#pragma unroll
  for (int j = 0; j < VPL; ++j) {
    const uint4 graw = __ldg(reinterpret_cast<const uint4*>(g) + j * 32 + lane);
    const __nv_bfloat162* g2 = reinterpret_cast<const __nv_bfloat162*>(&graw);
    const __nv_bfloat162* h2 = reinterpret_cast<const __nv_bfloat162*>(&cur[j]);
    uint4 out;
    __nv_bfloat162* o2 = reinterpret_cast<__nv_bfloat162*>(&out);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __bfloat1622float2(h2[i]), gv = __bfloat1622float2(g2[i]);
      o2[i] = __floats2bfloat162_rn(f.x * rstd * gv.x, f.y * rstd * gv.y);
    }
    uint4* dst = reinterpret_cast<uint4*>(y + row * ldy + (j * 32 + lane) * kVec);
    if (stream_y)
      __stcs(dst, out);
    else
      *dst = out;
  }
}

template <int VPL>
void launch_rmsnorm_flat(const bf16* x, int64_t ldx, const bf16* g, bf16* y, int64_t ldy, int64_t rows, int h,
                         float eps, bool reverse, bool stream_y, cudaStream_t s) {
  constexpr int kWarps = 4;
  const unsigned grid = static_cast<unsigned>((rows + kWarps - 1) / kWarps);
  rmsnorm_fwd_flat_kernel<VPL><<<grid, kWarps * 32, 0, s>>>(x, ldx, g, y, ldy, rows, h, eps, reverse, stream_y);
}

// REMAT_RMSNORM_FWD=warp|pipe|flat|flatrev|flatrev_cs forces one kernel (for comparison);
// default (auto): the pipelined kernel while x fits in the L2 cache (x, just written by its
// producer, is L2-resident and the evict-first y stores keep it there), above it the flat kernel
// in reverse row order with evict-first y stores (its first waves read the rows the producer
// wrote last, still in L2). A/B on the H200: reports/gpu/rmsnorm-ab-h200.txt.
enum class NormFwd { autosel, warp, pipe, flat, flatrev, flatrev_cs };
NormFwd norm_fwd_choice() {
  static const NormFwd v = [] {
    const char* e = std::getenv("REMAT_RMSNORM_FWD");
    const std::string s = e ? e : "";
    if (s == "warp") return NormFwd::warp;
    if (s == "pipe") return NormFwd::pipe;
    if (s == "flat") return NormFwd::flat;
    if (s == "flatrev") return NormFwd::flatrev;
    if (s == "flatrev_cs") return NormFwd::flatrev_cs;
    return NormFwd::autosel;
  }();
  return v;
}

int64_t l2_bytes() {
  static const int64_t v = [] {
    int dev = 0, l2 = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    return int64_t(l2);
  }();
  return v;
}

template <int VPL>
void launch_rmsnorm_row_kernel(const bf16* x, int64_t ldx, const bf16* g, bf16* y, int64_t ldy, int64_t rows, int h,
                               float eps, cudaStream_t s) {
  NormFwd k = norm_fwd_choice();
  if (k == NormFwd::autosel) k = rows * int64_t(h) * 2 > l2_bytes() ? NormFwd::flatrev_cs : NormFwd::pipe;
  switch (k) {
    case NormFwd::warp:
      return launch_rmsnorm_warp<VPL>(x, ldx, g, y, ldy, rows, h, eps, s);
    case NormFwd::flat:
      return launch_rmsnorm_flat<VPL>(x, ldx, g, y, ldy, rows, h, eps, false, false, s);
    case NormFwd::flatrev:
      return launch_rmsnorm_flat<VPL>(x, ldx, g, y, ldy, rows, h, eps, true, false, s);
    case NormFwd::flatrev_cs:
      return launch_rmsnorm_flat<VPL>(x, ldx, g, y, ldy, rows, h, eps, true, true, s);
    default:
      return launch_rmsnorm_pipe<VPL>(x, ldx, g, y, ldy, rows, h, eps, s);
  }
}

// Launches a warp-per-row kernel when h is one of its sizes; false otherwise.
bool rmsnorm_fwd_warp(const bf16* x, int64_t ldx, const bf16* g, bf16* y, int64_t ldy, int64_t rows, int64_t h,
                      float eps, cudaStream_t s) {
  if (h % 256 != 0) return false;
  switch (h / 256) {
    case 1:
      launch_rmsnorm_row_kernel<1>(x, ldx, g, y, ldy, rows, int(h), eps, s);
      return true;
    case 2:
      launch_rmsnorm_row_kernel<2>(x, ldx, g, y, ldy, rows, int(h), eps, s);
      return true;
    case 4:
      launch_rmsnorm_row_kernel<4>(x, ldx, g, y, ldy, rows, int(h), eps, s);
      return true;
    case 6:
      launch_rmsnorm_row_kernel<6>(x, ldx, g, y, ldy, rows, int(h), eps, s);
      return true;
    case 8:
      launch_rmsnorm_row_kernel<8>(x, ldx, g, y, ldy, rows, int(h), eps, s);
      return true;
    case 16:
      launch_rmsnorm_row_kernel<16>(x, ldx, g, y, ldy, rows, int(h), eps, s);
      return true;
    case 20:
      launch_rmsnorm_row_kernel<20>(x, ldx, g, y, ldy, rows, int(h), eps, s);
      return true;
    case 32:
      launch_rmsnorm_row_kernel<32>(x, ldx, g, y, ldy, rows, int(h), eps, s);
      return true;
    default:
      return false;
  }
}

// A block owns kBwdRowsPerBlock consecutive rows and writes one partial weight gradient (fixed
// order: deterministic). NV vectors of 8 per thread, held as raw bf16 in two buffers: the next
// row's x and dy load while the current row is reduced across the block and written.
template <int NV>
struct NormRow {
  uint4 x[NV], dy[NV];
};

template <int NV>
__device__ inline void load_norm_row(NormRow<NV>& r, const bf16* x, int64_t ldx, const bf16* dy, int64_t lddy,
                                     int64_t row, int nv) {
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c = threadIdx.x + j * kNormThreads;
    if (c < nv) {
      r.x[j] = *reinterpret_cast<const uint4*>(x + row * ldx + c * kVec);
      r.dy[j] = *reinterpret_cast<const uint4*>(dy + row * lddy + c * kVec);
    }
  }
}

template <int NV>
__device__ inline void norm_bwd_row(const NormRow<NV>& cur, NormRow<NV>& next, bool has_next, const bf16* x,
                                    int64_t ldx, const bf16* g, const bf16* dy, int64_t lddy, bf16* dx, int64_t lddx,
                                    int64_t row, int nv, int h, float eps, float (&acc)[NV][kVec]) {
  float ss = 0.f, dot = 0.f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c = threadIdx.x + j * kNormThreads;
    if (c < nv) {
      float xv[kVec], dv[kVec], gv[kVec];
      unpack8(cur.x[j], xv);
      unpack8(cur.dy[j], dv);
      load8(g + c * kVec, gv);
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        ss += xv[i] * xv[i];
        dot += dv[i] * gv[i] * xv[i];
      }
    }
  }
  if (has_next) load_norm_row(next, x, ldx, dy, lddy, row + 1, nv);
  const float2 red = block_sum2(ss, dot);
  const float rstd = rsqrtf(red.x / h + eps);
  const float coef = red.y * rstd * rstd * rstd / h;  // mean(dy*g*xhat) * rstd
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c = threadIdx.x + j * kNormThreads;
    if (c < nv) {
      float xv[kVec], dv[kVec], gv[kVec], o[kVec];
      unpack8(cur.x[j], xv);
      unpack8(cur.dy[j], dv);
      load8(g + c * kVec, gv);
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        o[i] = dv[i] * gv[i] * rstd - xv[i] * coef;
        acc[j][i] += dv[i] * xv[i] * rstd;
      }
      store8(dx + row * lddx + c * kVec, o);
    }
  }
}

template <int NV>
__global__ void __launch_bounds__(kNormThreads, 2)
    rmsnorm_bwd_kernel(const bf16* x, int64_t ldx, const bf16* g, const bf16* dy, int64_t lddy, bf16* dx, int64_t lddx,
                       float* partial, int64_t rows, int h, float eps) {
  const int nv = h / kVec;
  const int64_t r0 = int64_t(blockIdx.x) * kBwdRowsPerBlock;
  const int64_t r_end = min(r0 + kBwdRowsPerBlock, rows);
  float acc[NV][kVec] = {};
  NormRow<NV> a, b;
  load_norm_row(a, x, ldx, dy, lddy, r0, nv);
  for (int64_t row = r0; row < r_end; row += 2) {  // two rows a turn: the buffers swap roles
    norm_bwd_row(a, b, row + 1 < r_end, x, ldx, g, dy, lddy, dx, lddx, row, nv, h, eps, acc);
    if (row + 1 < r_end) norm_bwd_row(b, a, row + 2 < r_end, x, ldx, g, dy, lddy, dx, lddx, row + 1, nv, h, eps, acc);
  }
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c = threadIdx.x + j * kNormThreads;
    if (c < nv) {
      float4* dst = reinterpret_cast<float4*>(partial + int64_t(blockIdx.x) * h + c * kVec);
      dst[0] = make_float4(acc[j][0], acc[j][1], acc[j][2], acc[j][3]);
      dst[1] = make_float4(acc[j][4], acc[j][5], acc[j][6], acc[j][7]);
    }
  }
}

constexpr int kReduceCols = 32, kReduceSlices = 16;

// Column sums of the partials in a fixed order: thread (x, y) adds partial rows y, y + 16, ... of
// its column, then the 16 slice sums are added in slice order.
__global__ void reduce_partials_kernel(const float* partial, int64_t nblk, int h, bf16* out, bool accumulate) {
  __shared__ float slice_sum[kReduceSlices][kReduceCols];
  const int c = blockIdx.x * kReduceCols + threadIdx.x;
  float s = 0.f;
  if (c < h) {
#pragma unroll 8
    for (int64_t b = threadIdx.y; b < nblk; b += kReduceSlices) s += partial[b * h + c];
  }
  slice_sum[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y != 0 || c >= h) return;
  float total = accumulate ? __bfloat162float(out[c]) : 0.f;
  for (int y = 0; y < kReduceSlices; ++y) total += slice_sum[y][threadIdx.x];
  out[c] = __float2bfloat16(total);
}

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

void check_vec(int64_t h, const char* what) {
  if (h % kVec != 0) throw std::runtime_error(std::string(what) + ": feature size must be a multiple of 8");
}

}  // namespace

void rmsnorm_fwd(const void* x, int64_t ldx, const void* g, void* y, int64_t ldy, int64_t rows, int64_t h, float eps,
                 cudaStream_t s) {
  check_vec(h, "rmsnorm_fwd");
  if (h > kNormThreads * kVec * kNormMaxVec) throw std::runtime_error("rmsnorm_fwd: hidden size above 8192");
  if (rmsnorm_fwd_warp(static_cast<const bf16*>(x), ldx, static_cast<const bf16*>(g), static_cast<bf16*>(y), ldy, rows,
                       h, eps, s)) {
    check_launch("rmsnorm_fwd_warp_kernel");
    return;
  }
  const int threads = h >= 2048 ? kNormThreads : 64;
  rmsnorm_fwd_kernel<<<static_cast<unsigned>(rows), threads, 0, s>>>(
      static_cast<const bf16*>(x), ldx, static_cast<const bf16*>(g), static_cast<bf16*>(y), ldy, int(h), eps);
  check_launch("rmsnorm_fwd_kernel");
}

int64_t rmsnorm_bwd_partial_floats(int64_t rows, int64_t h) {
  return (rows + kBwdRowsPerBlock - 1) / kBwdRowsPerBlock * h;
}

template <int NV>
void launch_rmsnorm_bwd(const void* x, int64_t ldx, const void* g, const void* dy, int64_t lddy, void* dx, int64_t lddx,
                        float* partial_ws, int64_t rows, int64_t h, float eps, cudaStream_t s) {
  const int64_t nblk = (rows + kBwdRowsPerBlock - 1) / kBwdRowsPerBlock;
  rmsnorm_bwd_kernel<NV><<<static_cast<unsigned>(nblk), kNormThreads, 0, s>>>(
      static_cast<const bf16*>(x), ldx, static_cast<const bf16*>(g), static_cast<const bf16*>(dy), lddy,
      static_cast<bf16*>(dx), lddx, partial_ws, rows, int(h), eps);
}

void rmsnorm_bwd(const void* x, int64_t ldx, const void* g, const void* dy, int64_t lddy, void* dx, int64_t lddx,
                 void* dg, float* partial_ws, int64_t rows, int64_t h, float eps, cudaStream_t s, bool accumulate_dg) {
  check_vec(h, "rmsnorm_bwd");
  if (h > kNormThreads * kVec * kNormMaxVec) throw std::runtime_error("rmsnorm_bwd: hidden size above 8192");
  if (rows == 0) return;
  const int64_t vecs_per_thread = (h / kVec + kNormThreads - 1) / kNormThreads;
  switch (vecs_per_thread) {
    case 1:
      launch_rmsnorm_bwd<1>(x, ldx, g, dy, lddy, dx, lddx, partial_ws, rows, h, eps, s);
      break;
    case 2:
      launch_rmsnorm_bwd<2>(x, ldx, g, dy, lddy, dx, lddx, partial_ws, rows, h, eps, s);
      break;
    case 3:
      launch_rmsnorm_bwd<3>(x, ldx, g, dy, lddy, dx, lddx, partial_ws, rows, h, eps, s);
      break;
    default:
      launch_rmsnorm_bwd<kNormMaxVec>(x, ldx, g, dy, lddy, dx, lddx, partial_ws, rows, h, eps, s);
  }
  check_launch("rmsnorm_bwd_kernel");
  const int64_t nblk = (rows + kBwdRowsPerBlock - 1) / kBwdRowsPerBlock;
  reduce_partials_kernel<<<static_cast<unsigned>((h + kReduceCols - 1) / kReduceCols), dim3(kReduceCols, kReduceSlices),
                           0, s>>>(partial_ws, nblk, int(h), static_cast<bf16*>(dg), accumulate_dg);
  check_launch("reduce_partials_kernel");
}

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
