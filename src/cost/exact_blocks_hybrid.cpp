// The mixers of hybrid models as recompute blocks: Mamba-2 (SSD) and Gated DeltaNet, each
// from its input norm to its out_proj, with what the training code saves for backward, in two
// variants (RankShape::mixer_kernels, set by the framework profile or --mixer-kernels):
// fused: the kernels of mamba_ssm, causal_conv1d and fla.
// - Mamba-2: mamba_ssm's mamba_split_conv1d_scan_combined (what transformers' Nemotron-H and
//   Mamba-2 layers run in training with mamba_ssm installed) saves the in_proj output (z, x, B, C,
//   dt), the scan output before the gated norm and the norm's 1/rms; the conv output and the chunk
//   states are recomputed in backward, and out_proj's input (the gated norm's output) too.
// - Gated DeltaNet: fla's causal_conv1d and chunk_gated_delta_rule (what transformers' Qwen3-Next
//   layer runs with flash-linear-attention installed): the conv saves its input, the rule its q,
//   k, v, decay, beta and the chunk's WY matrix (64 fp32 per value head and row), the gated norm
//   its input, gate and 1/rms, out_proj its input.
// torch: transformers 5.17's plain-PyTorch fallbacks, which run when those packages are absent
// (every op's autograd saves, read from the source and checked against the saved tensors that
// examples/hybrid/hybrid_ref.py logged on an H100: reports/hybrid/).
#include <algorithm>
#include <cmath>

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

// Mamba-2's widths on one rank (heads and groups split over tp), shared by both blocks.
struct Mamba2Shape {
  double heads, p, n, groups, q, inner, conv_dim, projected;
};

Mamba2Shape mamba2_shape(const RankShape& r, const ModelSpec& m) {
  const double t = double(r.tp);
  const double heads = double(m.mamba_num_heads) / t, p = double(m.mamba_head_dim);
  const double n = double(m.ssm_state_size), groups = double(m.mamba_n_groups) / t, q = double(m.mamba_chunk_size);
  const double inner = heads * p, conv_dim = inner + 2 * groups * n;
  return {heads, p, n, groups, q, inner, conv_dim, m.mamba2_in_proj_width() / t};
}

// in_proj on `input`: the mixer's input norm's output, or Falcon-H1's scaled copy of it.
void add_mamba2_in_proj(Block& b, const RankShape& r, const ModelSpec& m, const Mamba2Shape& g,
                        const std::string& input) {
  b.ops.push_back(
      parts::linear(b, r, "in_proj", r.tokens(), double(m.hidden_size), g.projected, input, {&LoraTargets::mixer_in}));
}

// After in_proj, as mamba_ssm's kernels run it (without the gated RMSNorm, Falcon-H1's
// mamba_rms_norm false, the kernel gates y by silu(z) alone and saves no 1/rms).
void add_mamba2_fused_scan(Block& b, const RankShape& r, const ModelSpec& m, const Mamba2Shape& g) {
  const double rows = r.tokens(), h = double(m.hidden_size);
  const auto [heads, p, n, groups, q, inner, conv_dim, projected] = g;
  b.tensors.push_back({"zxbcdt", rows * projected * kBf16});
  b.tensors.push_back({"ssm_y", rows * inner * kBf16});
  if (m.mamba_gated_norm) b.tensors.push_back({"ssm_rstd", rows * groups * kFp32});
  // conv1d over x, B, C (kernel K), then per head and token: the chunk's C B^T and its product
  // with x under the causal mask (Q (N + P)), the chunk state B^T x and its read-out C h (4 N P)
  const double conv_flops = 2 * rows * conv_dim * double(m.mamba_conv_kernel);
  const double scan_flops = rows * heads * (q * (n + p) + 4 * n * p) + conv_flops;
  b.ops.push_back(chunked_scan("ssd_scan", scan_flops, 2 * q * q * std::max(n, p), {"zxbcdt"}));
  // the gated RMSNorm (y * silu(z)) then out_proj, fused: both read y, z and 1/rms
  std::vector<std::string> norm_saves = {"ssm_y"};
  if (m.mamba_gated_norm) norm_saves.push_back("ssm_rstd");
  b.ops.push_back(ops::streaming("gated_norm", 3 * rows * inner * kBf16, 5 * rows * inner * kBf16, norm_saves));
  b.ops.push_back(parts::linear(b, r, "out_proj", rows, inner, h, "ssm_y", {&LoraTargets::mixer_out}));
}

// The standalone mixer's block: its input norm, in_proj, then the rest in `variant`.
template <class Rest>
Block mamba2_standalone(const RankShape& r, const ModelSpec& m, Rest rest) {
  const Mamba2Shape g = mamba2_shape(r, m);
  Block b;
  b.name = "mamba2";
  parts::add_input_norm(b, r, double(m.hidden_size), true, 1);
  add_mamba2_in_proj(b, r, m, g, "x_norm");
  rest(b, r, m, g);
  return b;
}

