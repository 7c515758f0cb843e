// The mixers of hybrid models as recompute blocks: Mamba-2 (SSD) and Gated DeltaNet, each
// from its input norm to its out_proj, with what the training kernels save for backward.
// Mamba-2: mamba_ssm's mamba_split_conv1d_scan_combined (what transformers' Nemotron-H and
// Mamba-2 layers run in training) saves the in_proj output (z, x, B, C, dt), the scan output
// before the gated norm and the norm's 1/rms; the conv output and the chunk states are
// recomputed in backward, and out_proj's input (the gated norm's output) too.
// Gated DeltaNet: fla's causal_conv1d and chunk_gated_delta_rule (what transformers'
// Qwen3-Next layer runs with flash-linear-attention installed): the conv saves its input, the
// rule its q, k, v, decay, beta and the chunk's WY matrix (64 fp32 per value head and row),
// the gated norm its input, gate and 1/rms, out_proj its input.
#include <algorithm>

#include "exact_ops.hpp"
#include "exact_parts.hpp"
#include "remat/cost/exact_blocks.hpp"

namespace remat {

using ops::kBf16;
using ops::kFp32;

namespace {

// A chunked scan as one op: model FLOPs of its forward, its backward twice that and
// executed 2.5 times (the chunk states are recomputed), sized by one chunk's GEMM.
OpDef chunked_scan(const std::string& name, double fwd_flops, double chunk_gemm_flops, std::vector<std::string> saves) {
  OpDef op = ops::gemm(name, 1, 1, 1, std::move(saves));
  op.fwd_flops = fwd_flops;
  op.bwd_flops = 2 * fwd_flops;
  op.bwd_exec_flops = 2.5 * fwd_flops;
  op.gemm_flops_each = chunk_gemm_flops;
  return op;
}

}  // namespace

Block mamba2_block(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "mamba2";
  const double t = double(r.tp), rows = r.tokens(), h = double(m.hidden_size);
  const double heads = double(m.mamba_num_heads) / t, p = double(m.mamba_head_dim);
  const double n = double(m.ssm_state_size), groups = double(m.mamba_n_groups) / t, q = double(m.mamba_chunk_size);
  const double inner = heads * p, conv_dim = inner + 2 * groups * n, projected = inner + conv_dim + heads;
  parts::add_input_norm(b, r, h, true, 1);
  b.ops.push_back(parts::linear(b, r, "in_proj", rows, h, projected, "x_norm", {}));
  b.tensors.push_back({"zxbcdt", rows * projected * kBf16});
  b.tensors.push_back({"ssm_y", rows * inner * kBf16});
  b.tensors.push_back({"ssm_rstd", rows * groups * kFp32});
  // conv1d over x, B, C (kernel K), then per head and token: the chunk's C B^T and its product
  // with x under the causal mask (Q (N + P)), the chunk state B^T x and its read-out C h (4 N P)
  const double conv_flops = 2 * rows * conv_dim * double(m.mamba_conv_kernel);
  const double scan_flops = rows * heads * (q * (n + p) + 4 * n * p) + conv_flops;
  b.ops.push_back(chunked_scan("ssd_scan", scan_flops, 2 * q * q * std::max(n, p), {"zxbcdt"}));
  // the gated RMSNorm (y * silu(z)) then out_proj, fused: both read y, z and 1/rms
  b.ops.push_back(
      ops::streaming("gated_norm", 3 * rows * inner * kBf16, 5 * rows * inner * kBf16, {"ssm_y", "ssm_rstd"}));
  OpDef out = parts::linear(b, r, "out_proj", rows, inner, h, "ssm_y", {});
  b.ops.push_back(out);
  return b;
}

Block gated_deltanet_block(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "gated_deltanet";
  const double t = double(r.tp), rows = r.tokens(), h = double(m.hidden_size);
  const double kh = double(m.linear_num_key_heads) / t, vh = double(m.linear_num_value_heads) / t;
  const double dk = double(m.linear_key_head_dim), dv = double(m.linear_value_head_dim);
  const double kd = kh * dk, vd = vh * dv, conv_dim = 2 * kd + vd, chunk = 64;
  parts::add_input_norm(b, r, h, true, 2);
  b.ops.push_back(parts::linear(b, r, "in_proj_qkvz", rows, h, conv_dim + vd, "x_norm", {}));
  b.ops.push_back(parts::linear(b, r, "in_proj_ba", rows, h, 2 * vh, "x_norm", {}));
  b.tensors.push_back({"qkvz", rows * (conv_dim + vd) * kBf16});
  b.tensors.push_back({"conv_in", rows * conv_dim * kBf16});  // q, k, v gathered for the conv
  b.tensors.push_back({"qkv", rows * conv_dim * kBf16});      // the conv's output (silu), the rule's q, k, v
  b.tensors.push_back({"decay_beta", rows * vh * (kFp32 + kBf16)});
  b.tensors.push_back({"wy", rows * vh * chunk * kFp32});
  b.tensors.push_back({"gdn_o", rows * vd * kBf16});
  b.tensors.push_back({"gdn_rstd", rows * vh * kFp32});
  b.tensors.push_back({"gdn_o_normed", rows * vd * kBf16});
  b.ops.push_back(ops::streaming("conv1d", 2 * rows * conv_dim * kBf16, 3 * rows * conv_dim * kBf16, {"conv_in"}));
  // per value head and token: the chunk's k k^T and q k^T (2 C dk), the WY update and output
  // within the chunk (2 C dv), the state update and read-out (6 dk dv)
  const double rule_flops = rows * vh * (2 * chunk * (dk + dv) + 6 * dk * dv);
  b.ops.push_back(
      chunked_scan("gated_delta_rule", rule_flops, 2 * chunk * chunk * std::max(dk, dv), {"qkv", "decay_beta", "wy"}));
  b.ops.push_back(
      ops::streaming("gated_norm", 3 * rows * vd * kBf16, 5 * rows * vd * kBf16, {"gdn_o", "qkvz", "gdn_rstd"}));
  b.ops.push_back(parts::linear(b, r, "out_proj", rows, vd, h, "gdn_o_normed", {}));
  return b;
}

Block mixer_out_glue(const RankShape& r, int64_t hidden) {
  Block b;
  b.name = "mixer.out";
  if (r.tp > 1) b.ops.push_back(parts::output_reduce(r, double(hidden)));
  b.ops.push_back(parts::residual_add(r, double(hidden)));
  return b;
}

}  // namespace remat
