// DeepSeek-V4's layer as transformers 5.17 trains it (modeling_deepseek_v4.py): hyper-connections
// around each half of the layer, attention over one shared key-value head (a sliding window, with
// pooled keys on CSA and HCA layers) with a sink per head in eager attention, and the grouped output
// projection. What autograd saves was read from the graph of one layer of each kind
// (examples/hf/dsv4/saved_probe.py, reports/hf/dsv4-saved-h200.jsonl).
#include <cmath>

#include "exact_ops.hpp"
#include "exact_parts.hpp"
#include "remat/cost/exact_blocks.hpp"

namespace remat {

using ops::kBf16;
using ops::kFp32;

namespace {

// Keys the compressor pools per sequence: one per whole window of its rate.
double pooled_keys(const RankShape& r, const ModelSpec& m, CompressedAttention kind) {
  if (kind == CompressedAttention::sliding) return 0;
  const double rate = double(kind == CompressedAttention::sparse ? m.csa_rate : m.hca_rate);
  return std::floor(r.s / rate);
}

// The n streams (`stream`, the input) flattened, cast to fp32 and put through a weightless RMSNorm
// (saves the fp32 copy and 1/rms per row), and F.linear with the mixing weights in fp32 (saves the
// normed fp32 copy where those weights train); `saved_more` names what else the op saves.
OpDef add_streams_normed(Block& b, const RankShape& r, const ModelSpec& m, const std::string& name,
                         const std::vector<std::string>& saved_more, double outputs) {
  const double rows = r.seq_tokens(), width = double(m.hyper_connections) * double(m.hidden_size);
  b.tensors.push_back({"stream", rows * width * r.stream_bytes()});
  b.tensors.push_back({"hc_x32", rows * width * kFp32});
  b.tensors.push_back({"hc_normed32", rows * width * kFp32});
  // F.linear saves its normed input for the mixing weights' gradient: only where they train
  std::vector<std::string> saves = {"stream", "hc_x32"};
  if (r.weights_train) saves.push_back("hc_normed32");
  saves.insert(saves.end(), saved_more.begin(), saved_more.end());
  OpDef op = ops::streaming(name, rows * width * (kBf16 + 6 * kFp32), rows * width * (kBf16 + 6 * kFp32), saves);
  op.fwd_flops = 2 * rows * width * outputs;
  op.bwd_flops = op.bwd_exec_flops = 2 * op.fwd_flops;
  return op;
}

// DeepseekV4HyperConnection.forward: the streams normed and mixed to pre, post and comb, the sigmoids,
// the softmax and Sinkhorn's 2 x iters - 1 divisions on n x n per row (each saves its operands:
// `hc_mix`), and the streams collapsed by `pre` (saves them), an fp32 product of their width.
void add_hyper_connection(Block& b, const RankShape& r, const ModelSpec& m) {
  const double rows = r.seq_tokens(), n = double(m.hyper_connections), width = n * double(m.hidden_size);
  const double divisions = 2 * double(m.hc_sinkhorn_iters) - 1;
  b.tensors.push_back({"hc_mix", rows * kFp32 * (divisions * n * (n + 1) + 4 * n * (n + 2))});
  OpDef mix = add_streams_normed(b, r, m, "hc_pre", {"hc_mix"}, (2 + n) * n);
  mix.fwd_working_bytes = rows * width * kFp32;
  b.ops.push_back(mix);
}

// An RMSNorm of `width` whose code upcasts (DeepseekV4RMSNorm): the fp32 copy and 1/rms saved, and
// the bf16 normed product where its weight trains; its output `out` read by what follows.
void add_upcast_rmsnorm(Block& b, const RankShape& r, const std::string& p, double rows, double width,
                        const std::string& out) {
  b.tensors.push_back({p + "32", rows * width * kFp32});
  b.tensors.push_back({p + "_rstd", rows * kFp32});
  b.tensors.push_back({p + "_normed", rows * width * kBf16});
  b.tensors.push_back({out, rows * width * kBf16});
  std::vector<std::string> saves = {p + "32", p + "_rstd"};
  if (r.weights_train) saves.push_back(p + "_normed");
  b.ops.push_back(ops::streaming(p + "_norm", rows * width * (kBf16 + 3 * kFp32 + 2 * kBf16),
                                 2 * rows * width * (kBf16 + 3 * kFp32 + 2 * kBf16), saves));
}

// The compressor (DeepseekV4CSACompressor / DeepseekV4HCACompressor without a cache): kv_proj and
// gate_proj on the normed input, `series` x head_dim wide; the gates plus the position bias laid out
// as windows (CSA: two overlapping series in a zeroed window of twice the rate), their fp32 softmax
// over each window (saved), cast to bf16 and multiplied by the keys (both saved), summed per window,
// and the pooled keys normed (their fp32 copy saved). CSA's indexer runs beside it.
void add_compressor(Block& b, const RankShape& r, const ModelSpec& m, CompressedAttention kind, double pooled) {
  const double rows = r.tokens(), hd = double(m.head_dim), h = double(m.hidden_size);
  const double series = kind == CompressedAttention::sparse ? 2 : 1;
  b.ops.push_back(parts::linear(b, r, "compress_kv", rows, h, series * hd, "x_norm", {&LoraTargets::compress_kv}));
  b.ops.push_back(parts::linear(b, r, "compress_gate", rows, h, series * hd, "x_norm", {&LoraTargets::compress_gate}));
  const double slots = rows * series * hd;  // each window's slots: rate (x 2 on CSA) per pooled key
  b.tensors.push_back({"pool_kv", slots * kBf16});
  b.tensors.push_back({"pool_probs32", slots * kFp32});
  b.tensors.push_back({"pool_probs", slots * kBf16});
  b.ops.push_back(ops::streaming("pool", slots * (4 * kBf16 + 2 * kFp32 + 2 * kBf16), slots * (6 * kBf16 + 3 * kFp32),
                                 {"pool_kv", "pool_probs32", "pool_probs"}));
  add_upcast_rmsnorm(b, r, "pooled", r.b * pooled, hd, "pooled_keys");
  if (kind == CompressedAttention::sparse) {
    // the indexer (DeepseekV4Indexer): its top-k indices carry no gradient, so the graph it builds is
    // dropped when it returns; its forward holds the fp32 scores of every query against every pooled
    // key in index_n_heads heads, their ReLU and the weighted product at once
    const double heads = double(m.csa_index_heads), dim = double(m.csa_index_head_dim);
    OpDef index = ops::streaming("indexer", 0, 0, {});
    index.forward_only = true;
    index.fwd_flops =
        2 * rows * (4 * h * dim + double(m.q_lora_rank) * heads * dim + h * heads) + 2 * rows * heads * dim * pooled;
    const double scores = rows * heads * pooled * kFp32;
    index.fwd_bytes = 6 * scores;
    // (its forward only: a replay's, and the forward's; nothing of it is alive in the backward)
    index.fwd_working_bytes = 3 * scores + rows * heads * dim * (kBf16 + kFp32);
    b.ops.push_back(index);
  }
}

}  // namespace

// Hyper-connection, input norm, queries (q_a_proj, its norm, q_b_proj, a weightless norm that saves
// the fp32 copy and its bf16 input), the shared key-value head (kv_proj, its norm), rotary on both
// (cos and sin saved only), the compressor, then eager attention as GPT-OSS's: QK^T against the
// window and the pooled keys (the keys one head the matmul broadcasts without a copy), the mask, a
// sink column, the row max subtracted and a bf16 softmax saved with its max's indices; PV; the
// inverse rotary on the output, its copy grouped for o_a_proj (saved), o_a_proj's output copied
// flat for o_b_proj (saved).
Block compressed_attention_block(const RankShape& r, const ModelSpec& m, CompressedAttention kind) {
  Block b;
  b.name = "v4attn";
  const double rows = r.tokens(), h = double(m.hidden_size), hd = double(m.head_dim);
  const double nh = double(m.num_attention_heads / r.tp), q_latent = double(m.q_lora_rank);
  const double pooled = pooled_keys(r, m, kind), keys = r.s + pooled;
  add_hyper_connection(b, r, m);
  parts::add_input_norm(b, r, h, true, 2);
  b.inputs = {"stream"};
  b.ops.push_back(parts::linear(b, r, "q_a", rows, h, q_latent, "x_norm", {&LoraTargets::q_a}));
  add_upcast_rmsnorm(b, r, "q_latent", rows, q_latent, "q_residual");
  b.ops.push_back(parts::linear(b, r, "q_b", rows, q_latent, nh * hd, "q_residual", {&LoraTargets::q_b}));
  b.tensors.push_back({"q_raw", rows * nh * hd * kBf16});
  b.tensors.push_back({"q32", rows * nh * hd * kFp32});
  b.ops.push_back(ops::streaming("q_norm", rows * nh * hd * (2 * kBf16 + 2 * kFp32),
                                 rows * nh * hd * (3 * kBf16 + 2 * kFp32), {"q_raw", "q32"}));
  b.ops.push_back(parts::linear(b, r, "kv", rows, h, hd, "x_norm", {&LoraTargets::kv_a}));
  add_upcast_rmsnorm(b, r, "kv_latent", rows, hd, "kv_normed_out");
  b.tensors.push_back({"q", rows * nh * hd * kBf16});
  b.tensors.push_back({"kv", r.b * keys * hd * kBf16});
  const double rotated = 2 * rows * (nh + 1) * hd * kBf16;  // the cat writes whole heads
  b.ops.push_back(ops::streaming("rotary", rotated, rotated, {}));
  if (kind != CompressedAttention::sliding) add_compressor(b, r, m, kind, pooled);
  // QK^T and PV of head_dim each over the window and the pooled keys, as the eager kernels compute them
  const double scores = r.b * nh * r.s * (keys + 1), fwd = 2 * rows * nh * 2 * hd * (0.5 * r.s + pooled);
  if (r.flash_attention && !r.layouts_from_model_code) {
    b.tensors.push_back({"o", rows * nh * hd * kBf16});
    b.tensors.push_back({"lse", r.b * nh * r.s * kFp32});
    b.ops.push_back(ops::attention("flash_attention", fwd, keys, hd, {"q", "kv", "o", "lse"}));
    b.attention_stats = {"lse"};
  } else {
    // under autocast the softmax runs in fp32 (its output saved so), and PV reads a bf16 copy of it
    b.tensors.push_back({"probs", scores * (r.autocast ? kFp32 : kBf16)});
    b.tensors.push_back({"row_max_index", r.b * nh * r.s * 8});
    std::vector<std::string> saves = {"q", "kv", "probs", "row_max_index"};
    if (r.b > 1 || r.autocast) {
      // repeat_kv's broadcast head becomes a copy per query head for QK^T and for PV (each saved) where
      // the batch holds more than one sequence, or where autocast casts the fp32 keys (the norm's fp32
      // weight times its bf16 output) to bf16
      b.tensors.push_back({"k_copy", r.b * nh * keys * hd * kBf16});
      b.tensors.push_back({"v_copy", r.b * nh * keys * hd * kBf16});
      saves.insert(saves.end(), {"k_copy", "v_copy"});
    }
    if (r.autocast) {
      b.tensors.push_back({"probs_cast", r.b * nh * r.s * keys * kBf16});
      saves.push_back("probs_cast");
    }
    OpDef attention = ops::attention("attention", fwd, keys, hd, saves);
    attention.materialized_scores = true;
    attention.gemm_flops_each = 2 * rows * keys * nh * 2 * hd;
    attention.fwd_bytes = 12 * scores;
    attention.bwd_bytes = 22 * scores;
    // the masked scores and the ones less the row max, alive beside the softmax's output
    attention.fwd_working_bytes = 2 * scores * kBf16 + r.b * r.s * keys * kBf16;
    // the softmax's backward: three score-sized gradients beside the saved probabilities, after PV's
    // backward freed the copies only it read (the values' and, under autocast, the bf16 probabilities);
    // and the keys' gradient per query head, the broadcast head's made whole (peak-traces-h200/dsv4:
    // a reentrant LoRA step's peak in its CSA layer's attention backward)
    attention.working_bytes = 3 * b.tensor_bytes("probs") - b.tensor_bytes("v_copy") - b.tensor_bytes("probs_cast") +
                              r.b * nh * keys * hd * kBf16;
    b.ops.push_back(attention);
    b.attention_stats = {"probs"};
  }
  // PV's output made contiguous, rotated back and copied into o_a_proj's groups (saved)
  b.tensors.push_back({"o_grouped", rows * nh * hd * kBf16});
  b.ops.push_back(ops::streaming("o_layout", 6 * rows * nh * hd * kBf16, 4 * rows * nh * hd * kBf16, {}));
  const double grouped = double(m.o_groups) * double(m.o_lora_rank);
  b.ops.push_back(
      parts::linear(b, r, "o_a", rows, nh * hd, double(m.o_lora_rank), "o_grouped", {}, double(m.o_groups)));
  b.tensors.push_back({"o_a_out", rows * grouped * kBf16});
  b.ops.push_back(ops::streaming("o_a_flatten", 2 * rows * grouped * kBf16, 2 * rows * grouped * kBf16, {}));
  b.ops.push_back(parts::linear(b, r, "o_b", rows, grouped, h, "o_a_out", {&LoraTargets::o}));
  return b;
}

// DeepseekV4HyperHead before the final norm: the streams flattened to fp32 and normed (both copies
// saved: the norm's product and F.linear), pre from a sigmoid, and the streams collapsed (saved).
void add_hyper_head(Block& head, const RankShape& r, const ModelSpec& m) {
  head.ops.insert(head.ops.begin(), add_streams_normed(head, r, m, "hc_head", {}, double(m.hyper_connections)));
}

// The hyper-connection before the MoE (DeepseekV4DecoderLayer: ffn_hc), on the streams the
// attention half wrote.
Block hyper_connection_block(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "hc.ffn";
  add_hyper_connection(b, r, m);
  b.inputs = {"stream"};
  return b;
}

// post x the block's output plus comb^T x the streams: the product saves the block's output and the
// bf16 post and comb (the streams are saved by the hyper-connection before the block); the sum is
// the next streams. `name`: "attn.out" after the attention, "mlp.out" after the MoE.
Block hyper_connection_out_glue(const RankShape& r, const ModelSpec& m, const char* name) {
  Block b;
  b.name = name;
  const double rows = r.seq_tokens(), n = double(m.hyper_connections), h = double(m.hidden_size);
  b.tensors.push_back({"block_out", rows * h * kBf16});
  b.tensors.push_back({"hc_post", rows * n * (n + 1) * kBf16});
  OpDef mix = ops::streaming("hc_post", rows * n * h * 4 * kBf16, rows * n * h * 6 * kBf16, {"block_out", "hc_post"});
  mix.fwd_flops = 2 * rows * n * n * h + 2 * rows * n * h;
  mix.bwd_flops = mix.bwd_exec_flops = 2 * mix.fwd_flops;
  b.ops.push_back(mix);
  return b;
}

}  // namespace remat
