// Kimi Linear's Kimi Delta Attention: Gated DeltaNet's delta rule with a decay per channel. Under
// torch kernels as transformers 5.17 trains it (KimiLinearDeltaAttention.forward with its fallbacks
// causal_conv1d_fn and chunk_kimi_delta_attention, no cache); under fused kernels as FLA's chunk_kda.
#include <cmath>

#include "exact_ops.hpp"
#include "exact_parts.hpp"
#include "remat/cost/exact_blocks.hpp"

namespace remat {

using ops::kBf16;
using ops::kFp32;

namespace {

// An op on the decay's or beta's path, whose inputs come from projections of the layer input: where
// none of those carries an adapter, in the first adapted layer nothing it saves is asked for
// (stage_model.cpp, frozen prefix).
OpDef beside_adapters(OpDef op, bool path_adapted) {
  op.beside_adapters = !path_adapted;
  return op;
}

bool forget_gate_adapted(const RankShape& r) { return r.lora.kda_f_a || r.lora.kda_f_b; }

constexpr double kChunk = 64;  // chunk_kimi_delta_attention's chunk_size

struct KdaShape {
  double heads, hd, width;  // on this rank
};

// Up to the rule: the input norm (read by q, k, v, f_a, b and g_a), q, k and v (LoRA adapts them),
// concatenated as the conv's input; the forget gate's low-rank pair and beta's projection.
Block kda_projections(const RankShape& r, const ModelSpec& m, const KdaShape& g) {
  Block b;
  b.name = "kimi_delta";
  const double rows = r.tokens(), h = double(m.hidden_size);
  parts::add_input_norm(b, r, h, true, 6);
  b.ops.push_back(parts::linear(b, r, "q_proj", rows, h, g.width, "x_norm", {&LoraTargets::q}));
  b.ops.push_back(parts::linear(b, r, "k_proj", rows, h, g.width, "x_norm", {&LoraTargets::k}));
  b.ops.push_back(parts::linear(b, r, "v_proj", rows, h, g.width, "x_norm", {&LoraTargets::v}));
  b.tensors.push_back({"mixed_qkv", rows * 3 * g.width * kBf16});
  b.ops.push_back(parts::linear(b, r, "f_a_proj", rows, h, g.hd, "x_norm", {&LoraTargets::kda_f_a}));
  b.tensors.push_back({"f_a_out", rows * g.hd * kBf16});
  b.ops.push_back(parts::linear(b, r, "f_b_proj", rows, g.hd, g.width, "f_a_out", {&LoraTargets::kda_f_b}));
  b.ops.push_back(parts::linear(b, r, "b_proj", rows, h, g.heads, "x_norm", {&LoraTargets::gdn_b}));
  b.tensors.push_back({"beta", rows * g.heads * kBf16});
  b.ops.push_back(beside_adapters(
      ops::streaming("beta_sigmoid", 2 * rows * g.heads * kBf16, 3 * rows * g.heads * kBf16, {"beta"}), r.lora.gdn_b));
  return b;
}

// The output gate's low-rank pair, then o_proj (LoRA's o) on `input`.
void add_kda_output(Block& b, const RankShape& r, const ModelSpec& m, const KdaShape& g, const std::string& input) {
  const double rows = r.tokens(), h = double(m.hidden_size);
  b.ops.push_back(parts::linear(b, r, "g_a_proj", rows, h, g.hd, "x_norm", {&LoraTargets::kda_g_a}));
  b.tensors.push_back({"g_a_out", rows * g.hd * kBf16});
  b.ops.push_back(parts::linear(b, r, "g_b_proj", rows, g.hd, g.width, "g_a_out", {&LoraTargets::kda_g_b}));
  b.ops.push_back(parts::linear(b, r, "o_proj", rows, g.width, h, input, {&LoraTargets::o}));
}

// The rule's FLOPs per token and head: the chunk's pairwise products over the key dim (decayed k k^T
// and q k^T, each C x dk) and the UT system's and outputs' products with v (C x dv), the state's
// read-outs and update (6 dk dv).
double kda_rule_flops(double rows, const KdaShape& g) {
  return rows * g.heads * (4 * kChunk * g.hd + 2 * kChunk * g.hd + 6 * g.hd * g.hd);
}

// KimiLinearRMSNormGated (fp32 throughout): the output's fp32 copy, 1/rms per head, the normed
// product (saved where the weight trains), the weighted output, the gate's fp32 sigmoid; then the
// bf16 cast for o_proj.
void add_kda_gated_norm(Block& b, const RankShape& r, const KdaShape& g) {
  const double rows = r.tokens(), width = g.width;
  for (const char* name : {"o_fp32", "o_normed", "o_weighted", "gate_sigmoid"})
    b.tensors.push_back({name, rows * width * kFp32});
  b.tensors.push_back({"o_rstd", rows * g.heads * kFp32});
  b.tensors.push_back({"o_out", rows * width * kBf16});
  std::vector<std::string> saves = {"o_fp32", "o_rstd", "o_weighted", "gate_sigmoid"};
  if (r.weights_train) saves.push_back("o_normed");
  b.ops.push_back(ops::streaming("gated_norm", 8 * rows * width * kFp32, 14 * rows * width * kFp32, saves));
}

Block kimi_delta_torch(const RankShape& r, const ModelSpec& m, const KdaShape& g) {
  Block b = kda_projections(r, m, g);
  const double rows = r.tokens(), width = g.width, heads = g.heads, c = kChunk;
  const double chunks = std::ceil(r.s / c), padded = r.b * chunks * c;  // rows padded to whole chunks
  // conv1d saves its input (the concatenated projections); SiLU the conv output before its trim
  b.tensors.push_back({"conv_out", r.b * 3 * width * (r.s + double(m.linear_conv_kernel) - 1) * kBf16});
  b.ops.push_back(
      ops::streaming("conv1d", 4 * rows * 3 * width * kBf16, 6 * rows * 3 * width * kBf16, {"mixed_qkv", "conv_out"}));
  // the forget gate in fp32: exp(g) and 1 + exp(g) (saved by the exp and the log), where's mask, the
  // softplus (saved by the product with -exp(A_log))
  b.tensors.push_back({"forget_gate", rows * width * (3 * kFp32 + 1)});
  b.ops.push_back(
      beside_adapters(ops::streaming("forget_gate", 16 * rows * width, 24 * rows * width, {"forget_gate", "f_a_out"}),
                      forget_gate_adapted(r)));
  // l2norm of the fp32 copies of q and k (each saved, with its norm per head)
  b.tensors.push_back({"qk_fp32", 2 * rows * width * kFp32});
  b.tensors.push_back({"qk_norms", 2 * rows * heads * kFp32});
  // F.pad's copies: q scaled, k, v, beta; k and v times beta; exp of the cumulated decay and k_beta
  // times it; the UT system's k_cumdecay
  for (const char* name :
       {"q_scaled", "k_padded", "v_padded", "k_beta", "v_beta", "g_exp", "k_beta_decayed", "k_cumdecay"})
    b.tensors.push_back({name, padded * width * kFp32});
  b.tensors.push_back({"beta_padded", padded * heads * kFp32});
  // per channel, (b, heads, chunks, C, C, dk) fp32: the decay mask (exp's output), k_beta k and q k
  // products before the decay multiply (each saved by it)
  const double square_channels = padded * width * c;
  for (const char* name : {"decay_mask", "kk_products", "qk_products"})
    b.tensors.push_back({name, square_channels * kFp32});
  // the UT loop's clones: row i (i values) and the block above it (i x i) for i = 1 .. C - 1
  const double clones = (c - 1) * c / 2 + (c - 1) * c * (2 * c - 1) / 6;
  b.tensors.push_back({"ut_clones", r.b * heads * chunks * clones * kFp32});
  b.tensors.push_back({"ut", padded * heads * c * kFp32});     // attn + I, read by both products
  b.tensors.push_back({"intra", padded * heads * c * kFp32});  // each chunk's masked q k products
  // per chunk: exp(g), q times it, the state it reads, v_new, exp(g_last - g) and k times it
  for (const char* name : {"chunk_g_exp", "q_decayed", "v_new", "k_decay_exp", "k_decayed"})
    b.tensors.push_back({name, padded * width * kFp32});
  b.tensors.push_back({"chunk_states", r.b * chunks * heads * g.hd * g.hd * kFp32});
  OpDef rule = ops::streaming(
      "kimi_delta_rule", 8 * square_channels * kFp32, 20 * square_channels * kFp32,
      {"qk_fp32", "qk_norms",       "q_scaled",   "k_padded",    "v_padded",    "k_beta",    "v_beta",
       "g_exp",   "k_beta_decayed", "k_cumdecay", "beta_padded", "decay_mask",  "ut_clones", "ut",
       "intra",   "chunk_g_exp",    "q_decayed",  "v_new",       "k_decay_exp", "k_decayed", "chunk_states"});
  rule.fwd_flops = kda_rule_flops(rows, g);
  rule.bwd_flops = rule.bwd_exec_flops = 2 * rule.fwd_flops;
  // the forward holds the decayed product before its sum; backward writes both inputs' gradients of
  // a decayed product at its full size
  rule.fwd_working_bytes = square_channels * kFp32;
  rule.working_bytes = 2 * square_channels * kFp32;
  b.ops.push_back(rule);
  // the k k and q k products are saved for the decay's gradient alone
  b.ops.push_back(
      beside_adapters(ops::streaming("decay_products", 0, 0, {"kk_products", "qk_products"}), forget_gate_adapted(r)));
  add_kda_gated_norm(b, r, g);
  add_kda_output(b, r, m, g, "o_out");
  return b;
}

// FLA's chunk_kda: the rule saves its q, k, v (the conv's SiLU output), the decay and beta and the
// chunks' UT matrices; the gated norm its input and 1/rms.
Block kimi_delta_fused(const RankShape& r, const ModelSpec& m, const KdaShape& g) {
  Block b = kda_projections(r, m, g);
  const double rows = r.tokens(), width = g.width;
  b.tensors.push_back({"qkv", rows * 3 * width * kBf16});
  b.tensors.push_back({"decay", rows * width * kFp32});
  b.tensors.push_back({"ut", rows * g.heads * kChunk * kFp32});
  b.tensors.push_back({"o", rows * width * kBf16});
  b.tensors.push_back({"o_rstd", rows * g.heads * kFp32});
  b.tensors.push_back({"o_out", rows * width * kBf16});
  b.ops.push_back(ops::streaming("conv1d", 2 * rows * 3 * width * kBf16, 3 * rows * 3 * width * kBf16, {"mixed_qkv"}));
  OpDef rule = ops::gemm("kimi_delta_rule", 1, 1, 1, {"qkv", "decay", "beta", "ut"});
  rule.fwd_flops = kda_rule_flops(rows, g);
  rule.bwd_flops = 2 * rule.fwd_flops, rule.bwd_exec_flops = 2.5 * rule.fwd_flops;
  rule.gemm_flops_each = 2 * kChunk * kChunk * g.hd;
  b.ops.push_back(rule);
  b.ops.push_back(ops::streaming("gated_norm", 3 * rows * width * kBf16, 5 * rows * width * kBf16, {"o", "o_rstd"}));
  add_kda_output(b, r, m, g, "o_out");
  return b;
}

}  // namespace

Block kimi_delta_block(const RankShape& r, const ModelSpec& m) {
  const double heads = double(m.linear_num_value_heads) / double(r.tp), hd = double(m.linear_value_head_dim);
  const KdaShape g{heads, hd, heads * hd};
  return r.mixer_kernels == MixerKernels::torch ? kimi_delta_torch(r, m, g) : kimi_delta_fused(r, m, g);
}

}  // namespace remat
