// efficiency.attention_by_seq: flash attention's fraction of peak by sequence
// length, read from the hardware YAML, interpolated in log2(seq) by op_time,
// fitted per length by remat calibrate and written back into the YAML.
#include <gtest/gtest.h>

#include <cmath>

#include "remat/cost/op_time.hpp"
#include "remat/io/measurements.hpp"
#include "remat/io/spec_loader.hpp"
#include "remat/spec/framework.hpp"
#include "remat/validate/calibrate.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kHardware =
    "name: Tiny\npeak_bf16_tflops: 1000\nhbm_GiB: 80\nhbm_GBps: 2000\nhost_link_GBps: 32\n"
    "nvlink_domain_gpus: 8\nefficiency:\n  gemm_by_flops:\n    - {flops: 1.0e+9, fraction: 0.5}\n"
    "  attention_fwd: 0.6\n  attention_bwd: 0.5\n  memory_bound: 0.8\n  host_link: 0.8\n  nvlink: 0.8\n"
    "  network: 0.8\n";

const std::string kPoints =
    "  attention_by_seq:\n    - {seq: 1024, fwd: 0.30, bwd: 0.20}\n    - {seq: 4096, fwd: 0.50, bwd: 0.40}\n"
    "    - {seq: 16384, fwd: 0.60, bwd: 0.50}\n";

TEST(AttentionBySeq, LoadsAndInterpolatesInLog2Seq) {
  const HardwareSpec hw = parse_hardware_yaml(kHardware + kPoints, "tiny.yaml");
  ASSERT_EQ(hw.efficiency.attention_by_seq.size(), 3u);
  const Efficiency& e = hw.efficiency;
  // 2048 is one of the two doublings from 1024 to 4096: halfway
  EXPECT_NEAR(attention_efficiency(e, 2048).fwd, 0.40, 1e-12);
  EXPECT_NEAR(attention_efficiency(e, 2048).bwd, 0.30, 1e-12);
  // 8192: halfway from 4096 to 16384
  EXPECT_NEAR(attention_efficiency(e, 8192).fwd, 0.55, 1e-12);
  // clamped at both ends
  EXPECT_DOUBLE_EQ(attention_efficiency(e, 128).bwd, 0.20);
  EXPECT_DOUBLE_EQ(attention_efficiency(e, 1 << 20).fwd, 0.60);
  // without points the scalars apply at every length
  const HardwareSpec plain = parse_hardware_yaml(kHardware, "plain.yaml");
  EXPECT_DOUBLE_EQ(attention_efficiency(plain.efficiency, 2048).fwd, 0.6);
  EXPECT_DOUBLE_EQ(attention_efficiency(plain.efficiency, 2048).bwd, 0.5);
}

TEST(AttentionBySeq, OpTimeUsesTheOpsSequenceLength) {
  const HardwareSpec hw = parse_hardware_yaml(kHardware + kPoints, "tiny.yaml");
  OpDef op;
  op.kind = OpKind::attention;
  op.fwd_flops = 1e12;
  op.bwd_exec_flops = 2.5e12;
  op.attention_seq = 2048;
  const OpTime t = op_time(op, hw);
  EXPECT_NEAR(t.fwd_s, 1e12 / (1e15 * 0.40), 1e-12);
  EXPECT_NEAR(t.bwd_s, 2.5e12 / (1e15 * 0.30), 1e-12);
}