// Gated DeltaNet's widths on one rank (heads split over tp), shared by both blocks.
struct GdnShape {
  double kh, vh, dk, dv, kd, vd, conv_dim;
};

GdnShape gdn_shape(const RankShape& r, const ModelSpec& m) {
  const double t = double(r.tp);
  const double kh = double(m.linear_num_key_heads) / t, vh = double(m.linear_num_value_heads) / t;
  const double dk = double(m.linear_key_head_dim), dv = double(m.linear_value_head_dim);
  return {kh, vh, dk, dv, kh * dk, vh * dv, 2 * kh * dk + vh * dv};
}

// The projections the decay (a) and beta (b) come from, as gdn_projections names them.
struct GdnGateProjections {
  std::string decay, beta;
};

GdnGateProjections gdn_gate_projections(const ModelSpec& m) {
  if (m.linear_attention_own_projections) return {"a_proj", "b_proj"};
  if (m.gdn_split_projections) return {"in_proj_a", "in_proj_b"};
  return {"in_proj_ba", "in_proj_ba"};
}

// Both blocks up to their input projections: the norm, in_proj_qkvz and in_proj_ba; or OLMo Hybrid's
// q, k, v (LoRA adapts them), g, a and b projections, the gate g then its own tensor ("gate").
Block gdn_projections(const RankShape& r, const ModelSpec& m, const GdnShape& g) {
  Block b;
  b.name = "gated_deltanet";
  const double rows = r.tokens(), h = double(m.hidden_size);
  const GdnGateProjections gates = gdn_gate_projections(m);
  parts::add_input_norm(b, r, h, true, 2);
  if (m.linear_attention_own_projections) {
    b.ops.push_back(parts::linear(b, r, "q_proj", rows, h, g.kd, "x_norm", {&LoraTargets::q}));
    b.ops.push_back(parts::linear(b, r, "k_proj", rows, h, g.kd, "x_norm", {&LoraTargets::k}));
    b.ops.push_back(parts::linear(b, r, "v_proj", rows, h, g.vd, "x_norm", {&LoraTargets::v}));
    // g, a and b play Qwen3.5's z, a and b (their adapters the same words)
    b.ops.push_back(parts::linear(b, r, "g_proj", rows, h, g.vd, "x_norm", {&LoraTargets::gdn_z}));
    b.ops.push_back(parts::linear(b, r, gates.decay, rows, h, g.vh, "x_norm", {&LoraTargets::gdn_a}));
    b.ops.push_back(parts::linear(b, r, gates.beta, rows, h, g.vh, "x_norm", {&LoraTargets::gdn_b}));
    b.tensors.push_back({"gate", rows * g.vd * kBf16});
    return b;
  }
  if (m.gdn_split_projections) {
    b.ops.push_back(parts::linear(b, r, "in_proj_qkv", rows, h, g.conv_dim, "x_norm", {&LoraTargets::gdn_qkv}));
    b.ops.push_back(parts::linear(b, r, "in_proj_z", rows, h, g.vd, "x_norm", {&LoraTargets::gdn_z}));
    b.ops.push_back(parts::linear(b, r, gates.beta, rows, h, g.vh, "x_norm", {&LoraTargets::gdn_b}));
    b.ops.push_back(parts::linear(b, r, gates.decay, rows, h, g.vh, "x_norm", {&LoraTargets::gdn_a}));
  } else {
    b.ops.push_back(
        parts::linear(b, r, "in_proj_qkvz", rows, h, g.conv_dim + g.vd, "x_norm", {&LoraTargets::gdn_qkvz}));
    b.ops.push_back(parts::linear(b, r, gates.decay, rows, h, 2 * g.vh, "x_norm", {&LoraTargets::gdn_ba}));
  }
  b.tensors.push_back({"qkvz", rows * (g.conv_dim + g.vd) * kBf16});
  return b;
}

// What the gated norm reads of the gate: z, a view that keeps Qwen3-Next's whole qkvz projection
// alive, or OLMo Hybrid's own g projection.
const char* gate_tensor(const ModelSpec& m) { return m.linear_attention_own_projections ? "gate" : "qkvz"; }

// out_proj on `input`, adapted by LoRA's o where the layer names it o_proj (OLMo Hybrid), else as the
// mixer's out_proj.
OpDef gdn_out_proj(Block& b, const RankShape& r, const ModelSpec& m, const GdnShape& g, const std::string& input) {
  std::vector<bool LoraTargets::*> adapted;
  adapted.push_back(m.linear_attention_own_projections ? &LoraTargets::o : &LoraTargets::mixer_out);
  return parts::linear(b, r, "out_proj", r.tokens(), g.vd, double(m.hidden_size), input, adapted);
}

// The delta rule's FLOPs over chunks of `chunk` rows.
double gdn_rule_flops(double rows, const GdnShape& g, double chunk) {
  return rows * g.vh * (2 * chunk * (g.dk + g.dv) + 6 * g.dk * g.dv);
}

