// Recompute blocks from real shapes. Sources: EAGLE paper Appendix C (block
// boundaries), Megatron-LM's layer implementation (what each op saves),
// Korthikanti et al. 2022 sec. 4.2 (sequence parallel sharding).
#include "remat/cost/exact_blocks.hpp"

#include <algorithm>

#include "exact_ops.hpp"
#include "exact_parts.hpp"
#include "remat/cost/params.hpp"
#include "remat/spec/lora_placement.hpp"

namespace remat {

using ops::kBf16;
using ops::kFp32;

RankShape rank_shape(const TrainingSpec& t) {
  RankShape r;
  r.b = double(t.mbs);
  r.s = double(t.seq);
  r.tp = t.tp;
  r.ep = t.ep;
  r.sp = t.sequence_parallel && t.tp > 1;
  r.swiglu_fused = t.swiglu_fused;
  r.gqa_expand_kv = t.gqa_expand_kv;
  r.flash_attention = t.flash_attention;
  r.glu_linear_copy = t.glu_linear_copy;
  r.moe_probs_scale_outputs = t.moe_probs_scale_outputs;
  r.v_views_qkv = t.v_views_qkv;
  r.layouts_from_model_code = t.layouts_from_model_code;
  r.ordered_backward = t.ordered_backward;
  r.norm_fp32_upcast = t.norm_fp32_upcast;
  r.rope_rotate_half = t.rope_rotate_half;
  r.mixer_kernels = t.mixer_kernels;
  r.softmax_fp32 = t.softmax_fp32;
  r.autocast = t.params_fp32_autocast;
  r.weights_train = t.lora_rank == 0;
  if (t.lora_rank > 0) r.lora = t.lora_targets, r.lora_rank = double(t.lora_rank), r.lora_dropout = t.lora_dropout;
  r.lora_bytes = t.lora_adapter_bytes > 0 ? double(t.lora_adapter_bytes) : 2;
  r.peft_moe_conversion = t.peft_moe_conversion;
  if (t.grads_allocated_in_backward && t.microbatches() == 1 && t.lora_rank == 0)
    r.weight_grad_bytes = bytes_per_param(t, double(t.dp)).gradients;
  return r;
}

RankShape with_model(RankShape r, const ModelSpec& m) {
  r.layer_norm = m.norm_kind == NormKind::layer;
  if (r.layer_norm && r.norm_fp32_upcast) r.layer_norm_code = m.layer_norm_code;
  r.norm_scale_fp32 = m.norm_scale_fp32;
  r.norm_affine = m.norm_affine;
  if (r.lora_experts_gate_up_rank > 0 || r.lora_experts_down_rank > 0) return r;  // applied already
  const LoraPlacement lora = lora_placement(m, r.lora, r.lora_rank, r.peft_moe_conversion);
  r.lora = lora.linear;
  r.lora_experts_gate_up_rank = lora.experts_gate_up_rank;
  r.lora_experts_down_rank = lora.experts_down_rank;
  return r;
}

int64_t gqa_head_dim(const ModelSpec& m) { return m.head_dim > 0 ? m.head_dim : m.hidden_size / m.num_attention_heads; }

namespace parts {

OpDef input_gather(const RankShape& r, double hidden) {
  const double t = double(r.tp);
  const double full = r.tokens() * hidden * kBf16;
  const double ring = (t - 1) / t * full;
  if (r.sp) return ops::collective("gather_input", ring, 2 * ring, r.tp);
  return ops::collective("allreduce_dinput", 0, 2 * ring, r.tp);
}

OpDef output_reduce(const RankShape& r, double hidden) {
  const double t = double(r.tp);
  const double ring = (t - 1) / t * r.tokens() * hidden * kBf16;
  if (r.sp) return ops::collective("reduce_scatter_output", ring, ring, r.tp);
  return ops::collective("allreduce_output", 2 * ring, 0, r.tp);
}

OpDef residual_add(const RankShape& r, double hidden) {
  const double bytes = r.seq_tokens() * hidden * kBf16;
  return ops::streaming("residual_add", 3 * bytes, 2 * bytes, {});
}

// Transformers' RMSNorm (models/llama/modeling_llama.py, LlamaRMSNorm.forward, and every family
// copied from it): x.to(float32), whose copy pow() saves; rsqrt's output, saved with it by the
// multiply; then weight * normalized.to(bf16), which saves the bf16 normalized tensor when the
// weight trains. The block input itself is saved by nothing. Under autocast the stream is already
// fp32 (no copy), the product stays fp32, and each GEMM reading the output saves its own bf16 cast.
// LlamaRMSNorm.forward (transformers/models/llama/modeling_llama.py) as eager kernels over `elems`
// elements of the stream dtype (s bytes: 2, or 4 under autocast, where both casts are no-ops), and
// their gradients as torch's autograd formulas (tools/autograd/derivatives.yaml) run them, bytes
// read + written per element. Forward: x.to(fp32) 2+4, pow(2) 4+4, mean 4, x * rsqrt 4+4 (the
// per-row factor is negligible), .to(bf16) 4+2, weight * h s+s: 36 in bf16. Backward: weight's
// product: dy * w s+s and, when the weight trains, dy * h s+s+s with its row sum s; .to(bf16)'s
// gradient 2+4; in fp32: d * rsqrt 4+4, d * x 4+4+4 and its row sum 4, mean's expand 4, pow's
// x.pow(1) copy 4+4, times 2 4+4, times d 4+4+4, the two paths into x added 4+4+4; .to(fp32)'s
// gradient 4+2: 92 in bf16 with a trained weight. Counted kernel by kernel in a profiled step
// (reports/hf/profile-all-h100.jsonl: 33 norms of Llama-3.2-1B, each of these kernels 33 times).
OpDef upcast_norm_op(const std::string& name, double elems, const RankShape& r, std::vector<std::string> saves) {
  const double s = r.stream_bytes(), casts = s == kBf16 ? 6 : 0;
  const double fwd = casts + 8 + 4 + 8 + casts + 2 * s;
  const double weight_grad = r.weights_train ? 4 * s : 0;
  const double bwd = 2 * s + weight_grad + casts + (8 + 12 + 4 + 4 + 8 + 8 + 12 + 12) + casts;
  return ops::streaming(name, fwd * elems, bwd * elems, std::move(saves));
}

// Bytes per element of the normalized tensor the weight's product saves when the weight trains:
// the stream's dtype (LlamaRMSNorm), or fp32 where the weight multiplies before the cast back
// (Gemma's norms: normalized.float() * (1 + weight.float()), models/gemma*/modeling_gemma*.py).
double normed_bytes(const RankShape& r) { return r.norm_scale_fp32 ? kFp32 : r.stream_bytes(); }

// The same for a norm on a GEMM's output (q and k norms, post-norms, sub-norms), which under autocast
// is bf16 whatever the stream: LlamaRMSNorm casts the normalized tensor back to that dtype before the
// weight's product (EXAONE 4.0-1.2B's mixed SFT at 32k: its q/k norms' and post-norms' saved casts
// 2 bytes an element, +3.13% while counted at the fp32 stream's 4, peak-traces-h200/random-blind48)
double gemm_output_normed_bytes(const RankShape& r) {
  return r.norm_scale_fp32 ? kFp32 : r.autocast ? kBf16 : r.stream_bytes();
}

void add_upcast_norm(Block& b, const RankShape& r, double hidden, int readers) {
  const double rows = r.seq_tokens();
  b.inputs = {"x"};
  b.inputs_saved = false;
  b.tensors.push_back({"x", rows * hidden * r.stream_bytes()});
  std::vector<std::string> saves = {"x", "rstd"};
  if (!r.autocast) {
    b.tensors.push_back({"x32", rows * hidden * kFp32});
    saves[0] = "x32";
  }
  b.tensors.push_back({"rstd", rows * kFp32});
  b.tensors.push_back({"x_normed", rows * hidden * normed_bytes(r)});
  if (r.weights_train && r.norm_affine) saves.push_back("x_normed");
  b.tensors.push_back({"x_norm", rows * hidden * kBf16 * (r.autocast ? readers : 1)});
  b.ops.push_back(upcast_norm_op("rmsnorm", rows * hidden, r, saves));
}

double adapted_count(const LoraTargets& l, const std::vector<bool LoraTargets::*>& matrices) {
  double n = 0;
  for (auto m : matrices) n += l.*m ? 1 : 0;
  return n;
}

bool saves_input(const RankShape& r, bool adapted) {
  return r.weights_train || (r.lora_rank > 0 && adapted && r.lora_dropout == 0 && r.lora_bytes == kBf16);
}

// HBM bytes per row and per input or output element that one LoRA adapter's elementwise work moves
// beside the base GEMM, read from peft/tuners/lora/layer.py (Linear.forward) with adapters of
// `e` bytes on a bf16 model: forward, x cast to e (2 + e, when e is not 2), * scaling (e + e),
// result + it (2 + e + e: the sum in e), the sum cast back (e + 2); backward, the casts' gradients
// (2 + e each), the scaling's (e + e), the input's gradient added to the base path's (2 + 2 + 2).
// Dropout adds its mask (1) and product (2 + 2) each way. The rank-wide tensors are left out.
// Measured under torch.profiler on the H100: reports/hf/profile-h100.jsonl (direct_copy,
// bfloat16_copy, the fp32 multiply and add kernels).
LoraBytes lora_bytes_per_row(double e, bool dropout) {
  const double cast = e != kBf16 ? kBf16 + e : 0;
  const double drop = dropout ? 1 + kBf16 + kBf16 : 0;
  return {.fwd_in = cast + drop,
          .fwd_out = 2 * e + (kBf16 + 2 * e) + cast,
          .bwd_in = cast + 3 * kBf16 + drop,
          .bwd_out = 2 * cast + 2 * e};
}

// The adapters' GEMMs: lora_A reads x (e per input element) and lora_B writes its output (e per
// output element); backward, lora_B's and lora_A's input and weight gradients read and write theirs
// (e + e on either side). With fp32 adapters these are cuBLAS's fp32 kernels, far from bandwidth:
// their FLOPs (2 rows r (in + out) per adapter forward) and rank go with them for a measured rate.
OpDef lora_gemm_op(const RankShape& r, const std::string& name, double rows, double in_all, double out_all,
                   double adapted) {
  const double e = r.lora_bytes;
  OpDef op = ops::streaming(name + ".lora_gemm", rows * e * (in_all + out_all), rows * 2 * e * (in_all + out_all), {});
  if (e == kFp32) {
    op.fp32_adapter_flops = 2 * rows * r.lora_rank * (in_all + out_all);
    op.gemm_flops_each = op.fp32_adapter_flops / adapted, op.adapter_rank = r.lora_rank;
  }
  return op;
}

OpDef linear(Block& b, const RankShape& r, const std::string& name, double rows, double in, double out,
             const std::string& input, const std::vector<bool LoraTargets::*>& matrices, double count) {
  double adapted = r.lora_rank > 0 ? adapted_count(r.lora, matrices) : 0;
  const bool fused = matrices.size() == 3 ? r.lora.fused_qkv : matrices.size() == 2 && r.lora.fused_gate_up;
  if (fused) adapted = std::min(adapted, 1.0);
  std::vector<std::string> saves;
  if (saves_input(r, adapted > 0)) saves.push_back(input);
  OpDef op = ops::gemm(name, rows, in, out, saves, count);
  if (!r.weights_train) op.bwd_flops = op.bwd_exec_flops = op.fwd_flops;  // frozen: the input's gradient only
  op.weight_grad_bytes = r.weight_grad_bytes * in * out * count;
  if (adapted == 0) return op;
  // PEFT (tuners/lora/layer.py, Linear.forward): lora_B(lora_A(dropout(x))) * scaling; lora_B saves
  // lora_A's rank-wide output; lora_A saves its input, which is each adapter's own tensor when
  // dropout (a copy and its bool mask) or fp32 adapters (a cast to fp32) make one
  // Under autocast (fp32 parameters) each adapter GEMM runs in bf16 on its own bf16 cast of the input
  // (autocast caches casts of leaf weights only), and lora_A's output is bf16
  const double gemm_bytes = r.autocast ? kBf16 : r.lora_bytes;
  b.tensors.push_back({name + ".lora", adapted * rows * r.lora_rank * gemm_bytes});
  std::vector<std::string> lora_saves = {name + ".lora"};
  const bool own_copy = r.lora_dropout > 0 || gemm_bytes != kBf16 || r.autocast;
  if (own_copy) {
    const double per_element = (r.lora_dropout > 0 ? 1 : 0) + gemm_bytes;
    b.tensors.push_back({name + ".input", adapted * rows * in * per_element, 0, 0, adapted});
    lora_saves.push_back(name + ".input");
  }
  const LoraBytes traffic = lora_bytes_per_row(r.lora_bytes, r.lora_dropout > 0);
  // every adapter reads the whole input; the outputs split over the matrices of the op
  const double in_all = adapted * in, out_all = out * adapted / double(std::max<size_t>(matrices.size(), 1));
  b.ops.push_back(ops::streaming(name + ".lora", rows * (traffic.fwd_in * in_all + traffic.fwd_out * out_all),
                                 rows * (traffic.bwd_in * in_all + traffic.bwd_out * out_all), lora_saves));
  // its forward, by the last adapter: the base outputs of the op's matrices (saved, if at all, by
  // later ops), the input, and with dropout the adapter's cast of it, which the loop keeps as `x`
  // beside the dropped copy lora_A saves; then lora_B's output beside its scaled copy (`result +
  // lora_B(..) * scaling`), in the adapters' dtype. What a replay of the layer holds there
  // (peak-traces-h200/unseen9: the up and the down adapter of a checkpointed LLaMA layer)
  double cast_held = r.lora_dropout > 0 && gemm_bytes != kBf16 ? in * gemm_bytes : 0;
  double dropped_before_b = 0;  // of cast_held, what is freed as lora_A returns, before lora_B runs
  if (r.autocast && r.lora_bytes == kFp32) {
    // fp32 adapters under autocast: the loop casts a bf16 input (a GEMM's output; a norm's is fp32
    // already) to fp32 and drops that copy out in fp32; lora_A saves its autocast cast instead
    // (peak-traces-h200/unseen10/sc2nodrop-...: StarCoder2's c_proj adapter in a replay holds both).
    // The dropped copy is a temporary of `lora_B(lora_A(dropout(x)))` that nothing saves: it is gone
    // before lora_B's outputs exist (Wizard-Vicuna-30B's down adapter, mixed, with and without a
    // reentrant replay: the peak at lora_A's output, lora_B's weight not yet cast,
    // peak-traces-h200/random-blind38)
    const bool fp32_input = input.starts_with("x_norm");
    cast_held = in * ((fp32_input ? 0 : kFp32) + (r.lora_dropout > 0 ? kFp32 : 0));
    dropped_before_b = r.lora_dropout > 0 ? in * kFp32 : 0;
  }
  OpDef& adapters = b.ops.back();
  if (own_copy && r.lora_dropout > 0) adapters.dropout_mask_bytes = adapted * rows * in;
  adapters.fwd_working_bytes = rows * (kBf16 * out_all + cast_held);
  adapters.input_held = input;
  const double lora_out_bytes = r.autocast ? kBf16 : r.lora_bytes;
  const double each_out = out / double(std::max<size_t>(matrices.size(), 1));
  OpDef gemms = lora_gemm_op(r, name, rows, in_all, out_all, adapted);
  gemms.fwd_working_bytes = b.ops.back().fwd_working_bytes + rows * (2 * lora_out_bytes * each_out - dropped_before_b);
  gemms.input_held = input;
  b.ops.push_back(gemms);
  return op;
}

// LayerNorm (torch's native kernel, also under autocast, which runs it in fp32): saves its
// input, the fp32 mean and 1/std per row; each GEMM reading the output saves its bf16 copy.
// OLMo 1's OlmoLayerNorm (models/olmo/modeling_olmo.py) hands the kernel an fp32 copy of its input,
// so the saved input is that copy, and a forward and a backward cast (2+4 each) move with it.
void add_native_layer_norm(Block& b, const RankShape& r, double hidden, int readers) {
  const double rows = r.seq_tokens();
  const bool fp32_copy = r.layer_norm_code == LayerNormCode::fp32_input && !r.autocast;
  b.inputs = {"x"};
  b.tensors.push_back({"x", rows * hidden * r.stream_bytes()});
  std::string saved_input = "x";
  if (fp32_copy) {
    b.inputs_saved = false;
    b.tensors.push_back({"x32", rows * hidden * kFp32});
    saved_input = "x32";
  }
  b.tensors.push_back({"mean", rows * kFp32});
  b.tensors.push_back({"rstd", rows * kFp32});
  b.tensors.push_back({"x_norm", rows * hidden * kBf16 * (r.autocast ? readers : 1)});
  // under autocast layer_norm runs in fp32: its fp32 output, which the module's caller holds while the
  // block runs, and of which each GEMM makes (and may save) its own bf16 cast, x_norm above
  // (peak-traces-h200/unseen10/sc2-lora-re-do0.1-mixed-dpo: a 216 MiB fp32 layer_norm output beside
  // the c_proj adapter's forward, 12288 x 4608)
  if (r.autocast) b.tensors.push_back({"x_norm_held", rows * hidden * kFp32});
  OpDef op = ops::rmsnorm("layernorm", rows, hidden, saved_input, "rstd");
  op.saves.push_back("mean");
  if (fp32_copy) op.fwd_bytes += 2 * 6 * rows * hidden, op.bwd_bytes += 6 * rows * hidden;
  b.ops.push_back(op);
  b.tag(kLayernormTag, {"mean", "rstd", "x_norm", "layernorm"});
}

// Cohere's CohereLayerNorm (models/cohere/modeling_cohere.py; Cohere2's is the same code) as eager
// fp32 ops: x.to(fp32), its mean, (x - mean) for pow(2), whose copy pow saves, the variance's mean,
// rsqrt (its per-row output saved), (x - mean) again, saved by the multiply with rsqrt, then
// weight.float() * normalized, which saves the fp32 normalized tensor when the weight trains, and
// the cast back. The block input is saved by nothing. Bytes read + written per element (bf16
// stream): forward 6 cast, 4 mean, 8 and 8 the two subtractions, 8 pow, 4 its mean, 8 the rsqrt
// product, 8 the weight's, 6 the cast back: 60. Backward as autograd's formulas run them: 6 the
// cast back's, 8 into the normalized tensor and 12+4 into the weight, 8 into (x - mean) and 12+4
// into rsqrt, 4 the variance's expand, 24 pow's (x.pow(1), times 2, times the gradient), each
// subtraction's negated gradient 8 and its row sum 4 (twice), 4 the mean's expand, two sums into
// x's gradient 12 each, 6 the fp32 cast's: 140, 124 with a frozen weight. Under autocast the stream
// is fp32 and both casts are no-ops.
OpDef eager_layer_norm_op(const std::string& name, double elems, bool casts, bool weight_trains,
                          std::vector<std::string> saves) {
  const double cast_bytes = casts ? 6 : 0;
  const double fwd = 48 + 2 * cast_bytes, bwd = 112 + (weight_trains ? 16 : 0) + 2 * cast_bytes;
  return ops::streaming(name, fwd * elems, bwd * elems, std::move(saves));
}

void add_eager_layer_norm(Block& b, const RankShape& r, double hidden, int readers) {
  const double rows = r.seq_tokens(), elems = rows * hidden;
  b.inputs = {"x"};
  b.inputs_saved = false;
  b.tensors.push_back({"x", elems * r.stream_bytes()});
  b.tensors.push_back({"centered", elems * kFp32});
  b.tensors.push_back({"centered_again", elems * kFp32});
  b.tensors.push_back({"rstd", rows * kFp32});
  b.tensors.push_back({"x_normed", elems * kFp32});
  b.tensors.push_back({"x_norm", elems * kBf16 * (r.autocast ? readers : 1)});
  std::vector<std::string> saves = {"centered", "centered_again", "rstd"};
  if (r.weights_train) saves.push_back("x_normed");
  b.ops.push_back(eager_layer_norm_op("layernorm", elems, !r.autocast, r.weights_train, saves));
  b.tag(kLayernormTag, {"centered", "centered_again", "rstd", "x_normed", "x_norm", "layernorm"});
}

void add_layer_norm(Block& b, const RankShape& r, double hidden, int readers) {
  if (r.layer_norm_code == LayerNormCode::eager_fp32) return add_eager_layer_norm(b, r, hidden, readers);
  add_native_layer_norm(b, r, hidden, readers);
}

void add_input_norm(Block& b, const RankShape& r, double hidden, bool gather, int readers) {
  if (r.layer_norm) {
    add_layer_norm(b, r, hidden, readers);
    if (gather && r.tp > 1) b.ops.push_back(input_gather(r, hidden));
    return;
  }
  if (r.norm_fp32_upcast) return add_upcast_norm(b, r, hidden, readers);
  const double rows = r.seq_tokens();
  b.inputs = {"x"};
  b.tensors.push_back({"x", rows * hidden * kBf16});       // block input
  b.tensors.push_back({"rstd", rows * kFp32});             // 1/rms per row
  b.tensors.push_back({"x_norm", rows * hidden * kBf16});  // saved shard of the GEMM input
  b.ops.push_back(ops::rmsnorm("rmsnorm", rows, hidden, "x", "rstd"));
  b.tag(kLayernormTag, {"rstd", "x_norm", "rmsnorm"});
  if (gather && r.tp > 1) b.ops.push_back(input_gather(r, hidden));
}

void add_activation(Block& b, double rows, double width, const std::string& p) {
  const double bytes = rows * width * kBf16;
  b.tensors.push_back({p + "pre_act", bytes});
  b.tensors.push_back({p + "act", bytes});
  b.ops.push_back(ops::streaming(p + "act_fn", 2 * bytes, 3 * bytes, {p + "pre_act"}));
}

void add_swiglu(Block& b, double rows, double width, const std::string& p, bool fused, bool linear_copy, bool clamped) {
  const double bytes = rows * width * kBf16;
  b.tensors.push_back({p + "gate", bytes});
  b.tensors.push_back({p + "up", bytes});
  b.tensors.push_back({p + "act", bytes});  // silu(gate) * up, the down projection's input
  if (fused) {
    b.ops.push_back(ops::streaming(p + "swiglu", 3 * bytes, 5 * bytes, {p + "gate", p + "up"}));
    return;
  }
  b.tensors.push_back({p + "silu", bytes});
  if (linear_copy) {  // silu(gate) * (up + offset): the sum is a new tensor; gate's view keeps up alive
    b.tensors.push_back({p + "up_copy", bytes});
    b.ops.push_back(ops::streaming(p + "silu", 2 * bytes, 3 * bytes, {p + "gate", p + "up"}));
    b.ops.push_back(ops::streaming(p + "up_copy", 2 * bytes, 0, {}));
    b.ops.push_back(ops::streaming(p + "mul", 3 * bytes, 5 * bytes, {p + "silu", p + "up_copy"}));
    return;
  }
  b.ops.push_back(ops::streaming(p + "silu", 2 * bytes, 3 * bytes, {p + "gate"}));
  if (clamped) {  // each clamp saves its input (silu(gate), up); the product saves the clamped pair
    b.tensors.push_back({p + "gate_clamped", bytes});
    b.tensors.push_back({p + "up_clamped", bytes});
    b.ops.push_back(ops::streaming(p + "clamps", 4 * bytes, 6 * bytes, {p + "silu", p + "up"}));
    b.ops.push_back(ops::streaming(p + "mul", 3 * bytes, 5 * bytes, {p + "gate_clamped", p + "up_clamped"}));
    return;
  }
  b.ops.push_back(ops::streaming(p + "mul", 3 * bytes, 5 * bytes, {p + "silu", p + "up"}));
}

// `count` norms on a block's output before the residual add (Gemma 2-4's and GLM-4's
// post-attention and post-feedforward norms, OLMo-2's post-norms): each saves its input (fp32 under
// the eager upcast, with the normalized tensor when its weight trains) and 1/rms per row.
void add_output_norms(Block& b, const RankShape& r, double hidden, double count) {
  if (count <= 0) return;
  const double rows = r.seq_tokens(), elems = rows * hidden * count;
  b.tensors.push_back({"out_norm_rstd", rows * count * kFp32});
  if (!r.norm_fp32_upcast) {
    b.tensors.push_back({"out_norm_x", elems * kBf16});
    b.ops.push_back(ops::rmsnorm("out_norm", rows * count, hidden, "out_norm_x", "out_norm_rstd"));
    return;
  }
  b.tensors.push_back({"out_norm_x32", elems * (r.autocast ? r.stream_bytes() : kFp32)});
  std::vector<std::string> saves = {"out_norm_x32", "out_norm_rstd"};
  if (r.weights_train && r.norm_affine) {
    b.tensors.push_back({"out_norm_normed", elems * gemm_output_normed_bytes(r)});
    saves.push_back("out_norm_normed");
  }
  b.ops.push_back(upcast_norm_op("out_norm", elems, r, saves));
}

}  // namespace parts

Block rmsnorm_linear_block(const RankShape& r, int64_t hidden, int64_t out_features, const char* name) {
  Block b;
  b.name = name;
  parts::add_input_norm(b, r, double(hidden));
  b.ops.push_back(
      parts::linear(b, r, "linear", r.tokens(), double(hidden), double(out_features) / double(r.tp), "x_norm", {}));
  return b;
}

Block lm_head_block(const RankShape& r, const ModelSpec& m) {
  Block head = rmsnorm_linear_block(with_model(r, m), m.hidden_size, m.vocab_size, "lm_head");
  if (m.hyper_connections > 0) add_hyper_head(head, with_model(r, m), m);
  return head;
}

Block mlp_block(const RankShape& r, int64_t hidden, int64_t ffn, bool clamped, int norm_readers) {
  Block b;
  b.name = "mlp";
  const double h = double(hidden), f = double(ffn) / double(r.tp), rows = r.tokens();
  parts::add_input_norm(b, r, h, true, norm_readers);
  b.ops.push_back(parts::linear(b, r, "gate_up", rows, h, 2 * f, "x_norm", {&LoraTargets::gate, &LoraTargets::up}));
  // LlamaMLP: act_fn(gate_proj(x)) * up_proj(x), so the activation is alive by the up adapter too
  for (OpDef& op : b.ops)
    if ((op.name == "gate_up.lora" || op.name == "gate_up.lora_gemm") && r.layouts_from_model_code)
      op.fwd_working_bytes += rows * f * kBf16;
  parts::add_swiglu(b, rows, f, "", r.swiglu_fused, r.glu_linear_copy, clamped);
  b.ops.push_back(parts::linear(b, r, "down", rows, f, h, "act", {&LoraTargets::down}));
  // Megatron's `mlp` checkpoint: fc1 (with its tp gather) to fc2; its input, the normed hidden, stays
  b.tag(parts::kMlpTag, {"gather_input", "allreduce_dinput", "gate_up", "gate", "up", "silu", "up_copy", "act",
                         "swiglu", "gate_clamped", "up_clamped", "clamps", "mul", "down"});
  return b;
}

Block two_matrix_mlp_block(const RankShape& r, int64_t hidden, int64_t ffn, const std::string& act) {
  Block b;
  b.name = "mlp";
  const double h = double(hidden), f = double(ffn) / double(r.tp), rows = r.tokens();
  const double bytes = rows * f * kBf16;
  parts::add_input_norm(b, r, h, true, 1);
  b.ops.push_back(parts::linear(b, r, "up", rows, h, f, "x_norm", {&LoraTargets::up}));
  // the up projection's output (relu^2: relu's output) and act(pre_act), the down projection's
  // input; the backward holds act's gradient and pre_act's at once (torch's gelu/relu backward).
  // A plain relu saves its output, the down projection's input, and frees the up projection's
  // (OPT: peak-traces-h200/defaults, one intermediate-wide tensor a layer, relu's)
  // With an adapter on the down projection, act's gradient comes back as two parts, the frozen
  // projection's and the adapter's, which autograd sums into a third tensor while pre_act is still
  // saved (Falcon-40B cut to 5, all-linear LoRA GRPO 2 x 8192 under reentrant checkpoints: three
  // 1 GiB gradients beside pre_act at the peak, act freed; peak-traces-h200/random-blind48)
  const bool saves_output = act == "relu";
  const double act_grads = r.layouts_from_model_code && r.lora_rank > 0 && r.lora.down ? 3 : 2;
  if (!saves_output) b.tensors.push_back({.name = "pre_act", .bytes = bytes, .working_copies = act_grads});
  b.tensors.push_back({.name = "act", .bytes = bytes, .working_copies = saves_output ? act_grads : 2});
  b.ops.push_back(ops::streaming(act, 2 * bytes, 3 * bytes, {saves_output ? "act" : "pre_act"}));
  if (r.layouts_from_model_code) parts::add_python_activation_saves(b, r, act, rows * f);
  b.ops.push_back(parts::linear(b, r, "down", rows, f, h, "act", {&LoraTargets::down}));
  b.tag(parts::kMlpTag, {"gather_input", "allreduce_dinput", "up", "pre_act", "act", act, "down"});
  return b;
}

namespace parts {

// A parallel block's MLP (or MoE) reads the layer input the attention block saves and keeps
// in every strategy; with one shared norm also its output (the norm runs once).
void share_with_attention(Block& b, bool shared_norm) {
  std::vector<std::string> shared = {"x"};
  if (shared_norm) shared.insert(shared.end(), kInputNormTensors.begin(), kInputNormTensors.end());
  for (auto& t : b.tensors)
    if (std::find(shared.begin(), shared.end(), t.name) != shared.end()) t.bytes = 0;
  if (!shared_norm) return;
  for (auto& op : b.ops)
    if (op.name == "rmsnorm" || op.name == "layernorm" || op.name == "gather_input" || op.name == "allreduce_dinput")
      op.fwd_bytes = op.bwd_bytes = 0;
}

}  // namespace parts

namespace {

// BitNet's sub-norms (modeling_bitnet.py): an RMSNorm over `input` (`width` per row) whose output
// `input`_sub the next GEMM reads in its place. As the block's input norm: the fp32 copy under the
// model's own code (unless autocast), 1/rms, the normed product where the weight trains.
void add_sub_norm(Block& b, const RankShape& r, const std::string& input, double width) {
  const double rows = r.tokens(), elems = rows * width;
  const std::string p = input + "_sub";
  std::vector<std::string> saves = {input, p + "_rstd"};
  b.tensors.push_back({p + "_rstd", rows * kFp32});
  b.tensors.push_back({p, elems * kBf16});
  if (!r.norm_fp32_upcast) {
    b.ops.push_back(ops::rmsnorm(p + "_norm", rows, width, input, p + "_rstd"));
    return;
  }
  if (!r.autocast) b.tensors.push_back({p + "_x32", elems * kFp32}), saves[0] = p + "_x32";
  if (r.weights_train && r.norm_affine)
    b.tensors.push_back({p + "_normed", elems * parts::gemm_output_normed_bytes(r)}), saves.push_back(p + "_normed");
  b.ops.push_back(parts::upcast_norm_op(p + "_norm", elems, r, saves));
}

// The MLP's sub-norm between its activation and the down projection, which then reads its output.
void add_mlp_sub_norm(Block& b, const RankShape& r, double width) {
  const auto down = std::find_if(b.ops.begin(), b.ops.end(), [](const OpDef& op) { return op.name == "down"; });
  if (down == b.ops.end()) return;
  const size_t at = size_t(down - b.ops.begin());
  Block norm;
  add_sub_norm(norm, r, "act", width);
  b.tensors.insert(b.tensors.end(), norm.tensors.begin(), norm.tensors.end());
  for (std::string& saved : b.ops[at].saves)
    if (saved == "act") saved = "act_sub";
  b.ops.insert(b.ops.begin() + std::ptrdiff_t(at), norm.ops.begin(), norm.ops.end());
}

}  // namespace

Block dense_mlp_block(const RankShape& r, const ModelSpec& m, int64_t width) {
  if (width <= 0) width = m.intermediate_size;
  const bool clamped = r.layouts_from_model_code && m.clamped_swiglu;
  // under autocast each GEMM reading the fp32 normed input saves its own bf16 cast: one for a fused
  // gate_up_proj (Phi-3's mixed GRPO step in steps-random-blind17-h200.jsonl: +4.27% with two)
  const int norm_readers = m.has_linear_matrix("gate_up") ? 1 : 2;
  Block b = m.mlp_kind == MlpKind::gated ? mlp_block(r, m.hidden_size, width, clamped, norm_readers)
                                         : two_matrix_mlp_block(r, m.hidden_size, width, m.hidden_act);
  if (m.parallel_attn_mlp) parts::share_with_attention(b, m.shared_input_norm);
  if (m.sub_norms) add_mlp_sub_norm(b, r, double(width) / double(r.tp));
  return b;
}

namespace {

// Rotary embedding over `elems` rotated elements of q and k (bf16). Fused: read and written once.
// transformers' apply_rotary_pos_emb (modeling_llama.py): q * cos + rotate_half(q) * sin, where
// rotate_half is cat(-x2, x1) of the two halves; bytes per element, forward: the negation 1+1,
// the concatenation 2+2, two products 2+2 each, the sum 2+2+2 (20). Backward, autograd: the two
// products' gradients 2+2 each, the negation's 1+1, each half's slice gradient a zero-filled full
// tensor 2 and its copy 1+1 (twice), and q's three gradients summed 2+2+2 twice (30).
OpDef rope_op(const RankShape& r, double elems) {
  if (r.rope_rotate_half) return ops::streaming("rope", 20 * elems, 30 * elems, {});
  return ops::streaming("rope", 2 * elems * kBf16, 2 * elems * kBf16, {});
}

// Norms on q and k per head before rotary (Qwen3, OLMo-2, Cohere): each saves its
// input (fp32 under the eager upcast, which also saves the bf16 normed copy when its
// weight trains, as add_upcast_norm) and 1/rms per head and row.
void add_qk_norm(Block& b, const RankShape& r, double rows, double heads, double hd, bool weighted) {
  const double elems = rows * heads * hd;
  if (r.layer_norm_code == LayerNormCode::eager_fp32) {  // Cohere's per-head CohereLayerNorm, on bf16 q and k
    b.tensors.push_back({"qk_centered", 2 * elems * kFp32});
    b.tensors.push_back({"qk_rstd", rows * heads * kFp32});
    b.tensors.push_back({"qk_normed", elems * kFp32});
    std::vector<std::string> saves = {"qk_centered", "qk_rstd"};
    if (r.weights_train) saves.push_back("qk_normed");
    b.ops.push_back(parts::eager_layer_norm_op("qk_norm", elems, true, r.weights_train, saves));
    return;
  }
  b.tensors.push_back({"qk_raw", elems * (r.norm_fp32_upcast ? kFp32 : kBf16)});
  b.tensors.push_back({"qk_rstd", rows * heads * kFp32});
  std::vector<std::string> saves = {"qk_raw", "qk_rstd"};
  if (r.norm_fp32_upcast) b.tensors.push_back({"qk_normed", elems * parts::gemm_output_normed_bytes(r)});
  if (r.norm_fp32_upcast && r.weights_train && weighted && r.norm_affine) saves.push_back("qk_normed");
  if (r.norm_fp32_upcast) {
    b.ops.push_back(parts::upcast_norm_op("qk_norm", elems, r, saves));
    return;
  }
  b.ops.push_back(ops::streaming("qk_norm", 2 * elems * kBf16, 3 * elems * kBf16, saves));
}

}  // namespace

Block gqa_block(const RankShape& r, const ModelSpec& m, bool windowed, bool shares_kv) {
  Block b;
  b.name = "gqa";
  const AttentionShape shape = m.attention_shape_of(windowed);
  const double h = double(m.hidden_size), hd = double(shape.head_dim), vd = double(shape.value_head_dim);
  const double nh = double(shape.heads / r.tp), g = double(shape.kv_heads / r.tp);
  const double rows = r.tokens();
  parts::add_input_norm(b, r, h, true, m.has_linear_matrix("qkv") ? 1 : 3);  // a fused q|k|v reads it once
  // Qwen3-Next's q_proj also makes the gate; Laguna's g_proj makes one per head (counted with them)
  const double gate = m.attention_output_gate ? nh * hd : m.attention_head_gate ? nh : 0;
  // Gemma 4's keys as values: no v_proj; its KV-shared layers project queries only, their keys and
  // values are an earlier layer's, already alive (saved by it and held for every sharing layer)
  const double k_width = shares_kv ? 0 : g * hd, v_width = shares_kv || shape.values_from_keys ? 0 : g * vd;
  std::vector<bool LoraTargets::*> adapted = {&LoraTargets::q, &LoraTargets::k, &LoraTargets::v};
  if (shape.values_from_keys || shares_kv) adapted.pop_back();  // no v_proj to adapt
  if (shares_kv) adapted.pop_back();
  if (m.attention_gate_proj) adapted.push_back(&LoraTargets::gate);
  if (m.attention_head_gate) adapted.push_back(&LoraTargets::head_gate);
  b.ops.push_back(parts::linear(b, r, "qkv", rows, h, nh * hd + k_width + v_width + gate, "x_norm", adapted));
  if (r.layouts_from_model_code && m.qkv_clamp) {
    // DBRX's clamp of the fused projection saves its input; q, k and v are views of its output
    // (peak-traces-h200/unseen9-followup: both 18 MiB tensors a layer, Wqkv's and the clamp's)
    const double elems = rows * (nh * hd + k_width + v_width);
    b.tensors.push_back({"qkv_unclamped", elems * kBf16});
    b.ops.push_back(ops::streaming("qkv_clamp", 4 * elems, 6 * elems, {"qkv_unclamped"}));
  }
  // GPT-J's eager `_attn` casts q and k to fp32 and matmul copies them batch-major: QK^T saves
  // those fp32 copies in place of the bf16 ones (peak-traces-h100/two-matrix: modeling_gptj.py:147)
  const bool qk_fp32 = r.layouts_from_model_code && m.eager_qk_fp32 && !r.flash_attention;
  const double qk_bytes = qk_fp32 ? kFp32 : kBf16;
  b.tensors.push_back({"q", rows * nh * hd * qk_bytes});
  const double own_kv = shares_kv ? 0 : 1;
  b.tensors.push_back({"k", own_kv * rows * g * hd * qk_bytes});
  // Megatron local slices v out of the fused qkv output: a checkpoint that
  // takes v as input keeps the whole projection alive. So does Phi-3's code, where
  // the attention saves v: a view of the whole projection
  const bool model_views = r.layouts_from_model_code && m.fused_qkv_projection;
  const double v_saved_width = r.v_views_qkv || model_views ? (nh + g) * hd + g * vd : g * vd;
  b.tensors.push_back({"v", own_kv * rows * v_saved_width * kBf16});
  b.tensors.push_back({"o", rows * nh * vd * kBf16});  // attention output, saved by Wo
  // q and k norms, and Gemma 4's weightless norm on the values
  if (m.qk_norm != QkNorm::none)
    add_qk_norm(b, r, rows, nh + own_kv * (g + (m.value_norm ? g : 0)), hd, !m.qk_norm_weightless);
  // partial rotary: the rotated share
  const double rotated = 2 * rows * (nh + own_kv * g) * hd * kBf16 * m.rotary_fraction;
  if (m.position_embeddings == 0) b.ops.push_back(rope_op(r, rotated / (2 * kBf16)));
  if (qk_fp32) {  // after the rotary: the cast (2 bytes read, 4 written) and the copy (4 and 4); back: one cast
    const double elems = rows * (nh + own_kv * g) * hd;
    b.ops.push_back(ops::streaming("qk_fp32", 14 * elems, 6 * elems, {}));
  }
  std::string k = "k", v = "v";
  // transformers under sdpa, a sliding-window layer of s >= its window (masking_utils skips the mask
  // below it): an s x s mask handed to sdpa, which each layer's memory-efficient kernel saves as a bf16
  // bias (as Falcon's, measured), keys and values repeated to every query head (use_gqa_in_sdpa is
  // false when a mask is given), the whole square computed
  const bool window_mask = windowed && r.layouts_from_model_code && r.flash_attention && m.sliding_window_tokens > 0 &&
                           r.s >= double(m.sliding_window_tokens);
  // Falcon's new decoder architecture copies them itself: the copies, not k and v, reach the attention
  // (Falcon-40B cut to 5, LoRA GRPO 2 x 8192: three 256 MiB q/k/v-sized tensors a layer at the sdpa
  // call, -7.68% while k and v were counted at their 8 heads, peak-traces-h200/random-blind48)
  const bool model_copies_kv = r.layouts_from_model_code && m.kv_copied_to_query_heads && g < nh;
  if (r.gqa_expand_kv || model_copies_kv || (window_mask && g < nh)) {  // keys and values repeated to every query head
    b.tensors.push_back({"k_expanded", rows * nh * hd * kBf16});
    b.tensors.push_back({"v_expanded", rows * nh * vd * kBf16});
    const double expand_bytes = rows * (g + nh) * (hd + vd) * kBf16;
    b.ops.push_back(ops::streaming("expand_kv", expand_bytes, expand_bytes, {}));
    k = "k_expanded", v = "v_expanded";
  }
  // QK^T and PV: 2 b s^2 heads d each (PV's d the value width), half of it under the causal mask
  const bool math_sdpa = r.flash_attention && r.layouts_from_model_code && m.sdpa_broadcasts_kv_heads && g < nh;
  const double fwd = 2 * rows * r.s * nh * (hd + vd) * (r.causal && !window_mask && !math_sdpa ? 0.5 : 1.0);
  if (math_sdpa) {
    parts::add_math_sdpa(b, r, nh, g, hd, vd, fwd);
  } else if (r.flash_attention) {
    b.tensors.push_back({"lse", r.b * nh * r.s * kFp32});  // softmax statistics
    b.ops.push_back(ops::attention("flash_attention", fwd, r.s, hd, {"q", k, v, "o", "lse"}));
    b.attention_stats = {"lse"};
    if (window_mask) {
      b.tensors.push_back(parts::mask_tensor("window_mask", r.b * r.s * r.s * kBf16));
      b.ops.back().saves.push_back("window_mask");
    }
  } else {
    const bool sinks = m.attention_sinks || (windowed ? m.windowed_layer_sinks : m.full_layer_sinks);
    parts::add_eager_attention(b, r, m, nh, hd, vd, fwd, k, v, sinks);
  }
  std::string wo_input = "o";  // what Wo reads, saved by it where it trains or carries an adapter
  const bool masked_sdpa = r.layouts_from_model_code && m.sdpa_mask_materialized && r.flash_attention && !math_sdpa;
  if (masked_sdpa) {
    // an s x s bf16 mask handed to sdpa (Falcon): each layer's kernel saves its own
    b.tensors.push_back(parts::mask_tensor("sdpa_mask", r.b * r.s * r.s * kBf16));
    b.ops.back().saves.push_back("sdpa_mask");
  }
  // rotary on q and k sliced out of the fused output (Phi-3, GPT-NeoX), or concatenated from its
  // rotated and passed parts (partial rotary; Step 3.5), writes them heads-major, so the sdpa output
  // is too: reshaping it back copies it, and what reads it next (Wo, an output gate) saves the copy
  // beside the kernel's o (reports/hf/steps-fused-h100.jsonl, peak-traces-h200/step35)
  const bool rotary_concat =
      m.position_embeddings == 0 && (m.rotary_concatenates || (m.rotary_fraction > 0 && m.rotary_fraction < 1));
  const bool heads_major_o = r.flash_attention && (model_views || (r.layouts_from_model_code && rotary_concat));
  const std::string o_read = heads_major_o ? "o_contiguous" : "o";  // the attention output the next op reads
  if (heads_major_o) {
    const double bytes = rows * nh * vd * kBf16;
    b.tensors.push_back({"o_contiguous", bytes});
    b.ops.push_back(ops::streaming("o_copy", 2 * bytes, 2 * bytes, {}));
    wo_input = "o_contiguous";
  }
  if (m.attention_output_gate) {
    // o * sigmoid(gate): the product saves o and the sigmoid; Wo then reads the product, not o
    const double bytes = rows * nh * vd * kBf16;
    b.tensors.push_back({"gate_sigmoid", bytes});
    b.tensors.push_back({"o_gated", bytes});
    b.ops.push_back(ops::streaming("output_gate", 4 * bytes, 6 * bytes, {"gate_sigmoid", o_read}));
    wo_input = "o_gated";
  }
  if (m.attention_head_gate && m.head_gate_sigmoid) {
    // Step 3.5: o * sigmoid(g_proj(x)) per head in bf16 (modeling_step3p7.py, Step3p7Attention.forward):
    // the sigmoid saves its output, the product saves o and that gate, and Wo reads the product
    const double bytes = rows * nh * vd * kBf16, gates = rows * nh * kBf16;
    b.tensors.push_back({"head_gate", gates});
    b.tensors.push_back({"o_gated", bytes});
    b.ops.push_back(ops::streaming("head_gate", 2 * bytes + 3 * gates, 4 * bytes + 4 * gates, {"head_gate", o_read}));
    b.ops.back().beside_adapters = true;  // g_proj is frozen under LoRA: before any adapter its gate needs no gradient
    wo_input = "o_gated";
  } else if (m.attention_head_gate) {
    // Laguna: o * softplus(g_proj(x).float()) per head (modeling_laguna.py, LagunaAttention.forward):
    // the softplus saves its fp32 input, the product saves o and the bf16 gate, and Wo reads the product
    const double bytes = rows * nh * vd * kBf16, gates = rows * nh;
    b.tensors.push_back({"head_gate_fp32", gates * kFp32});
    b.tensors.push_back({"head_gate", gates * kBf16});
    b.tensors.push_back({"o_gated", bytes});
    const double gate_bytes = gates * (kBf16 + 2 * kFp32 + kBf16);  // cast up, softplus, cast down
    b.ops.push_back(ops::streaming("head_gate", 2 * bytes + gate_bytes, 4 * bytes + 2 * gate_bytes,
                                   {"head_gate_fp32", "head_gate", o_read}));
    b.ops.back().beside_adapters = true;
    wo_input = "o_gated";
  }
  if (m.sub_norms) {  // BitNet's attn_sub_norm: Wo reads the normed output
    add_sub_norm(b, r, o_read, nh * vd);
    wo_input = o_read + "_sub";
  }
  b.kept_outside.clear();
  if (parts::saves_input(r, r.lora.o)) b.kept_outside = {wo_input};
  // Megatron's `core_attn` checkpoint: the attention core (GQA's key/value
  // repeat included); its inputs q, k, v and its output o stay
  b.tag(parts::kCoreAttnTag, {"k_expanded", "v_expanded", "expand_kv", "lse", "probs", "flash_attention", "attention",
                              "q32", "k32", "v32", "probs32", "sdpa_math"});
  for (auto& t : b.tensors)
    if (t.name == "q" || t.name == "k" || t.name == "v") t.checkpoint_input_of = parts::kCoreAttnTag;
  return b;
}

namespace {

// Dropout on a block's output before the residual add, as transformers runs it in training when
// the config asks for it (GPT-2's resid_pdrop): it saves its bool mask for backward.
void add_residual_dropout(Block& b, const RankShape& r, const ModelSpec& m) {
  if (!r.layouts_from_model_code || m.residual_dropout <= 0) return;
  const double elems = r.seq_tokens() * double(m.hidden_size);
  b.tensors.push_back({"dropout_mask", elems});
  b.ops.push_back(ops::streaming("residual_dropout", 5 * elems, 5 * elems, {"dropout_mask"}));
}

}  // namespace

// The output norms after the feed-forward: all but the attention's one (Gemma 4's MoE layers add
// three: each branch's own and the experts' input norm).
double feedforward_output_norms(const ModelSpec& m) { return std::max<double>(double(m.extra_norms_per_layer) - 1, 0); }

Block attention_out_glue(const RankShape& r, const ModelSpec& m, bool windowed) {
  Block b;
  b.name = "attn.out";
  const double h = double(m.hidden_size);
  const AttentionShape shape = m.attention_shape_of(windowed);
  const double width = m.attention() == AttentionKind::mla ? double(m.num_attention_heads / r.tp) * double(m.v_head_dim)
                                                           : double(shape.heads / r.tp) * double(shape.value_head_dim);
  // Wo reads o, which the attention block accounts for (as Table 1 does)
  OpDef wo = parts::linear(b, r, "wo", r.tokens(), width, h, "o", {&LoraTargets::o});
  wo.saves.clear();
  b.ops.push_back(wo);
  if (r.tp > 1) b.ops.push_back(parts::output_reduce(r, h));
  parts::add_output_norms(b, r, h, std::min<double>(double(m.extra_norms_per_layer), 1));
  add_residual_dropout(b, r, m);
  b.ops.push_back(parts::residual_add(r, h));
  return b;
}

Block mlp_out_glue(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "mlp.out";
  const double hidden = double(m.hidden_size);
  if (r.tp > 1) b.ops.push_back(parts::output_reduce(r, hidden));
  parts::add_output_norms(b, r, hidden, feedforward_output_norms(m));
  add_residual_dropout(b, r, m);
  b.ops.push_back(parts::residual_add(r, hidden));
  b.tag(parts::kMlpTag, {"reduce_scatter_output", "allreduce_output"});  // fc2's reduction is inside the MLP
  return b;
}

// Gemma4TextDecoderLayer's per-layer input branch after the feed-forward: per_layer_input_gate
// (h -> d) on the layer's output, the activation, times the layer's slice of the per-layer inputs
// (saved beside the activation's output; the slice is the model's, counted once per stage),
// per_layer_projection (d -> h), post_per_layer_input_norm, the residual add. The linears save
// their inputs when their weights train (PEFT's default targets leave them frozen).
Block per_layer_input_block(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "per_layer_input";
  const double h = double(m.hidden_size), d = double(m.per_layer_input_width), rows = r.tokens();
  b.tensors.push_back({"ple_x", r.weights_train ? rows * h * kBf16 : 0});
  b.ops.push_back(ops::gemm("ple_gate", rows, h, d,
                            r.weights_train ? std::vector<std::string>{"ple_x"} : std::vector<std::string>{}));
  b.tensors.push_back({"ple_pre_act", rows * d * kBf16});
  b.tensors.push_back({"ple_act", rows * d * kBf16});
  b.ops.push_back(ops::streaming("ple_act_fn", 2 * rows * d * kBf16, 3 * rows * d * kBf16, {"ple_pre_act"}));
  b.tensors.push_back({"ple_gated", r.weights_train ? rows * d * kBf16 : 0});
  // the product saves the activation's output for the per-layer inputs' gradient, needed when they train
  b.ops.push_back(ops::streaming("ple_mul", 3 * rows * d * kBf16, 4 * rows * d * kBf16,
                                 r.weights_train ? std::vector<std::string>{"ple_act"} : std::vector<std::string>{}));
  b.ops.push_back(ops::gemm("ple_proj", rows, d, h,
                            r.weights_train ? std::vector<std::string>{"ple_gated"} : std::vector<std::string>{}));
  parts::add_output_norms(b, r, h, 1);
  b.ops.push_back(parts::residual_add(r, h));
  return b;
}

int LayerDef::recompute_block_count() const {
  int n = 0;
  for (bool rc : recomputable) n += rc ? 1 : 0;
  return n;
}

}  // namespace remat
