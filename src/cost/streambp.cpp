// StreamBP cost terms. Paper: Luo, Li, Zhao, Li, "StreamBP: Memory-Efficient
// Exact Backpropagation for Long Sequence Training of LLMs", arXiv 2506.03077
// (sections cited per function).
#include "remat/cost/streambp.hpp"

#include <algorithm>

#include "remat/cost/op_time.hpp"
#include "remat/spec/lora_placement.hpp"

namespace remat {

double streambp_score_fraction(int64_t chunks, bool causal_tile_skip) {
  if (causal_tile_skip || chunks <= 1) return 1.0;
  // sec. 3.2.2: chunk i computes S(i) = Q(i) K(:i)^T, (T/D) x (i T/D); summed
  // over i = 1..D that is T^2 (D+1) / (2D) against T^2 for S = Q K^T.
  const double d = double(chunks);
  return (1 + d) / (2 * d);
}

double streambp_kv_bytes(const LayerDef& layer) {
  double kv = 0;
  for (const auto& b : layer.blocks)
    for (const auto& op : b.ops) {
      if (op.kind != OpKind::attention) continue;
      // the attention kernel's key and value inputs (expanded copies under gqa_expand_kv)
      for (const auto& name : op.saves)
        if (!name.empty() && (name[0] == 'k' || name[0] == 'v')) kv += b.tensor_bytes(name);
    }
  return kv;
}

namespace {

// Whether the block's attention is a causal flash kernel (keeps softmax statistics, not probabilities).
bool flash_kernel(const Block& b) { return !b.attention_stats.empty() && b.attention_stats[0] == "lse"; }

// An attention op with its score FLOPs scaled by the chunked fraction.
OpDef scaled_attention(const OpDef& op, double fraction) {
  OpDef s = op;
  s.fwd_flops *= fraction, s.bwd_flops *= fraction, s.bwd_exec_flops *= fraction;
  s.gemm_flops_each *= fraction;
  return s;
}

// The attention op's tensors (its saves: q, k, v, o, softmax statistics) and its block.
struct AttentionTensors {
  const Block* block = nullptr;
  double q = 0, k = 0, v = 0, o = 0, stats = 0;
};

AttentionTensors attention_tensors(const LayerDef& layer) {
  AttentionTensors a;
  for (const auto& b : layer.blocks)
    for (const auto& op : b.ops)
      if (op.kind == OpKind::attention && op.saves.size() >= 5 && !a.block) {
        a.block = &b;
        a.q = b.tensor_bytes(op.saves[0]), a.k = b.tensor_bytes(op.saves[1]), a.v = b.tensor_bytes(op.saves[2]);
        a.o = b.tensor_bytes(op.saves[3]), a.stats = b.tensor_bytes(op.saves[4]);
      }
  return a;
}

}  // namespace

StreamBpBytes streambp_chunked_bytes(const LayerDef& layer, int64_t chunks) {
  const double d = double(std::max<int64_t>(chunks, 1));
  const double input = layer.input_bytes, kv = streambp_kv_bytes(layer);
  double all_saved = 0, largest = 0;
  for (const auto& b : layer.blocks) {
    all_saved += saved_bytes(b);
    for (const auto& t : b.tensors) largest = std::max(largest, t.bytes);
  }
  // Alive for the whole backward besides the kept input: the gradient arriving from above, the
  // input's gradient accumulator (eq. 14's g_Hin), K and V of the whole sequence and their
  // gradient accumulator.
  const double whole = 2 * input + 2 * kv;
  // Chunk peak 1, in the backward of the op with the largest tensors (the MLP): the chunk's share
  // of every saved activation but the input and K, V, plus that op's input gradients (2 x the
  // largest: its output's gradient takes the place of its output, freed once the next op's
  // backward has run).
  const double mlp_phase = (all_saved - input - kv + 2 * largest) / d;
  // Chunk peak 2, in the flash backward: the attention block's saved activations but its input and
  // K, V, with dO, dQ and the block output's gradient (the residual stream's, input-sized), the
  // kernel's fp32 dQ accumulator and row sums for the chunk's queries, dK and dV expanded to the
  // query heads over the visible keys when kv heads < query heads (FlashAttention-2's and cuDNN's
  // GQA backward), and, for every chunk after the first (the last, which sees every key and writes
  // the accumulator), dK and dV of its (D-1)/D visible keys before they are added in.
  double attn_phase = 0;
  const AttentionTensors a = attention_tensors(layer);
  if (a.block) {
    double inputs = 0;
    for (const auto& n : a.block->inputs) inputs += a.block->tensor_bytes(n);
    const double activations = saved_bytes(*a.block) - inputs - kv + a.o + a.q + input;
    const bool flash = flash_kernel(*a.block);
    const double workspace = flash ? 2 * a.q + a.stats : 0;
    const double expanded = flash && a.k > 0 && a.q > a.k ? (a.k + a.v) * (a.q / a.k) : 0;
    const double first = expanded, later = d > 1 ? (kv + expanded) * (d - 1) / d : 0;
    attn_phase = (activations + workspace) / d + std::max(first, later);
  }
  return {input, whole + std::max(mlp_phase, attn_phase)};
}

void streambp_layer(LayerCost& c, const LayerDef& layer, int64_t chunks, bool early_stop, const HardwareSpec& hw) {
  const StreamBpBytes bytes = streambp_chunked_bytes(layer, chunks);
  c.kept_bytes = bytes.kept, c.transient_bytes = bytes.transient;
  // Reforward: the layer forward once over all chunks, the attention scores at the chunked fraction.
  for (const auto& [block, op] : replay_ops(layer, early_stop)) {
    const bool attention = op->kind == OpKind::attention;
    const double fraction = attention ? streambp_score_fraction(chunks, flash_kernel(*block)) : 1.0;
    const OpDef run = attention ? scaled_attention(*op, fraction) : *op;
    const double t = op_time(run, hw).fwd_s;
    c.recompute_s += t;
    if (op->kind == OpKind::collective) c.comm_s += t;
    c.recompute_flops += run.fwd_flops;
  }
  // The chunked backward of the scores (dS(i) on Q(i) K(:i)^T) scales the same way.
  for (const auto& b : layer.blocks)
    for (const auto& op : b.ops) {
      if (op.kind != OpKind::attention) continue;
      const double fraction = streambp_score_fraction(chunks, flash_kernel(b));
      if (fraction == 1.0) continue;
      const OpDef run = scaled_attention(op, fraction);
      c.bwd_flops += run.bwd_flops - op.bwd_flops;
      c.bwd_exec_flops += run.bwd_exec_flops - op.bwd_exec_flops;
      c.bwd_s += op_time(run, hw).bwd_s - op_time(op, hw).bwd_s;
    }
}

double streambp_weight_read_s(double weight_bytes, double grad_bytes, int64_t chunks, const HardwareSpec& hw) {
  if (chunks <= 1) return 0;
  const double extra_chunks = double(chunks - 1);
  // per extra chunk: weights read in the reforward and in the backward (dX = dY W^T, and dW
  // against the same tiles), the gradient accumulator read and written once (eq. 14's +=)
  const double bytes = extra_chunks * (2 * weight_bytes + 2 * grad_bytes);
  return bytes / (hw.hbm_bytes_per_s * hw.efficiency.memory_bound);
}

int64_t sequences_per_example(const TrainingSpec& t) {
  switch (t.objective) {
    case Objective::grpo:
      return t.grpo_group;  // G responses to one prompt (eq. 4)
    case Objective::dpo:
      return 2;  // chosen y_w and rejected y_l (eq. 7)
    case Objective::sft:
      break;
  }
  return 1;
}

int64_t no_grad_forwards(const TrainingSpec& t) {
  switch (t.objective) {
    case Objective::grpo:
      return 2;  // pi_old and pi_ref, each a forward of the G responses under no_grad
    case Objective::dpo:
      return 1;  // pi_ref on the chosen and the rejected response
    case Objective::sft:
      break;
  }
  return 0;
}

TrainingSpec streambp_effective_training(const TrainingSpec& t, Strategy s) {
  TrainingSpec e = t;
  const int64_t k = sequences_per_example(t);
  e.mbs *= k, e.gbs *= k;
  if (s != Strategy::streambp) e.streambp_chunks = 1, e.lm_head_chunks = 1;
  return e;
}

double head_logits_bytes_per_element(const TrainingSpec& t, ModelLogits logits) {
  const double rows = double(std::max<int64_t>(t.mbs, 1));
  const bool fp32_forward_logits = logits == ModelLogits::fp32_in_forward;
  if (t.per_row_logps && t.objective != Objective::sft && fp32_forward_logits) {
    // TRL's selective_log_softmax on fp32 logits: gather, and per row a logsumexp that saves its
    // row (a view: the fp32 logits, 4, stay alive through their backward). Each row's backward,
    // grad * (row - lse).exp(), holds the difference, its exp and the product (3 rows) beside the
    // rows already done: at the last, 4 + 4 (rows + 2) / rows; then the rows' gradients and their
    // stack (4 + 4) beside the logits, which the caller still holds. Llama 3.2 Vision's mixed DPO
    // step, 2 rows (steps-unseen15-h200.jsonl: four fp32 rows of 6.3 GB beside the 12.6 GB logits),
    // and its 90B's GRPO step, 4 rows (steps-unseen16-h200.jsonl: the logits, their stack and 4 rows)
    return 4 + std::max(4 * (rows + 2) / rows, 8.0);
  }
  if (t.per_row_logps && t.objective != Objective::sft) {
    // TRL's selective_log_softmax on bf16 logits: each row's log_softmax output saved (2); in
    // backward the rows' gradients and their stacked copy, the logits' gradient (2 + 2), by then
    // the saved outputs freed; the reference and old-policy passes ran under no_grad.
    // Under autocast log_softmax runs in fp32: each row's output is saved in fp32 (4), and the last
    // row's fp32 cast of its logits stands beside them and the bf16 logits (2 + 4 + 4 / rows;
    // reports/hf/steps-unseen10-followup-h200.jsonl, StarCoder2's mixed DPO step)
    if (t.params_fp32_autocast) return 2 + 4 + 4 / rows;
    return 4;
  }
  if (logits == ModelLogits::own_bf16_loss && t.objective == Objective::sft) {
    // the model's own cross_entropy on its bf16 logits (their shifted slice is contiguous already: a
    // view). ATen's cross_entropy_loss calls log_softmax with the input's dtype, which autocast leaves
    // as it is, then nll_loss. In bf16 the log-softmax (2) is saved; backward holds it, nll_loss's
    // gradient and log_softmax's (6). Under autocast nll_loss runs in fp32 and saves its fp32 cast of
    // the log-softmax (2 + 4); backward adds its fp32 gradient (10). Qwen2-Audio's steps
    // (steps-vision-all-linear-blind-h200.jsonl, steps-loss-paths-blind-h200.jsonl): +18.5% and +5.4%
    // priced as transformers' loss (12)
    return t.params_fp32_autocast ? 10 : 6;
  }
  if (t.loss_log_softmax_saved) {
    // PyTorch's cross_entropy on the fp32 upcast: forward holds the bf16 logits, their fp32 copy and
    // the saved fp32 log-softmax (10); backward, the bf16 logits dropped with the model's output,
    // the saved log-softmax and the two fp32 gradients nll_loss and log_softmax write (12)
    return 12;
  }
  const double policy = 2;                              // bf16 logits of the trained policy
  const double fp32_copy = t.loss_fp32_logits ? 4 : 0;  // the loss's fp32 upcast
  // gradient of the logits; written into the saved fp32 softmax when in place, so
  // only its bf16 cast adds, in the bf16 logits' place
  const double grad = t.loss_grad_in_place ? 0 : t.loss_fp32_logits ? 4 : 2;
  const bool lora = t.lora_rank > 0;
  const double old_policy = t.objective == Objective::grpo ? 4 : 0;         // pi_old logits, eq. 4
  const double reference = t.objective != Objective::sft && !lora ? 4 : 0;  // pi_ref logits, eqs. 4 and 7
  return policy + fp32_copy + grad + old_policy + reference;
}

double head_logits_bytes(const TrainingSpec& t, double logits_elements, ModelLogits logits) {
  // eq. 3 (SFT), eq. 6 (GRPO), eq. 9 (DPO): only one chunk's logits and gradient are alive
  const double c = double(std::max<int64_t>(t.lm_head_chunks, 1));
  return head_logits_bytes_per_element(t, logits) * logits_elements / c;
}

namespace {

// transformers' RMSNorm on an fp32 input (its upcast x32, or the fp32 residual under autocast): the
// bytes of that fp32 input; 0 for another norm.
double python_rmsnorm_fp32_input_bytes(const Block& head, const TrainingSpec& t) {
  if (head.ops.empty() || head.ops.front().name != "rmsnorm") return 0;
  const double x32 = head.tensor_bytes("x32");
  return x32 > 0 ? x32 : t.params_fp32_autocast ? head.tensor_bytes("x") : 0;
}

}  // namespace

double head_forward_bytes(const Block& head, const TrainingSpec& t, double logits_elements, ModelLogits logits) {
  if (!t.layouts_from_model_code) return 0;
  // per logit, as head_logits_bytes_per_element describes each loss: TRL's per-row log-probabilities
  // on bf16 logits peak in their forward already, on fp32 logits the forward holds those alone; the
  // model's own bf16 cross entropy holds the logits and the saved log-softmax (and nll_loss's fp32
  // cast under autocast); transformers' loss the bf16 logits, their fp32 copy and the saved fp32
  // log-softmax
  double per_logit = 0;
  if (t.per_row_logps && t.objective != Objective::sft)
    per_logit = logits == ModelLogits::fp32_in_forward ? 4 : head_logits_bytes_per_element(t, logits);
  else if (logits == ModelLogits::own_bf16_loss && t.objective == Objective::sft)
    per_logit = t.params_fp32_autocast ? 8 : 4;
  else if (t.loss_log_softmax_saved)
    per_logit = 10;
  if (per_logit <= 0) return 0;
  return saved_bytes(head) + per_logit * logits_elements / double(std::max<int64_t>(t.lm_head_chunks, 1));
}

double head_peak_bytes(const Block& head, const TrainingSpec& t, double logits_elements, ModelLogits logits) {
  const double at_loss = head_logits_bytes(t, logits_elements, logits);
  double loss = at_loss + head.tensor_bytes("x_norm");
  const bool sft_bf16_loss =
      t.objective == Objective::sft && (logits == ModelLogits::own_bf16_loss || t.loss_log_softmax_saved);
  const bool per_row_bf16 = t.per_row_logps && t.objective != Objective::sft;
  if (t.layouts_from_model_code && !t.params_fp32_autocast && logits != ModelLogits::fp32_in_forward &&
      (sft_bf16_loss || per_row_bf16)) {
    // transformers' losses on bf16 logits free their tensors before the head's backward, which reads the
    // logits' bf16 gradient alone beside its input's gradient (2 + the input):
    // - the SFT losses (transformers' fp32 upcast, a model's own cross entropy): Llama-2-13B cut to 6,
    //   LoRA SFT 2 x 24k, two fp32 gradients beside the saved fp32 log-softmax and no input gradient
    //   (peak-traces-h200/random-blind28; Granite and Phi-tiny-MoE the same in random-blind29-followup),
    //   +1.72% while it was added;
    // - TRL's per-row log-probabilities, which peak at the forward's end (the logits and each row's
    //   saved output, 4); the backward's unbind stacks the rows' gradients (2 + 2) once the outputs are
    //   freed: Llama-3.2-3B's LoRA GRPO 4 x 12k (peak-traces-h200/random-blind25), +1.09% while added.
    // Under autocast the head's bf16 cast of its input stays beside the loss's tensors (Falcon-40B's
    // mixed steps, peak-traces-h200/unseen16), where the input's gradient stands for it.
    const double chunks = double(std::max<int64_t>(t.lm_head_chunks, 1));
    loss = std::max(at_loss, 2 * logits_elements / chunks + head.tensor_bytes("x_norm"));
  }
  // transformers' final RMSNorm, written in Python on an fp32 input, runs its backward once the loss's
  // has freed its tensors, holding five fp32 copies of that input (the gradients of the cast, of the
  // product with 1/rms and of pow's input, mean's expanded gradient, their sum). It sets the peak
  // where the vocabulary is few times the hidden width: CodeLlama-34B cut to 2 layers, GRPO 4 x 16k,
  // five 2 GiB blocks at the step's peak, -6.25% while uncounted (peak-traces-h200/random-blind10)
  const double fp32_input = t.layouts_from_model_code ? python_rmsnorm_fp32_input_bytes(head, t) : 0;
  return saved_bytes(head) + std::max(loss, 5 * fp32_input);
}

namespace {

// Adapters on a linear mixer's own projections in layer g (A: in x r, B: r x out, the output side
// split over tp): OLMo Hybrid's Gated DeltaNet names q/k/v/o as attention does and g, a, b as Qwen3.5's
// z, a, b; Qwen3-Next's fused input projections or Qwen3.5's four and out_proj; LFM2's short
// convolution's in_proj (B, C and x) and out_proj; Mamba-2's in_proj (z, x, B, C and dt) and out_proj;
// Mamba-1's in_proj (x and z), x_proj (dt, B and C) and out_proj (dt_proj's are held:
// mamba1_held_adapter_params); lightning attention's qkv_proj, output_gate and out_proj.
double mixer_adapter_params(const ModelSpec& m, const LoraTargets& l, double r, double tpd, int64_t g) {
  const double h = double(m.hidden_size);
  const auto adapter = [&](bool on, double in, double out) { return on ? r * (in + out) : 0.0; };
  const double kd = double(m.linear_num_key_heads * m.linear_key_head_dim);
  const double vd = double(m.linear_num_value_heads * m.linear_value_head_dim);
  const double vh = double(m.linear_num_value_heads), conv = 2 * kd + vd;
  double p = 0;
  if (!m.layer_has_attention(g) && layer_has_attention_linears(m, g))
    p += adapter(l.q, h, kd / tpd) + adapter(l.k, h, kd / tpd) + adapter(l.v, h, vd / tpd) + adapter(l.o, vd / tpd, h);
  else if (m.mixer(g) == Mixer::gated_deltanet)
    p += adapter(l.gdn_qkvz, h, (conv + vd) / tpd) + adapter(l.gdn_ba, h, 2 * vh / tpd) +
         adapter(l.gdn_qkv, h, conv / tpd) + adapter(l.mixer_out, vd / tpd, h);
  if (m.mixer(g) == Mixer::gated_deltanet)
    p += adapter(l.gdn_z, h, vd / tpd) + adapter(l.gdn_b, h, vh / tpd) + adapter(l.gdn_a, h, vh / tpd);
  if (m.mixer(g) == Mixer::gated_deltanet && m.kimi_delta_attention) {  // its low-rank gates (one head wide)
    const double hd = double(m.linear_value_head_dim);
    p += adapter(l.kda_f_a, h, hd) + adapter(l.kda_f_b, hd, vd / tpd) + adapter(l.kda_g_a, h, hd) +
         adapter(l.kda_g_b, hd, vd / tpd);
  }
  if (m.mixer(g) == Mixer::short_conv) p += adapter(l.mixer_in, h, 3 * h / tpd) + adapter(l.mixer_out, h / tpd, h);
  if (m.mixer(g) == Mixer::mamba2 || m.mixer(g) == Mixer::attention_mamba2) {
    const double inner = double(m.mamba_num_heads) * double(m.mamba_head_dim);
    p += adapter(l.mixer_in, h, m.mamba2_in_proj_width() / tpd) + adapter(l.mixer_out, inner / tpd, h);
  }
  if (m.mixer(g) == Mixer::lightning) {
    const double c = double(m.num_attention_heads * m.attention_shape_of(false).head_dim) / tpd;
    p += adapter(l.mixer_in, h, 3 * c) + adapter(l.mixer_gate, h, c) + adapter(l.mixer_out, c, h);
  }
  if (m.mixer(g) == Mixer::mamba1) {
    const double c = double(m.mamba1_inner) / tpd, dt_b_c = double(m.mamba1_dt_rank + 2 * m.ssm_state_size);
    p += adapter(l.mixer_in, h, 2 * c) + adapter(l.mamba_x, c, dt_b_c) + adapter(l.mixer_out, c, h);
  }
  return p;
}

// A Mamba-1 mixer's dt_proj adapter in layer g: PEFT builds it, but MambaMixer, FalconMambaMixer and
// JambaMambaMixer multiply by dt_proj.weight directly, so it never runs and never trains
// (reports/hf/mamba1-adapters-h200.jsonl: no gradient on any).
double mamba1_held_adapter_params(const ModelSpec& m, const LoraTargets& l, double r, int64_t g) {
  if (m.mixer(g) != Mixer::mamba1 || !l.mamba_dt) return 0;
  return r * double(m.mamba1_dt_rank + m.mamba1_inner);
}

// DeepSeek-V4's attention adapters (A: in x r, B: r x out; not split over tp): q_a_proj, q_b_proj,
// kv_proj, o_b_proj and, on CSA and HCA layers, the compressor's kv_proj and gate_proj (two series
// of head_dim on CSA, one on HCA).
double compressed_attention_adapter_params(const ModelSpec& m, const LoraTargets& l, double r, int64_t g) {
  const double h = double(m.hidden_size), q_latent = double(m.q_lora_rank), hd = double(m.head_dim);
  const double heads_width = double(m.num_attention_heads) * hd, grouped = double(m.o_groups * m.o_lora_rank);
  double p = (l.q_a ? h + q_latent : 0) + (l.q_b ? q_latent + heads_width : 0) + (l.kv_a ? h + hd : 0) +
             (l.o ? grouped + h : 0);
  const CompressedAttention kind = m.compressed_layer(g);
  if (kind != CompressedAttention::sliding) {
    const double pooled = (kind == CompressedAttention::sparse ? 2 : 1) * hd;
    p += (l.compress_kv ? h + pooled : 0) + (l.compress_gate ? h + pooled : 0);
  }
  return r * p;
}

}  // namespace

double lora_layer_params(const ModelSpec& m, const TrainingSpec& t, int64_t tp, int64_t layer) {
  if (t.lora_rank <= 0) return 0;
  const double r = double(t.lora_rank), h = double(m.hidden_size), tpd = double(tp);
  const AttentionShape a = m.attention_shape(layer);
  const double q = double(a.heads * a.head_dim), k = double(a.kv_heads * a.head_dim);
  const double v = double(a.kv_heads * a.value_head_dim), o = double(a.heads * a.value_head_dim);
  const LoraPlacement placement = lora_placement(m, t);
  const LoraTargets& l = placement.linear;
  // A: in x r, B: r x out; the output side is split over tp
  const bool own_k = !a.shares_kv, own_v = own_k && !a.values_from_keys;
  double p = 0;
  // the attention adapters sit on an attention layer's linears; a mixer's own (mixer_adapter_params)
  // elsewhere
  if (m.layer_has_attention(layer) && m.attention() == AttentionKind::mla) {
    // MLA (transformers' DeepseekV2/V3 attention) names a q_proj only without a query latent, and no
    // k_proj or v_proj; o_proj reads heads x v_head_dim
    const double heads = double(m.num_attention_heads), q_rank = double(m.q_lora_rank);
    const double kv_rank = double(m.kv_lora_rank), qk = double(m.qk_head_dim());
    if (l.q && m.q_lora_rank == 0) p += r * (h + heads * qk / tpd);
    if (l.q_a && m.q_lora_rank > 0) p += r * (h + q_rank);
    if (l.q_b && m.q_lora_rank > 0) p += r * (q_rank + heads * qk / tpd);
    if (l.kv_a) p += r * (h + kv_rank + double(m.qk_rope_head_dim));
    if (l.kv_b) p += r * (kv_rank + heads * double(m.qk_nope_head_dim + m.v_head_dim) / tpd);
    if (l.o) p += r * (heads * double(m.v_head_dim) / tpd + h);
  } else if (m.layer_has_attention(layer)) {
    // q_proj also makes the output gate where it is fused in (Qwen3-Next's attention_output_gate)
    const double q_out = m.attention_output_gate && !m.attention_gate_proj ? 2 * q : q;
    p += (l.q ? r * (h + q_out / tpd) : 0) + (l.k && own_k ? r * (h + k / tpd) : 0) +
         (l.v && own_v ? r * (h + v / tpd) : 0);
    if (l.o) p += r * (o / tpd + h);
    if (l.gate && m.attention_gate_proj) p += r * (h + q / tpd);
    if (l.head_gate && m.attention_head_gate) p += r * (h + double(a.heads) / tpd);
    if (l.fused_qkv) p -= 2 * r * h;  // one adapter on q|k|v: one lora_A
  }
  if (m.mixer(layer) == Mixer::compressed_attention) p += compressed_attention_adapter_params(m, l, r, layer);
  p += mixer_adapter_params(m, l, r, tpd, layer);
  // MLP adapters sit on the layer's MLP linears (layer_has_mlp_linears): a dense MLP, or an MoE layer's
  // shared experts (one MLP n_shared x the expert width wide: DeepSeek's shared_experts, Qwen2-MoE's
  // shared_expert, built even zero wide, Gemma 4's dense MLP)
  const bool moe = m.layer_is_moe(layer);
  if (layer_has_mlp_linears(m, layer)) {
    const double f = moe ? double(m.shared_mlp_width()) : double(m.mlp_width(layer));
    const bool gated = m.mlp_kind == MlpKind::gated;  // a two-matrix MLP has no gate to adapt
    p += (l.gate && gated ? r * (h + f / tpd) : 0) + (l.up ? r * (h + f / tpd) : 0) + (l.down ? r * (f / tpd + h) : 0);
    if (l.fused_gate_up && m.mlp_kind == MlpKind::gated) p -= r * h;  // one adapter on gate|up
  }
  if (moe && l.router) p += r * (h + double(m.n_routed_experts));  // the router's nn.Linear, not split
  if (moe && l.shared_expert_gate && m.shared_expert_gate) p += r * (h + 1);
  if (moe && placement.on_experts()) {
    // ParamWrapper: lora_A of in x (rank x experts), lora_B of (rank x experts) x out, per stacked weight
    const double experts = double(m.n_routed_experts / t.ep), io = double(m.expert_io_width());
    const double f = double(m.moe_intermediate_size) / tpd;
    p += placement.experts_gate_up_rank * experts * (io + 2 * f) + placement.experts_down_rank * experts * (f + io);
  }
  return p;
}

double lora_held_layer_params(const ModelSpec& m, const TrainingSpec& t, int64_t layer) {
  if (t.lora_rank > 0 && m.mixer(layer) == Mixer::mamba1)
    return mamba1_held_adapter_params(m, t.lora_targets, double(t.lora_rank), layer);
  if (t.lora_rank > 0 && m.layer_is_skipped_cross_attention(layer)) {
    // Llama 3.2 Vision's cross-attention layer: PEFT adapts its cross_attn.q/k/v/o_proj and its MLP by
    // the same names; a text-only step skips the layer, so they get no gradient
    // (peft-all-linear-types-h200.jsonl)
    const LoraTargets& l = t.lora_targets;
    const double r = double(t.lora_rank), h = double(m.hidden_size), f = double(m.mlp_width(layer));
    const AttentionShape a = m.attention_shape(layer);
    const double q = double(a.heads * a.head_dim), kv = double(a.kv_heads * a.head_dim);
    return r * ((l.q ? h + q : 0) + (l.k ? h + kv : 0) + (l.v ? h + kv : 0) + (l.o ? q + h : 0) + (l.gate ? h + f : 0) +
                (l.up ? h + f : 0) + (l.down ? f + h : 0));
  }
  if (t.lora_rank > 0 && m.mixer(layer) == Mixer::compressed_attention &&
      m.compressed_layer(layer) == CompressedAttention::sparse) {
    // DeepSeek-V4's CSA indexer: its adapters get no gradient (DeepseekV4Indexer's top-k indices carry none)
    const LoraTargets& l = t.lora_targets;
    const double r = double(t.lora_rank), h = double(m.hidden_size), q_latent = double(m.q_lora_rank);
    const double heads = double(m.csa_index_heads), pooled = 2 * double(m.csa_index_head_dim);
    return r *
           ((l.index_kv ? h + pooled : 0) + (l.index_gate ? h + pooled : 0) +
            (l.indexer_q ? q_latent + heads * double(m.csa_index_head_dim) : 0) + (l.indexer_weights ? h + heads : 0));
  }
  if (t.lora_rank <= 0 || !m.layer_has_indexer(layer) || m.index_n_heads <= 0) return 0;
  const LoraTargets& l = t.lora_targets;
  const double r = double(t.lora_rank), h = double(m.hidden_size);
  const double heads = double(m.index_n_heads), dim = double(m.index_head_dim);
  return (l.indexer_q ? r * (double(m.q_lora_rank) + heads * dim) : 0) + (l.indexer_k ? r * (h + dim) : 0) +
         (l.indexer_weights ? r * (h + heads) : 0);
}

StaticBytes streambp_static_bytes(const ParamCount& stage, double layer_params, double adapter_params,
                                  const TrainingSpec& t) {
  const bool lora = t.lora_rank > 0;
  StaticBytes s;
  if (lora) {
    // frozen base in bf16 (fp32 under autocast), no gradients or optimizer state for it (App. D)
    StaticBytes a = bytes_per_param(t, double(t.dp));
    if (t.lora_adapter_bytes == 4)
      a = {4, 4, t.optimizer == Optimizer::adam ? 8.0 : t.optimizer == Optimizer::sgd ? 4.0 : 0.0};
    const double base = t.params_fp32_autocast ? 4 : 2;
    s = {base * stage.total() + a.weights * adapter_params, a.gradients * adapter_params, a.optimizer * adapter_params};
  } else {
    s = static_bytes(stage, t);
    // GRPO and DPO need the reference model's logits: a second copy of the weights, in their dtype
    // (fp32 under autocast: a deep copy of the fp32 model, steps-unseen10b-h200.jsonl's Gemma 3 DPO)
    if (t.objective != Objective::sft) s.weights += (t.params_fp32_autocast ? 4 : 2) * stage.total();
  }
  if (t.zero_stage >= 3) {
    // weights sharded over dp; one layer's weights gathered at a time (distributed StreamBP keeps
    // it for all D chunks of the layer's backward, App. A.3, Fig. 6)
    s.weights = s.weights / double(t.dp) + 2 * layer_params;
  }
  return s;
}

}  // namespace remat

namespace remat {

int64_t largest_fitting(int64_t limit, const std::function<bool(int64_t)>& fits) {
  if (limit < 1 || !fits(1)) return 0;
  int64_t lo = 1, hi = limit;  // fits(lo) holds
  if (fits(hi)) return hi;
  while (hi - lo > 1) {  // fits(hi) fails
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

int64_t chunks_for(int64_t seq, int64_t partition_tokens) {
  const int64_t p = std::max<int64_t>(partition_tokens, 1);
  return std::max<int64_t>(1, (seq + p - 1) / p);
}

}  // namespace remat
