// GPU checks of the backend: skipped with a message when no CUDA device is present (CI).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "bench.hpp"
#include "correctness.hpp"
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
