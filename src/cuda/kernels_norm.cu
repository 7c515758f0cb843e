// RMSNorm forward and backward kernels (the forward variants and how one is chosen, the
// backward's fixed-order weight-gradient reduction): src/cuda/README.md, reports/gpu/README.md.
#include <cuda_bf16.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "check.hpp"
#include "kernels.hpp"
#include "launch.hpp"
#include "vec.cuh"

namespace remat::cuda::k {

namespace {

constexpr int kNormThreads = 256;
constexpr int kNormMaxVec = 4;  // h <= 256 * 8 * 4 = 8192
constexpr int kBwdRowsPerBlock = 16;

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
  return dispatch_int<1, 2, 4, 6, 8, 16, 20, 32>(h / 256, [&](auto vpl) {
    launch_rmsnorm_row_kernel<decltype(vpl)::value>(x, ldx, g, y, ldy, rows, int(h), eps, s);
  });
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
  dispatch_int<1, 2, 3, kNormMaxVec>(vecs_per_thread, [&](auto nv) {
    launch_rmsnorm_bwd<decltype(nv)::value>(x, ldx, g, dy, lddy, dx, lddx, partial_ws, rows, h, eps, s);
  });
  check_launch("rmsnorm_bwd_kernel");
  const int64_t nblk = (rows + kBwdRowsPerBlock - 1) / kBwdRowsPerBlock;
  reduce_partials_kernel<<<static_cast<unsigned>((h + kReduceCols - 1) / kReduceCols), dim3(kReduceCols, kReduceSlices),
                           0, s>>>(partial_ws, nblk, int(h), static_cast<bf16*>(dg), accumulate_dg);
  check_launch("reduce_partials_kernel");
}

}  // namespace remat::cuda::k