Block gated_deltanet_fused(const RankShape& r, const ModelSpec& m) {
  const GdnShape g = gdn_shape(r, m);
  Block b = gdn_projections(r, m, g);
  const double rows = r.tokens(), chunk = 64;
  const auto [kh, vh, dk, dv, kd, vd, conv_dim] = g;
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
  const double rule_flops = gdn_rule_flops(rows, g, chunk);
  b.ops.push_back(
      chunked_scan("gated_delta_rule", rule_flops, 2 * chunk * chunk * std::max(dk, dv), {"qkv", "decay_beta", "wy"}));
  b.ops.push_back(ops::streaming("gated_norm", 3 * rows * vd * kBf16, 5 * rows * vd * kBf16,
                                 {"gdn_o", gate_tensor(m), "gdn_rstd"}));
  b.ops.push_back(gdn_out_proj(b, r, m, g, "gdn_o_normed"));
  return b;
}

// y + D x in fp32, gated by silu(z). With the gated RMSNorm, Zamba2RMSNormGated (gate, then norm)
// saves the gate's fp32 copy (SiLU's input), silu(gate), the gated product, 1/rms per group and the
// normalized product (when the norm weight trains); FalconH1RMSNormGated with norm_before_gate
// saves tensors of the same sizes in the other order (y, 1/rms, the normalized and weighted
// products, the gate's fp32 copy and its silu). Without it (Falcon-H1's mamba_rms_norm false),
// y * silu(z) saves y and the bf16 silu(z) (z itself is a view of the saved in_proj output).
void add_mamba2_torch_gate(Block& b, const RankShape& r, const ModelSpec& m, const Mamba2Shape& g) {
  const double rows = r.tokens(), inner = g.inner;
  if (!m.mamba_gated_norm) {
    b.tensors.push_back({"y", rows * inner * kFp32});
    b.tensors.push_back({"gate_silu", rows * inner * kBf16});
    // bytes per element: silu 2+2, the product 4+2+4, the cast 4+2; backward about twice
    b.ops.push_back(ops::streaming("gate", 20 * rows * inner, 36 * rows * inner, {"y", "gate_silu", "zxbcdt"}));
    return;
  }
  for (const char* name : {"y", "gate_fp32", "gate_silu", "gated"}) b.tensors.push_back({name, rows * inner * kFp32});
  b.tensors.push_back({"gated_rstd", rows * g.groups * kFp32});
  b.tensors.push_back({"gated_normed", rows * inner * kFp32});
  std::vector<std::string> norm_saves = {"y", "gate_fp32", "gate_silu", "gated", "gated_rstd"};
  if (r.weights_train) norm_saves.push_back("gated_normed");
  b.ops.push_back(ops::streaming("gated_norm", 8 * rows * inner * kFp32, 14 * rows * inner * kFp32, norm_saves));
}