// frameworks.hf.attention: torch SDPA's fractions by head dim and seq. hf's hardware takes them
// (apply_framework); a layer's attention op reads the points at its head dim, linear between
// measured head dims and in log2(seq) within one, clamped at the ends; an op without a head dim
// and the generic profile keep the file's flash figures.
TEST(AttentionBySeq, FrameworkGridByHeadDimThenLog2Seq) {
  const std::string grid =
      "frameworks:\n  hf:\n    attention:\n"
      "      - {head_dim: 64, seq: 4096, fwd: 0.30, bwd: 0.20}\n"
      "      - {head_dim: 64, seq: 16384, fwd: 0.50, bwd: 0.40}\n"
      "      - {head_dim: 128, seq: 4096, fwd: 0.40, bwd: 0.30}\n"
      "      - {head_dim: 128, seq: 16384, fwd: 0.70, bwd: 0.50}\n";
  const HardwareSpec file = parse_hardware_yaml(kHardware + grid, "tiny.yaml");
  ASSERT_EQ(file.framework_fit(kHfFramework)->attention.size(), 4u);
  EXPECT_TRUE(file.efficiency.attention_by_head_dim.empty());
  const HardwareSpec hf = apply_framework(file, kHfFramework);
  const Efficiency& e = hf.efficiency;
  // d 64 at 8192, halfway from 4096 to 16384 in log2: 0.40 / 0.30; d 128 there: 0.55 / 0.40;
  // d 96 halfway between them: 0.475 / 0.35
  EXPECT_NEAR(attention_efficiency(e, 8192, 64).fwd, 0.40, 1e-12);
  EXPECT_NEAR(attention_efficiency(e, 8192, 128).bwd, 0.40, 1e-12);
  EXPECT_NEAR(attention_efficiency(e, 8192, 96).fwd, 0.475, 1e-12);
  EXPECT_NEAR(attention_efficiency(e, 8192, 96).bwd, 0.35, 1e-12);
  // d 80 a quarter of the way: 0.40 + (0.55 - 0.40) / 4
  EXPECT_NEAR(attention_efficiency(e, 8192, 80).fwd, 0.4375, 1e-12);
  // clamped: below d 64, above d 128, below 4096 and above 16384 tokens
  EXPECT_NEAR(attention_efficiency(e, 8192, 32).fwd, 0.40, 1e-12);
  EXPECT_NEAR(attention_efficiency(e, 1 << 20, 256).fwd, 0.70, 1e-12);
  EXPECT_NEAR(attention_efficiency(e, 1024, 128).bwd, 0.30, 1e-12);
  // no head dim stated, or another profile: the file's scalars
  EXPECT_DOUBLE_EQ(attention_efficiency(e, 8192, 0).fwd, 0.6);
  EXPECT_DOUBLE_EQ(attention_efficiency(apply_framework(file, kGenericFramework).efficiency, 8192, 64).bwd, 0.5);
  OpDef op;
  op.kind = OpKind::attention;
  op.fwd_flops = 1e12;
  op.bwd_exec_flops = 2.5e12;
  op.attention_seq = 16384;
  op.attention_head_dim = 64;
  const OpTime t = op_time(op, hf);
  EXPECT_NEAR(t.fwd_s, 1e12 / (1e15 * 0.50), 1e-12);
  EXPECT_NEAR(t.bwd_s, 2.5e12 / (1e15 * 0.40), 1e-12);
}

