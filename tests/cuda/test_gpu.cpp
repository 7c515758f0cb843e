// GPU checks of the backend: skipped with a message when no CUDA device is present (CI).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "attention.hpp"
#include "bench.hpp"
#include "correctness.hpp"
#include "ops.hpp"
#include "presets.hpp"

using namespace remat::cuda;

namespace {
bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
}  // namespace

TEST(Gpu, StrategiesBitEqualAndMatchReference) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device: GPU checks of remat-bench skipped";
  size_t free_b = 0, total_b = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
  Ctx c(int64_t(free_b / 2));
  RunOpts o;
  auto rows = run_correctness(c, o);
  for (auto& r : rows) {
    ASSERT_FALSE(r.contains("error")) << r.dump();
    EXPECT_TRUE(r["fp32_reference"]["pass"].get<bool>()) << r["block"];
    for (auto& [st, eq] : r["bit_equal_vs_none"].items()) EXPECT_TRUE(eq.get<bool>()) << r["block"] << " " << st;
  }
}

TEST(Gpu, ArenaCountsExactBytes) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device: GPU checks of remat-bench skipped";
  Arena a(1 << 20);
  Buf x = a.alloc("x", 1000, MemClass::activation);
  Buf y = a.alloc("y", 24, MemClass::activation);
  EXPECT_EQ(a.live_bytes(MemClass::activation), 1024);
  a.release(x);
  EXPECT_EQ(a.live_bytes(MemClass::activation), 24);
  EXPECT_EQ(a.peak_bytes(MemClass::activation), 1024);
  a.release(y);
}

// A StreamBP chunk's attention: queries [a, e) against keys [0, e) with the bottom-right causal
// mask give the same rows of O and LSE as the whole sequence's causal attention.
TEST(Gpu, BottomRightAttentionEqualsRowsOfFullAttention) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device: GPU checks of remat-bench skipped";
  const int64_t s = 256, hq = 4, hk = 2, d = 64, a = 128, e = 192, rows = e - a;
  Ctx c(int64_t(1) << 30);
  const int64_t ldq = hq * d, ldkv = hk * d;
  Buf q = c.act("q", 2 * s * ldq), k = c.act("k", 2 * s * ldkv), v = c.act("v", 2 * s * ldkv);
  ops::fill(c, q, 1, 1.f), ops::fill(c, k, 2, 1.f), ops::fill(c, v, 3, 1.f);
  AttnDims full;
  full.hq = hq, full.hk = hk, full.s = s, full.dqk = full.dv = d;
  full.q_stride = full.o_stride = bshd_strides(s, d, ldq);
  full.k_stride = full.v_stride = bshd_strides(s, d, ldkv);
  Buf o = c.act("o", 2 * s * ldq), lse = c.act("lse", 4 * s * hq);
  auto ws = [&](const AttnDims& ad) {
    const int64_t bytes = attn_fwd_workspace_bytes(c, ad);
    return bytes > 0 ? c.act("ws", bytes) : Buf{};
  };
  Buf ws_full = ws(full);
  attn_fwd(c, "full", full, q.ptr, k.ptr, v.ptr, o.ptr, lse.as<float>(), ws_full.ptr);
  AttnDims part = full;
  part.s = rows, part.skv = e;
  part.q_stride = part.o_stride = bshd_strides(rows, d, ldq);
  part.k_stride = part.v_stride = bshd_strides(e, d, ldkv);
  Buf o2 = c.act("o2", 2 * rows * ldq), lse2 = c.act("lse2", 4 * rows * hq);
  Buf ws_part = ws(part);
  attn_fwd(c, "chunk", part, q.as<char>() + 2 * a * ldq, k.ptr, v.ptr, o2.ptr, lse2.as<float>(), ws_part.ptr);
  std::vector<uint16_t> of(s * ldq), oc(rows * ldq);
  std::vector<float> lf(s * hq), lc(rows * hq);
  ASSERT_EQ(cudaMemcpy(of.data(), o.ptr, 2 * of.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(oc.data(), o2.ptr, 2 * oc.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(lf.data(), lse.ptr, 4 * lf.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(lc.data(), lse2.ptr, 4 * lc.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  auto f32 = [](uint16_t b) {
    const uint32_t bits = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  double worst = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < ldq; ++j)
      worst = std::max(worst, double(std::fabs(f32(oc[r * ldq + j]) - f32(of[(a + r) * ldq + j]))));
  EXPECT_LT(worst, 2e-2);  // bf16 outputs of |v| <= 1: a few ulp
  double worst_lse = 0;    // stats are [heads, rows]
  for (int64_t hh = 0; hh < hq; ++hh)
    for (int64_t r = 0; r < rows; ++r)
      worst_lse = std::max(worst_lse, double(std::fabs(lc[hh * rows + r] - lf[hh * s + a + r])));
  EXPECT_LT(worst_lse, 1e-3);
}

// StreamBP blocks: gradients with 4 chunks equal the unchunked ones within the reference tolerance.
TEST(Gpu, StreambpChunkedGradientsMatchUnchunked) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device: GPU checks of remat-bench skipped";
  size_t free_b = 0, total_b = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
  Ctx c(int64_t(free_b / 2));
  for (auto& r : streambp_check(c, RunOpts{}, 4)) {
    ASSERT_FALSE(r.contains("error")) << r.dump();
    EXPECT_TRUE(r["pass"].get<bool>()) << r.dump();
  }
}