// After in_proj, as transformers' NemotronHMamba2Mixer.torch_forward runs it
// (models/nemotron_h/modeling_nemotron_h.py; the Mamba-2, Bamba and Zamba2 mixers share it, and
// FalconH1Mixer's mamba2_chunk_scan fallback is the same algorithm), training without a cache or
// padding mask.
void add_mamba2_torch_scan(Block& b, const RankShape& r, const ModelSpec& m, const Mamba2Shape& g) {
  const double rows = r.tokens(), h = double(m.hidden_size);
  const auto [heads, p, n, groups, q, inner, conv_dim, projected] = g;
  const double chunks = std::ceil(r.s / q), padded = r.b * chunks * q;  // rows padded to whole chunks
  // conv1d reads a view of the whole in_proj output; SiLU saves the conv output before its causal trim
  b.tensors.push_back({"zxbcdt", rows * projected * kBf16});
  b.tensors.push_back({"conv_out", r.b * conv_dim * (r.s + double(m.mamba_conv_kernel) - 1) * kBf16});
  const double conv_flops = 2 * rows * conv_dim * double(m.mamba_conv_kernel);
  OpDef conv =
      ops::streaming("conv1d", 4 * rows * conv_dim * kBf16, 6 * rows * conv_dim * kBf16, {"zxbcdt", "conv_out"});
  conv.fwd_flops = conv_flops;
  b.ops.push_back(conv);
  // dt + dt_bias, its softplus and clamp: each output saved by the next op
  b.tensors.push_back({"dt", 3 * rows * heads * kBf16});
  // the scan's inputs: x upcast to fp32 (read by x * dt's backward), the D skip's input (F.pad's
  // copy, saved when D trains), then reshape_into_chunks's zero-pad copies of x * dt, of B and C
  // repeated to every head, and of A * dt with its two decays (to the chunk end, from its start)
  b.tensors.push_back({"x_fp32", rows * inner * kFp32});
  b.tensors.push_back({"x_skip", padded * inner * kFp32});
  b.tensors.push_back({"x_dt", padded * inner * kFp32});
  b.tensors.push_back({"b_heads", padded * heads * n * kFp32});
  b.tensors.push_back({"c_heads", padded * heads * n * kFp32});
  b.tensors.push_back({"a_dt", 3 * padded * heads * kFp32});
  // intra-chunk products, (b, chunks, Q, Q, heads) fp32 each: exp(segment_sum(A dt)), C B^T summed
  // over the state and its product with the decays, each saved by the next broadcast multiply
  for (const char* name : {"segsum_exp", "cb", "cb_decayed"}) b.tensors.push_back({name, padded * heads * q * kFp32});
  // chunk states: B times the decay to the chunk end, the states (b, chunks + 1, heads, P, N) with a
  // zero state prepended and after the inter-chunk decay, C times the states summed over the state
  b.tensors.push_back({"b_decayed", padded * heads * n * kFp32});
  b.tensors.push_back({"states", r.b * (chunks + 1) * heads * p * n * kFp32});
  b.tensors.push_back({"states_decayed", r.b * (chunks + 1) * heads * p * n * kFp32});
  b.tensors.push_back({"c_states", padded * inner * kFp32});
  std::vector<std::string> inputs = {"x_fp32", "dt", "x_dt", "b_heads", "c_heads", "a_dt"};
  if (r.weights_train) inputs.push_back("x_skip");
  b.ops.push_back(ops::streaming("ssd_inputs", 12 * rows * inner * kFp32, 18 * rows * inner * kFp32, inputs));
  // The scan multiplies broadcast views and sums them (no einsum, no GEMM): C B^T as a
  // (b, chunks, Q, Q, heads, N) fp32 product is the largest; its backward writes both inputs'
  // gradients at that full size before reducing them, the block's peak.
  const double cb_product = padded * q * heads * n, products = cb_product + 2 * padded * heads * p * n +
                                                               padded * q * heads * p +
                                                               r.b * (chunks + 1) * (chunks + 1) * heads * p * n;
  OpDef scan = ops::streaming("ssd_scan", 2 * products * kFp32, 6 * products * kFp32,
                              {"b_heads", "c_heads", "x_dt", "a_dt", "segsum_exp", "cb", "cb_decayed", "b_decayed",
                               "states", "states_decayed", "c_states"});
  scan.fwd_flops = rows * heads * (q * (n + p) + 4 * n * p);
  scan.bwd_flops = scan.bwd_exec_flops = 2 * scan.fwd_flops;
  scan.working_bytes = 2 * cb_product * kFp32;
  scan.fwd_working_bytes = cb_product * kFp32;  // the forward sums the product it holds once
  b.ops.push_back(scan);
  add_mamba2_torch_gate(b, r, m, g);
  b.tensors.push_back({"y_out", rows * inner * kBf16});  // cast back for out_proj
  b.ops.push_back(parts::linear(b, r, "out_proj", rows, inner, h, "y_out", {&LoraTargets::mixer_out}));
}