// frameworks.hf.masked_attention: the kernel under a dense boolean mask (DeepSeek sparse attention
// as transformers runs it), read for ops that say so; and fp32_gemm, a large fp32 GEMM's fraction
// of the fp32 peak, for the ops bound by the fp32 units. Without them: the causal grid, and the
// adapter GEMMs' bytes at memory_bound.
TEST(AttentionBySeq, MaskedKernelAndFp32GemmFromTheFrameworkEntry) {
  const std::string entry =
      "peak_fp32_tflops: 50\nframeworks:\n  hf:\n    attention:\n"
      "      - {head_dim: 128, seq: 4096, fwd: 0.60, bwd: 0.40}\n"
      "    masked_attention:\n      - {head_dim: 128, seq: 4096, fwd: 0.30, bwd: 0.20}\n"
      "    fp32_gemm: 0.5\n";
  const HardwareSpec hf = apply_framework(parse_hardware_yaml(kHardware + entry, "tiny.yaml"), kHfFramework);
  OpDef op;
  op.kind = OpKind::attention;
  op.fwd_flops = 1e12;
  op.bwd_exec_flops = 2.5e12;
  op.attention_seq = 4096;
  op.attention_head_dim = 128;
  EXPECT_NEAR(op_time(op, hf).fwd_s, 1e12 / (1e15 * 0.60), 1e-12);
  op.dense_mask = true;
  EXPECT_NEAR(op_time(op, hf).fwd_s, 1e12 / (1e15 * 0.30), 1e-12);
  EXPECT_NEAR(op_time(op, hf).bwd_s, 2.5e12 / (1e15 * 0.20), 1e-12);
  OpDef gemm;
  gemm.kind = OpKind::memory_bound;
  gemm.fwd_bytes = 1e9;
  gemm.fp32_adapter_flops = 1e12;
  gemm.fp32_compute_bound = true;
  EXPECT_NEAR(op_time(gemm, hf).fwd_s, 1e12 / (50e12 * 0.5), 1e-12);
  const HardwareSpec without = apply_framework(parse_hardware_yaml(kHardware, "tiny.yaml"), kHfFramework);
  EXPECT_NEAR(op_time(op, without).fwd_s, 1e12 / (1e15 * 0.6), 1e-12);  // the file's flash scalar
  EXPECT_NEAR(op_time(gemm, without).fwd_s, 1e9 / (2000e9 * 0.8), 1e-12);
  // a fraction outside (0, 1] is refused, naming the key
  try {
    parse_hardware_yaml(kHardware + "frameworks:\n  hf:\n    fp32_gemm: 1.5\n", "tiny.yaml");
    FAIL() << "fp32_gemm 1.5 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("frameworks.hf.fp32_gemm"), std::string::npos) << e.what();
  }
}

// Calibrating the committed run: a point per fit length, the held-out
// lengths predicted at least as well as with the two scalars alone, and the
// written YAML holds the points (inserted once, replaced on a second pass).
TEST(AttentionBySeq, CalibrateFitsAPointPerLength) {
  const std::string file = std::string(REMAT_TEST_DATA) + "/../reports/gpu/measurements-h200.json";
  const Measurements m = parse_measurements(test::read_text(file), file);
  const Calibration c = calibrate(m, test::hardware("h200"), {1024, 4096, 16384}, {2048, 8192}, file);
  const auto& pts = c.after.efficiency.attention_by_seq;
  ASSERT_EQ(pts.size(), 3u);
  EXPECT_EQ(pts[0].seq, 1024);
  EXPECT_EQ(pts[2].seq, 16384);
  for (size_t i = 1; i < pts.size(); ++i) {  // cuDNN's efficiency grows with s on this GPU
    EXPECT_GT(pts[i].fwd, pts[i - 1].fwd);
    EXPECT_GT(pts[i].bwd, pts[i - 1].bwd);
  }
  Calibration scalars_only = c;
  scalars_only.after.efficiency.attention_by_seq.clear();
  const double with_points = summarize(validate_cases(m, c.after, file), {2048, 8192}).mape_phases;
  const double without = summarize(validate_cases(m, scalars_only.after, file), {2048, 8192}).mape_phases;
  EXPECT_LT(with_points, without);

  const std::string once = calibrated_hardware_yaml(kHardware, c, "m.json");
  const HardwareSpec reread = parse_hardware_yaml(once, "once.yaml");
  ASSERT_EQ(reread.efficiency.attention_by_seq.size(), 3u);
  EXPECT_NEAR(reread.efficiency.attention_by_seq[1].bwd, pts[1].bwd, 0.0005);
  const std::string twice = calibrated_hardware_yaml(once, c, "m.json");
  EXPECT_EQ(twice.find("attention_by_seq:"), twice.rfind("attention_by_seq:"));
  EXPECT_EQ(parse_hardware_yaml(twice, "twice.yaml").efficiency.attention_by_seq.size(), 3u);
}

}  // namespace
}  // namespace remat
