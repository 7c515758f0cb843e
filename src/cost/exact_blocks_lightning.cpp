// MiniMax's lightning attention as transformers 5.17 trains it (MiniMaxLightningAttention.forward
// without a cache): linear attention computed block by block in PyTorch, with a per-head decay.
#include <cmath>

#include "exact_ops.hpp"
#include "exact_parts.hpp"
#include "remat/cost/exact_blocks.hpp"

namespace remat {

using ops::kBf16;
using ops::kFp32;

namespace {

// Query-key products over the sequence: full blocks of `block` tokens and the last, shorter one.
double block_squares(double s, double block) {
  const double full = std::floor(s / block), rest = s - full * block;
  return full * block * block + rest * rest;
}

}  // namespace

// Per block of B tokens and head: P = (q k^T) x decay (B x B), P v, (q x decay) S and the next state
// S' = S x decay + (k x decay)^T v (head_dim x head_dim), each block's output appended to a list that
// is concatenated at the end. Saved for backward: SiLU's input (the qkv projection), its output (q, k
// and v are views of it that every block's products keep), each block's P, the decayed q and k, and
// the state each block read (bf16, as the values). Then the output's transposed copy goes through
// an RMSNorm over heads x head_dim (its fp32 copy and 1/rms per row; the normed bf16 product where
// the weight trains, and the weighted output), times sigmoid(output_gate(x)) (which saves its
// output), into out_proj.
Block lightning_block(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "lightning";
  const double rows = r.tokens(), h = double(m.hidden_size);
  const double heads = double(m.num_attention_heads) / double(r.tp), hd = double(m.attention_shape_of(false).head_dim);
  const double c = heads * hd, block = double(m.lightning_block_size);
  const double blocks = std::ceil(r.s / block), squares = r.b * heads * block_squares(r.s, block);
  parts::add_input_norm(b, r, h, true, 2);
  b.ops.push_back(parts::linear(b, r, "qkv_proj", rows, h, 3 * c, "x_norm", {&LoraTargets::mixer_in}));
  b.tensors.push_back({"qkv_pre", rows * 3 * c * kBf16});
  b.tensors.push_back({"qkv", rows * 3 * c * kBf16});
  b.ops.push_back(ops::streaming("qkv_silu", 2 * rows * 3 * c * kBf16, 3 * rows * 3 * c * kBf16, {"qkv_pre"}));
  b.tensors.push_back({"block_scores", squares * kBf16});
  b.tensors.push_back({"q_decayed", rows * c * kBf16});
  b.tensors.push_back({"k_decayed", rows * c * kBf16});
  b.tensors.push_back({"block_states", r.b * blocks * heads * hd * hd * kBf16});
  OpDef scan =
      ops::streaming("lightning_blocks", (rows * 7 * c + 3 * squares) * kBf16, 2 * (rows * 7 * c + 3 * squares) * kBf16,
                     {"qkv", "block_scores", "q_decayed", "k_decayed", "block_states"});
  // q k^T and P v over the blocks' squares; (q x decay) S and (k x decay)^T v per token and head
  scan.fwd_flops = 2 * squares * hd * 2 + 2 * rows * heads * hd * hd * 2;
  scan.bwd_flops = scan.bwd_exec_flops = 2 * scan.fwd_flops;
  b.ops.push_back(scan);
  b.ops.push_back(ops::streaming("concat_transpose", 4 * rows * c * kBf16, 4 * rows * c * kBf16, {}));
  b.tensors.push_back({"o_fp32", rows * c * kFp32});
  b.tensors.push_back({"o_rstd", rows * kFp32});
  b.tensors.push_back({"o_normed", rows * c * kBf16});
  b.tensors.push_back({"o_weighted", rows * c * kBf16});
  std::vector<std::string> norm_saves = {"o_fp32", "o_rstd"};
  if (r.weights_train) norm_saves.push_back("o_normed");
  b.ops.push_back(ops::streaming("output_norm", rows * c * (kBf16 + 3 * kFp32 + 2 * kBf16),
                                 2 * rows * c * (kBf16 + 3 * kFp32 + 2 * kBf16), norm_saves));
  b.ops.push_back(parts::linear(b, r, "output_gate", rows, h, c, "x_norm", {&LoraTargets::mixer_gate}));
  b.tensors.push_back({"gate_sigmoid", rows * c * kBf16});
  b.ops.push_back(ops::streaming("gate_sigmoid", 2 * rows * c * kBf16, 3 * rows * c * kBf16, {"gate_sigmoid"}));
  b.tensors.push_back({"gated", rows * c * kBf16});
  b.ops.push_back(
      ops::streaming("gate_mul", 3 * rows * c * kBf16, 5 * rows * c * kBf16, {"gate_sigmoid", "o_weighted"}));
  b.ops.push_back(parts::linear(b, r, "out_proj", rows, c, h, "gated", {&LoraTargets::mixer_out}));
  return b;
}

}  // namespace remat