// transformers' Qwen3NextGatedDeltaNet.forward with the fallbacks causal_conv1d_fn and
// torch_chunk_gated_delta_rule (models/qwen3_next/modeling_qwen3_next.py: the UT system solved by
// torch.linalg.solve_triangular, then a loop over chunks), training without a cache.
Block gated_deltanet_torch(const RankShape& r, const ModelSpec& m) {
  const GdnShape g = gdn_shape(r, m);
  Block b = gdn_projections(r, m, g);
  const double rows = r.tokens(), c = 64;
  const auto [kh, vh, dk, dv, kd, vd, conv_dim] = g;
  const double chunks = std::ceil(r.s / c), padded = r.b * chunks * c;  // rows padded to whole chunks
  const double qk = vh * dk;                                            // q, k repeated to the value heads
  // q, k, v copied out of the interleaved projection and concatenated (the conv's input); SiLU
  // saves the conv output before its causal trim
  b.tensors.push_back({"conv_in", rows * conv_dim * kBf16});
  b.tensors.push_back({"conv_out", r.b * conv_dim * (r.s + double(m.linear_conv_kernel) - 1) * kBf16});
  b.ops.push_back(
      ops::streaming("conv1d", 4 * rows * conv_dim * kBf16, 6 * rows * conv_dim * kBf16, {"conv_in", "conv_out"}));
  // beta = sigmoid(b) (bf16), the decay's softplus input and output (fp32)
  b.tensors.push_back({"gates", rows * vh * (kBf16 + 2 * kFp32)});
  // l2norm in fp32 of q and k: their fp32 copies and 1/norm per head
  b.tensors.push_back({"q_fp32", rows * qk * kFp32});
  b.tensors.push_back({"k_fp32", rows * qk * kFp32});
  b.tensors.push_back({"qk_rnorm", 2 * rows * vh * kFp32});
  b.ops.push_back(ops::streaming("l2norm", 4 * rows * qk * kFp32, 6 * rows * qk * kFp32,
                                 {"gates", "q_fp32", "k_fp32", "qk_rnorm"}));
  // the rule, fp32 throughout: F.pad's copies of the scaled q, of k, v and beta; k and v times beta;
  // the chunk squares (b, heads, chunks, 64, 64): pairwise decays, k_beta k^T and the UT system,
  // q k^T and the masked intra-chunk attention; solve_triangular's results u and w; q and k with
  // their decays applied (and the three decay exps); per chunk, v_new and the state before it
  b.tensors.push_back({"q_scaled", padded * qk * kFp32});
  b.tensors.push_back({"k_padded", padded * qk * kFp32});
  b.tensors.push_back({"v_padded", padded * vd * kFp32});
  b.tensors.push_back({"beta_padded", padded * vh * kFp32});
  b.tensors.push_back({"k_beta", padded * qk * kFp32});
  const double square = padded * vh * c;
  b.tensors.push_back({"pair_decay", square * kFp32});
  b.tensors.push_back({"ut", square * kFp32});
  b.tensors.push_back({"u", padded * vd * kFp32});
  b.tensors.push_back({"w", padded * qk * kFp32});
  b.tensors.push_back({"decay_exp", 3 * padded * vh * kFp32});
  b.tensors.push_back({"chunk_states", r.b * chunks * vh * dk * dv * kFp32});
  std::vector<std::string> rule_saves = {"q_scaled", "k_padded", "v_padded", "beta_padded", "k_beta",      "pair_decay",
                                         "ut",       "u",        "w",        "decay_exp",   "chunk_states"};
  const auto add_saved = [&](const std::string& name, double bytes) {
    b.tensors.push_back({name, bytes});
    rule_saves.push_back(name);
  };
  const auto [a, beta] = gdn_gate_projections(m);
  std::vector<OpDef::GateSave> for_gates;
  if (!r.autocast) {
    for (const char* name : {"kk", "qk", "intra"}) add_saved(name, square * kFp32);
    add_saved("q_decayed", padded * qk * kFp32);
    add_saved("k_decayed", padded * qk * kFp32);
    add_saved("v_new", padded * vd * kFp32);
    // k_beta k^T and q k^T times the pairwise decays save those products for the decay's gradient,
    // v times beta saves v for beta's
    for_gates = {{"kk", {a}}, {"qk", {a}}, {"v_padded", {beta}}};
  } else {
    // Under autocast each @ runs in bf16 on casts it saves (autocast caches only leaf weights' casts):
    // k_beta k^T and q k^T save bf16 casts of both operands and their bf16 products (each then scaled
    // by the fp32 pairwise decays); the intra-chunk attention and the decayed q and k are saved only as
    // the loop's per-chunk casts. Per chunk the loop casts the state twice (w_i S and q_i S), w_i, q_i,
    // k_i, v_new twice and the intra-chunk attention; v_new itself (fp32) is saved by nothing. So the
    // fp32 q, k, k_beta, the bf16 products and the states are saved only by the products with the
    // decays, for the decay's gradient (k and v by those with beta, for beta's). Qwen3.5-397B cut to 5,
    // mixed DPO 2 x 3000, no checkpointing: 137 state-sized blocks a layer at the state update's line,
    // -3.03% while the bf16 layout was counted (peak-traces-h200/random-blind33); Qwen3.5-9B's first
    // layer under in_proj_qkv adapters keeps no fp32 state (peak-traces-h200/all-linear)
    add_saved("kk_casts", padded * 2 * qk * kBf16);
    add_saved("kk_product", square * kBf16);
    add_saved("qk_casts", padded * 2 * qk * kBf16);
    add_saved("qk_product", square * kBf16);
    add_saved("chunk_casts", padded * (3 * qk + 2 * vd) * kBf16 + square * kBf16);
    add_saved("state_casts", 2 * r.b * chunks * vh * dk * dv * kBf16);
    for_gates = {{"q_scaled", {a}},   {"k_padded", {a, beta}}, {"v_padded", {beta}}, {"k_beta", {a}},
                 {"kk_product", {a}}, {"qk_product", {a}},     {"chunk_states", {a}}};
  }
  const double rule_flops = gdn_rule_flops(rows, g, c);
  b.ops.push_back(chunked_scan("gated_delta_rule", rule_flops, 2 * c * c * std::max(dk, dv), rule_saves));
  b.ops.back().saved_for_gates = std::move(for_gates);
  // Qwen3NextRMSNormGated (norm, weight, then gate): the output's fp32 copy, 1/rms per head, the
  // normalized bf16 cast (saved when the weight trains), the gate's fp32 copy and silu, the
  // weighted output; then the bf16 cast for out_proj
  b.tensors.push_back({"o_fp32", rows * vd * kFp32});
  b.tensors.push_back({"o_rstd", rows * vh * kFp32});
  b.tensors.push_back({"o_normed", rows * vd * kBf16});
  b.tensors.push_back({"z_fp32", rows * vd * kFp32});
  b.tensors.push_back({"z_silu", rows * vd * kFp32});
  // the weight times the bf16 normed output: fp32 under autocast, where the weight is fp32
  b.tensors.push_back({"o_weighted", rows * vd * (r.autocast ? kFp32 : kBf16)});
  std::vector<std::string> norm_saves = {"o_fp32", "o_rstd", "z_fp32", "z_silu", "o_weighted"};
  if (r.weights_train) norm_saves.push_back("o_normed");
  OpDef norm = ops::streaming("gated_norm", 8 * rows * vd * kFp32, 14 * rows * vd * kFp32, norm_saves);
  // The layer's peak is here, in forward: beside everything saved, the module's locals (the qkvz
  // projection, z's copy, the conv output after SiLU, q and k repeated to the value heads in bf16)
  // and the norm's bf16 input and fp32 gated product.
  // (OLMo Hybrid: its g projection instead of the qkvz projection and z's copy)
  const double repeats = vh > kh ? 2 * rows * qk * kBf16 : 0;
  const double projections = m.linear_attention_own_projections ? vd * kBf16 : (conv_dim + vd) * kBf16 + vd * kBf16;
  norm.working_bytes = rows * (projections + conv_dim * kBf16 + vd * kBf16 + vd * kFp32) + repeats;
  norm.fwd_working_bytes = norm.working_bytes;
  b.ops.push_back(norm);
  b.tensors.push_back({"o_out", rows * vd * kBf16});
  b.ops.push_back(gdn_out_proj(b, r, m, g, "o_out"));
  return b;
}

}  // namespace

