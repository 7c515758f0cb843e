// Attention as torch's math kernel for sdpa runs it (the fallback where the fused kernels refuse).
#include "exact_ops.hpp"
#include "exact_parts.hpp"

namespace remat::parts {

using ops::kFp32;

// torch's math kernel for sdpa (aten/src/ATen/native/transformers/attention.cpp,
// _scaled_dot_product_attention_math), which runs where the fused ones refuse the inputs (fewer
// key/value heads than query heads without enable_gqa): bf16 inputs are cast to fp32
// (allow_fp16_bf16_reduction_math_sdp is off by default), q and k scaled, the masked scores'
// softmax and PV in fp32. Saved: the scaled q and k, v in fp32 and the fp32 probabilities. Backward
// holds three more fp32 score-sized tensors (the probabilities' gradient and the softmax's two);
// forward the scores beside their softmax (peak-traces-h200/unseen10: Falcon-7B).
void add_math_sdpa(Block& b, const RankShape& r, double nh, double g, double hd, double vd, double fwd_flops) {
  const double rows = r.tokens(), scores = r.b * nh * r.s * r.s;
  b.tensors.push_back({"q32", rows * nh * hd * kFp32});
  b.tensors.push_back({"k32", rows * g * hd * kFp32});
  b.tensors.push_back({"v32", rows * g * vd * kFp32});
  b.tensors.push_back({"probs32", scores * kFp32});
  OpDef op = ops::attention("sdpa_math", fwd_flops, r.s, hd, {"q32", "k32", "v32", "probs32"});
  op.materialized_scores = true;
  op.gemm_flops_each = fwd_flops;
  // bytes per score: forward writes the fp32 scores, adds the mask in place, softmax reads and writes,
  // PV reads (4 + 8 + 8 + 4); backward writes and reads the probabilities' gradient, the softmax's
  // gradient, and QK^T's backward reads it (8 + 12 + 4)
  op.fwd_bytes = 24 * scores;
  op.bwd_bytes = 24 * scores;
  op.working_bytes = 3 * scores * kFp32;
  op.fwd_working_bytes = scores * kFp32;
  b.ops.push_back(op);
  b.attention_stats = {"probs32"};
}

}  // namespace remat::parts
