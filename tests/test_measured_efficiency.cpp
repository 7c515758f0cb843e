// Kernel efficiency of the committed H200 run (reports/gpu/measurements-h200.json),
// recomputed from its per-kernel records (none strategy) against the datasheet
// peaks in hardware/h200.yaml (989 TFLOP/s dense bf16, 4800 GB/s HBM): the
// targets of the backend issue at the paper's length and above (s >= 4096).
#include <gtest/gtest.h>

#include <map>

#include "remat/io/measurements.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kFile = std::string(REMAT_TEST_DATA) + "/../reports/gpu/measurements-h200.json";

struct CaseEfficiency {
  double best_gemm = 0;                  // fraction of peak FLOP/s, GEMMs of >= 1e11 FLOPs
  double attention = 0;                  // forward + backward FLOPs over their time, of peak
  std::map<std::string, double> memory;  // kind -> fraction of HBM of its largest instance
};

CaseEfficiency efficiency_of(const MeasuredCase& c, double peak_flops, double peak_bytes_per_s) {
  CaseEfficiency e;
  double attn_flops = 0, attn_s = 0;
  std::map<std::string, double> largest_bytes;
  for (const MeasuredKernel& k : c.kernels) {
    if (k.kind == "gemm" && k.flops >= 1e11) e.best_gemm = std::max(e.best_gemm, k.flops / k.time_s / peak_flops);
    if (k.kind == "attention_fwd" || k.kind == "attention_bwd") attn_flops += k.flops, attn_s += k.time_s;
    const bool memory_bound = k.kind == "rmsnorm" || k.kind == "rmsnorm_bwd" || k.kind == "swiglu";
    if (memory_bound && k.bytes_moved > largest_bytes[k.kind]) {
      largest_bytes[k.kind] = k.bytes_moved;
      e.memory[k.kind] = k.bytes_moved / k.time_s / peak_bytes_per_s;
    }
  }
  if (attn_s > 0) e.attention = attn_flops / attn_s / peak_flops;
  return e;
}

std::map<std::string, std::map<int64_t, CaseEfficiency>> committed_efficiency() {
  const HardwareSpec hw = test::hardware("h200");
  const Measurements m = parse_measurements(test::read_text(kFile), kFile);
  std::map<std::string, std::map<int64_t, CaseEfficiency>> out;
  for (const MeasuredCase& c : m.cases)
    if (c.strategy == "none") out[c.block][c.dim("s")] = efficiency_of(c, hw.peak_bf16_flops, hw.hbm_bytes_per_s);
  return out;
}

TEST(MeasuredEfficiency, LargestGemmsReachSeventyPercentOfPeak) {
  for (const auto& [block, by_s] : committed_efficiency())
    for (const auto& [s, e] : by_s)
      if (s >= 4096) EXPECT_GE(e.best_gemm, 0.70) << block << " s=" << s;
}

TEST(MeasuredEfficiency, RmsNormAndSwigluForwardReachSeventyFivePercentOfHbm) {
  int checked = 0;
  for (const auto& [block, by_s] : committed_efficiency())
    for (const auto& [s, e] : by_s) {
      if (s < 4096) continue;
      for (const char* kind : {"rmsnorm", "swiglu"})
        if (e.memory.count(kind)) {
          EXPECT_GE(e.memory.at(kind), 0.75) << block << " " << kind << " s=" << s;
          ++checked;
        }
    }
  EXPECT_EQ(checked, 21);  // RMSNorm in 5 blocks, SwiGLU in mlp and moe, at 3 lengths
}

// The backward is not a target of the issue; this pins the rewrite that took it
// from ~0.21 (a 16-block serial reduction of the weight gradient) to 0.55-0.74.
TEST(MeasuredEfficiency, RmsNormBackwardAboveHalfOfHbm) {
  for (const auto& [block, by_s] : committed_efficiency())
    for (const auto& [s, e] : by_s)
      if (s >= 4096) EXPECT_GE(e.memory.at("rmsnorm_bwd"), 0.50) << block << " s=" << s;
}

// Attention forward + backward (FlashAttention FLOP convention) reaches 45% of
// peak at s >= 4096 except MLA at s = 4096: cuDNN's d_qk = 192 backward under
// the GPU's 700 W power cap sits at 0.42-0.43 sustained (reports/gpu/README.md,
// where PyTorch's own cuDNN SDPA reaches the same on this shape).
TEST(MeasuredEfficiency, AttentionForwardBackward) {
  const auto eff = committed_efficiency();
  for (const char* block : {"gqa", "mla"})
    for (const auto& [s, e] : eff.at(block)) {
      if (s < 4096) continue;
      const bool known_gap = std::string(block) == "mla" && s == 4096;
      EXPECT_GE(e.attention, known_gap ? 0.40 : 0.45) << block << " s=" << s;
    }
  EXPECT_LT(eff.at("mla").at(4096).attention, 0.45) << "the MLA gap closed: update reports/gpu/README.md";
}

}  // namespace
}  // namespace remat