Block mamba2_block(const RankShape& r, const ModelSpec& m) {
  return r.mixer_kernels == MixerKernels::torch ? mamba2_standalone(r, m, add_mamba2_torch_scan)
                                                : mamba2_standalone(r, m, add_mamba2_fused_scan);
}

// Falcon-H1's parallel hybrid (transformers' FalconH1DecoderLayer.forward): one input norm feeds
// attention and the Mamba-2 mixer, whose outputs are scaled, summed and added to the residual in the
// glue. Both branches form one recompute block. Under transformers, each branch reads its own copy
// of the normed input times its muP multiplier (attention_in_multiplier, ssm_in_multiplier): the
// attention's copy stands in for x_norm (same size, and the norm's output itself is saved by no op),
// the mixer's is one more tensor; a fused implementation folds the multipliers into the weights.
Block attention_mamba2_block(const RankShape& r, const ModelSpec& m) {
  Block b = gqa_block(r, m, false, false);
  b.name = "attention_mamba2";
  const Mamba2Shape g = mamba2_shape(r, m);
  const double rows = r.tokens(), h = double(m.hidden_size);
  const size_t first_mixer_op = b.ops.size();
  std::string input = "x_norm";
  if (m.mamba_input_scaled_copy && r.layouts_from_model_code) {
    b.tensors.push_back({"ssm_in", rows * h * kBf16});
    for (const char* name : {"attn_in_scale", "ssm_in_scale"})
      b.ops.push_back(ops::streaming(name, 2 * rows * h * kBf16, 2 * rows * h * kBf16, {}));
    input = "ssm_in";
  }
  add_mamba2_in_proj(b, r, m, g, input);
  if (r.mixer_kernels == MixerKernels::torch)
    add_mamba2_torch_scan(b, r, m, g);
  else
    add_mamba2_fused_scan(b, r, m, g);
  for (size_t i = first_mixer_op; i < b.ops.size(); ++i) b.ops[i].beside_adapters = true;
  return b;
}

// Wo, the scaled branch outputs summed, the reduction and the residual add.
Block attention_mamba2_glue(const RankShape& r, const ModelSpec& m) {
  Block b = attention_out_glue(r, m, false);
  const double rows = r.tokens(), h = double(m.hidden_size);
  b.ops.insert(b.ops.begin() + 1, ops::streaming("branch_sum", 3 * rows * h * kBf16, 2 * rows * h * kBf16, {}));
  return b;
}

Block gated_deltanet_block(const RankShape& r, const ModelSpec& m) {
  if (m.kimi_delta_attention) return kimi_delta_block(r, m);
  return r.mixer_kernels == MixerKernels::torch ? gated_deltanet_torch(r, m) : gated_deltanet_fused(r, m);
}

