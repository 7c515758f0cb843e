// Attention with materialized scores: torch's math kernel for sdpa (the fallback where the fused
// kernels refuse) and transformers' eager path.
#include "exact_ops.hpp"
#include "exact_parts.hpp"

namespace remat::parts {

using ops::kBf16;
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

// transformers' eager_attention_forward (the dense layers' and, with keys of nope + rope, DeepSeek's
// MLA): QK^T materialized, masked, the softmax and PV; what its autograd saves and holds, by family.
// `fwd` counts QK^T and PV under the causal half; the kernels compute the whole square.
void add_eager_attention(Block& b, const RankShape& r, const ModelSpec& m, double nh, double hd, double vd, double fwd,
                         const std::string& k, const std::string& v, bool sinks) {
  const double rows = r.tokens();
  b.tensors.push_back({"probs", r.b * nh * r.s * r.s * kBf16});  // materialized softmax
  std::vector<std::string> saves = {"q", k, v, "probs"};
  // Transformers' eager path: softmax(dtype=float32), saved, then cast to bf16 for PV; GPT-OSS's and
  // MiMo-V2-Flash's softmax in bf16, after the row max, whose backward keeps its int64 indices
  const bool bf16_softmax = r.layouts_from_model_code && m.eager_softmax_bf16;
  const bool fp32_softmax = r.softmax_fp32 && !bf16_softmax;
  const bool promoted = bf16_softmax && r.autocast;                               // run in fp32 all the same (below)
  const bool drops_probs = r.layouts_from_model_code && m.attention_dropout > 0;  // dropout in training
  if (fp32_softmax) b.tensors.push_back({"probs32", r.b * nh * r.s * r.s * kFp32}), saves.push_back("probs32");
  if (bf16_softmax && m.eager_softmax_subtracts_max)
    b.tensors.push_back({"row_max_index", r.b * nh * r.s * 8}), saves.push_back("row_max_index");
  // under autocast the mask (the model's dtype) and the sink parameter are fp32: adding the mask and
  // torch.cat with the sinks promote the bf16 scores, so the softmax runs and saves in fp32 (sink
  // column included) and PV saves its bf16 cast of the probabilities (GPT-OSS-120B cut to 6 layers,
  // mixed DPO under eager: six fp32 softmax outputs of 512.5 MiB beside the bf16 ones, -3.31% while
  // uncounted, steps-random-blind8-h200.jsonl; MiMo-V2-Flash's full layers, without sinks, the same:
  // peak-traces-h200/random-blind34)
  if (promoted)
    b.tensors.push_back({"probs32", r.b * nh * r.s * (r.s + (sinks ? 1 : 0)) * kFp32}), saves.push_back("probs32");
  // Gemma 2's score cap (scores / c, tanh, * c): the tanh saves its bf16 output for its gradient
  if (r.layouts_from_model_code && m.attention_logit_softcap > 0)
    b.tensors.push_back({"scores_tanh", r.b * nh * r.s * r.s * kBf16}), saves.push_back("scores_tanh");
  // dropout on the probabilities in training: its bool mask and the dropped copy, which PV saves in
  // place of the bf16 probabilities (those an fp32 softmax casts; a bf16 softmax saves its own)
  if (drops_probs) {
    const double square = r.b * nh * r.s * r.s;
    b.tensors.push_back({"probs_dropout_mask", square});
    saves.push_back("probs_dropout_mask");
    if (!fp32_softmax) b.tensors.push_back({"probs_dropped", square * kBf16}), saves.push_back("probs_dropped");
  }
  OpDef op = ops::attention("attention", fwd, r.s, hd, saves);
  // bytes per score: forward writes QK^T, masks it in place, reads it into the
  // softmax, PV reads the probabilities (2 + 4 + 4 + 2); backward writes and
  // reads the probabilities' gradient, the softmax gradient, autograd's clone
  // for the in-place mask and the masked copy, and QK^T's backward reads it
  // twice (2 + 2 + 6 + 4 + 4 + 4)
  const double scores = r.b * nh * r.s * r.s;
  op.materialized_scores = true;
  op.gemm_flops_each = 2 * rows * r.s * nh * (hd + vd);
  op.fwd_bytes = 12 * scores;
  op.bwd_bytes = 22 * scores;
  if (r.layouts_from_model_code && fp32_softmax) {
    // transformers' eager_attention_forward as written: QK^T (2), `* scaling` (2 + 2), `+ causal_mask`
    // (2, the mask's 2, 2), softmax(dtype=float32), which ATen runs as a cast to fp32 (2 + 4) and an
    // fp32 softmax (4 + 4), .to(bf16) (4 + 2), PV reads (2); 34, where 26 left out the softmax's own
    // fp32 pass (the EAGLE-3 draft's profile, profile-eagle3-draft-h200.jsonl: a float-to-float
    // softmax kernel beside the copies; 59 of the 72 time ratios it moved came closer); backward:
    // PV's (2 + 2), the cast's (2 + 4), the softmax's on fp32 to a bf16 gradient (4 + 4 + 2), the
    // scaling's (2 + 2), QK^T's reads (2 + 2)
    op.fwd_bytes = 34 * scores;
    op.bwd_bytes = 28 * scores;
  }
  // Gemma 2's score cap (scores / c, tanh, * c): three elementwise passes each way (2 + 2 each; backward
  // the product's 2 + 2, tanh's 2 + 2 + 2, the division's 2 + 2)
  if (r.layouts_from_model_code && m.attention_logit_softcap > 0)
    op.fwd_bytes += 12 * scores, op.bwd_bytes += 14 * scores;
  // the softmax's backward holds three fp32 score-sized gradient buffers beside the saved fp32
  // probabilities; PV's backward has freed the bf16 ones by then (torch's allocator history of an
  // eager step, reports/hf/peak-traces-h100). A softmax autocast promotes likewise (MiMo-V2-Flash cut to
  // 2, mixed LoRA 3 x 4096 under eager: +7.06% reentrant, -6.09% without checkpointing while the bf16
  // cast was held and the full layer's softmax priced in bf16; peak-traces-h200/random-blind34)
  if (fp32_softmax || promoted) op.working_bytes = 3 * b.tensor_bytes("probs32") - scores * kBf16;
  // forward, at the softmax: the bf16 masked scores and the fp32 copy softmax(dtype=float32) makes of
  // them beside its fp32 output, before the bf16 probabilities exist (2 + 4 beyond the saved 4 + 2).
  // The peak of a step whose attention records no graph (a frozen first layer before its first
  // adapter: DeepSeek-V3's EAGLE-3 draft under MLP adapters, GRPO 4 x 4k, 10 bytes a score at its peak
  // in steps-random-blind18-h200.jsonl, -52.14% while uncounted)
  if (fp32_softmax && r.layouts_from_model_code) op.fwd_working_bytes = 4 * scores;
  // dropout on the probabilities: its backward, run before the softmax's, has freed its bool mask
  if (fp32_softmax && drops_probs) op.working_bytes -= scores;
  // the layer's returned probabilities and the zero gradient autograd makes for them (reentrant:
  // peak-traces-h200/gptj/); a bf16 softmax returns the tensor PV saved (Falcon: .../unseen11)
  if (r.layouts_from_model_code && m.layer_returns_attention_probs)
    op.reentrant_held_bytes = (bf16_softmax && !drops_probs ? 1 : 2) * scores * kBf16;
  b.ops.push_back(op);
  b.attention_stats = {"probs"};
}

}  // namespace remat::parts