// LFM2's gated short convolution (transformers 5.17's Lfm2ShortConv.forward), training without a
// cache: in_proj's output BCx stays alive whole, since B * x saves its B and x views and C * conv
// its C view; the conv saves its input B x; C * conv saves the conv output, which the plain-PyTorch
// fallback of causal_conv1d_fn (F.conv1d padded by kernel - 1 on both sides, then cut to the
// sequence) leaves kernel - 1 rows longer than the fused kernel's; out_proj saves the contiguous
// copy of the product. Both variants save the same tensors otherwise.
Block short_conv_block(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "short_conv";
  const double rows = r.tokens(), h = double(m.hidden_size), c = h / double(r.tp);  // channels on this rank
  const double taps = double(m.short_conv_kernel);
  parts::add_input_norm(b, r, h, true, 1);
  b.ops.push_back(parts::linear(b, r, "in_proj", rows, h, 3 * c, "x_norm", {&LoraTargets::mixer_in}));
  const double conv_rows = r.mixer_kernels == MixerKernels::torch ? r.b * (r.s + taps - 1) : rows;
  b.tensors.push_back({"bcx", rows * 3 * c * kBf16});
  b.tensors.push_back({"bx", rows * c * kBf16});
  b.tensors.push_back({"conv_out", conv_rows * c * kBf16});
  b.tensors.push_back({"gated", rows * c * kBf16});
  b.ops.push_back(ops::streaming("b_times_x", 3 * rows * c * kBf16, 5 * rows * c * kBf16, {"bcx"}));
  OpDef conv = ops::streaming("conv1d", 2 * rows * c * kBf16, 3 * rows * c * kBf16, {"bx"});
  conv.fwd_flops = 2 * rows * c * taps;
  conv.bwd_flops = conv.bwd_exec_flops = 2 * conv.fwd_flops;
  b.ops.push_back(conv);
  b.ops.push_back(ops::streaming("c_times_conv", 3 * rows * c * kBf16, 5 * rows * c * kBf16, {"bcx", "conv_out"}));
  b.ops.push_back(ops::streaming("contiguous", 2 * rows * c * kBf16, 2 * rows * c * kBf16, {}));
  b.ops.push_back(parts::linear(b, r, "out_proj", rows, c, h, "gated", {&LoraTargets::mixer_out}));
  return b;
}

// Mamba-1 as transformers' MambaMixer (FalconMamba, Jamba) trains with mamba_ssm installed: in_proj
// (an nn.Linear, saving its input), then mamba_ssm's mamba_inner_fn at its default checkpoint_lvl 1,
// which saves the in_proj output xz (x and z), x_proj's output x_dbl (dt, B, C), B and C as
// contiguous copies, the scan's chunk states (fp32, one pair of state vectors per channel and
// 2048-token chunk) and the scan output before the z gate; the conv output and dt are recomputed
// in backward, out_proj's input (the gated output) too.
Block mamba1_fused(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "mamba1";
  const double rows = r.tokens(), h = double(m.hidden_size), c = double(m.mamba1_inner) / double(r.tp);
  const double rank = double(m.mamba1_dt_rank), n = double(m.ssm_state_size);
  const double taps = double(m.mamba_conv_kernel), chunks = std::ceil(r.s / 2048);
  parts::add_input_norm(b, r, h, true, 1);
  // mamba_inner_fn reads x_proj's, dt_proj's and out_proj's weights: only in_proj's adapter runs
  // (adapters on the others are refused under fused kernels: validate_layout.cpp)
  b.ops.push_back(parts::linear(b, r, "in_proj", rows, h, 2 * c, "x_norm", {&LoraTargets::mixer_in}));
  b.tensors.push_back({"xz", rows * 2 * c * kBf16});
  b.tensors.push_back({"x_dbl", rows * (rank + 2 * n) * kBf16});
  b.tensors.push_back({"b_c", rows * 2 * n * kBf16});
  b.tensors.push_back({"scan_states", r.b * c * chunks * 2 * n * kFp32});
  b.tensors.push_back({"scan_out", rows * c * kBf16});
  OpDef conv = ops::streaming("conv1d_silu", 2 * rows * c * kBf16, 5 * rows * c * kBf16, {"xz"});
  conv.fwd_flops = 2 * rows * c * taps;
  conv.bwd_flops = 2 * conv.fwd_flops, conv.bwd_exec_flops = 3 * conv.fwd_flops;  // its output recomputed
  b.ops.push_back(conv);
  b.ops.push_back(ops::gemm("x_proj", rows, c, rank + 2 * n, {"x_dbl"}));
  OpDef dt = ops::gemm("dt_proj", rows, rank, c, {"x_dbl"});
  dt.bwd_exec_flops += dt.fwd_flops;  // dt recomputed in backward
  b.ops.push_back(dt);
  // per token, channel and state: exp(dt A), dt B x, the state update and C h (about 9 FLOPs)
  OpDef scan = ops::streaming("selective_scan", rows * (5 * c + 2 * n) * kBf16, 2 * rows * (7 * c + 2 * n) * kBf16,
                              {"xz", "b_c", "scan_states", "scan_out"});
  scan.fwd_flops = 9 * rows * c * n;
  scan.bwd_flops = scan.bwd_exec_flops = 2 * scan.fwd_flops;
  b.ops.push_back(scan);
  b.ops.push_back(ops::gemm("out_proj", rows, c, h, {"scan_out", "xz"}));
  return b;
}

// Mamba-1 as transformers 5.17 trains it without mamba_ssm (JambaMambaMixer.forward with
// causal_conv1d_fn's F.conv1d fallback and mamba_selective_scan's recurrent loop; MambaMixer's
// slow_forward runs the same ops), training without a cache. Read off the code and checked
// against the allocations alive at a Jamba step's peak (reports/hf/README.md):
// - in_proj's output xz stays whole (the conv reads a view of x, the gate one of z); the conv's
//   output is saved by SiLU, SiLU's by x_proj and by D x; x_proj's output dt | B | C (Jamba's own
//   RMSNorms on each: their fp32 copies and normed outputs, dt_proj's and the per-step C's inputs);
// - dt + bias and its softplus (bf16, channels wide);
// - exp(A dt) and dt B in fp32, (channels x state) per token, each saved by the next multiply;
//   x's fp32 copy and B's;
// - the loop's state after every token (fp32, saved by the next step's multiply) and its bf16 copy
//   (saved by the matmul with C): two more (channels x state) tensors per token;
// - y + D x in fp32 and silu(z), saved by the gate's multiply; out_proj's bf16 input.
// dt B x (channels x state, fp32) lives through the loop only.
Block mamba1_torch(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "mamba1";
  const double rows = r.tokens(), h = double(m.hidden_size), c = double(m.mamba1_inner) / double(r.tp);
  const double rank = double(m.mamba1_dt_rank), n = double(m.ssm_state_size);
  const double taps = double(m.mamba_conv_kernel), states = rows * c * n;
  parts::add_input_norm(b, r, h, true, 1);
  b.ops.push_back(parts::linear(b, r, "in_proj", rows, h, 2 * c, "x_norm", {&LoraTargets::mixer_in}));
  b.tensors.push_back({"xz", rows * 2 * c * kBf16});
  b.tensors.push_back({"conv_out", r.b * (r.s + taps - 1) * c * kBf16});
  b.tensors.push_back({"x_act", rows * c * kBf16});
  OpDef conv = ops::streaming("conv1d_silu", 2 * rows * c * kBf16, 5 * rows * c * kBf16, {"xz", "conv_out"});
  conv.fwd_flops = 2 * rows * c * taps;
  conv.bwd_flops = conv.bwd_exec_flops = 2 * conv.fwd_flops;
  b.ops.push_back(conv);
  b.tensors.push_back({"x_dbl", rows * (rank + 2 * n) * kBf16});
  if (m.mamba1_inner_norms) b.tensors.push_back({"dt_b_c_normed", rows * (rank + 2 * n) * (2 * kFp32 + kBf16)});
  b.ops.push_back(parts::linear(b, r, "x_proj", rows, c, rank + 2 * n, "x_act", {&LoraTargets::mamba_x}));
  // dt_proj.weight @ dt: the module's forward (and an adapter on it) never runs
  b.ops.push_back(ops::gemm("dt_proj", rows, rank, c, {"x_dbl"}));
  b.tensors.push_back({"dt", 2 * rows * c * kBf16});
  for (const char* name : {"discrete_a", "discrete_b", "scan_states"}) b.tensors.push_back({name, states * kFp32});
  b.tensors.push_back({"scan_states_bf16", states * kBf16});
  b.tensors.push_back({"x_b_fp32", rows * (c + n) * kFp32});
  OpDef scan = ops::streaming(
      "selective_scan_loop", 6 * states * kFp32, 12 * states * kFp32,
      {"dt", "discrete_a", "discrete_b", "scan_states", "scan_states_bf16", "x_b_fp32", "x_act", "x_dbl"});
  scan.fwd_flops = 9 * states;
  scan.bwd_flops = scan.bwd_exec_flops = 2 * scan.fwd_flops;
  scan.fwd_working_bytes = states * kFp32;  // dt B x, read by the loop
  b.ops.push_back(scan);
  b.tensors.push_back({"y_skip", rows * c * kFp32});
  b.tensors.push_back({"gate_silu", rows * c * kBf16});
  b.tensors.push_back({"y_out", rows * c * kBf16});
  b.ops.push_back(ops::streaming("gate", 20 * rows * c, 36 * rows * c, {"y_skip", "gate_silu", "xz"}));
  b.ops.push_back(parts::linear(b, r, "out_proj", rows, c, h, "y_out", {&LoraTargets::mixer_out}));
  return b;
}

Block mamba1_block(const RankShape& r, const ModelSpec& m) {
  return r.mixer_kernels == MixerKernels::torch ? mamba1_torch(r, m) : mamba1_fused(r, m);
}

Block mixer_out_glue(const RankShape& r, int64_t hidden) {
  Block b;
  b.name = "mixer.out";
  if (r.tp > 1) b.ops.push_back(parts::output_reduce(r, double(hidden)));
  b.ops.push_back(parts::residual_add(r, double(hidden)));
  return b;
}

}  // namespace remat
