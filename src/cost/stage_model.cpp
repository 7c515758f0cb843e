#include "remat/cost/stage_model.hpp"

#include <algorithm>

#include "exact_ops.hpp"
#include "remat/cost/op_time.hpp"
#include "remat/cost/streambp.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

LayerShapes build_shapes(const ModelSpec& m, const RankShape& r) {
  LayerShapes s;
  s.kinds.resize(size_t(m.layer_kind_count()));
  std::vector<bool> built(s.kinds.size());
  for (int64_t i = 0; i < m.num_hidden_layers + m.first_k_dense_replace + m.moe_layer_freq; ++i) {
    const int k = m.layer_kind(i);
    if (built[size_t(k)] || (i >= m.num_hidden_layers && k != 1)) continue;
    built[size_t(k)] = true;
    s.kinds[size_t(k)] = build_layer(m, r, i);
  }
  if (built[0] && built[1]) return s;
  // attention + dense: every model has this shape to fall back on (kinds 0 and 1 are always costed)
  ModelSpec dense_only = m;
  dense_only.n_routed_experts = 0;
  dense_only.layer_mixers.clear(), dense_only.layer_has_ffn.clear();
  dense_only.layer_variants.clear(), dense_only.layer_variant_ids.clear();
  dense_only.sliding_window_tokens = 0;  // kind 0: full attention
  LayerDef fallback = build_layer(dense_only, r, 0);
  if (!built[1]) s.kinds[1] = fallback;
  if (!built[0]) s.kinds[0] = std::move(fallback);
  return s;
}

namespace {

// Gemma 4 E2B/E4B's per-layer inputs on the first stage (Gemma4TextModel.get_per_layer_inputs and
// project_per_layer_inputs), held per microbatch from its forward to its backward: the combined
// (tokens x layers x d) bf16 tensor each layer's branch saves a slice of; where the weights train,
// also what the projection's norm saves (its fp32 input, the fp32 normed product and 1/rms per row).
double per_layer_inputs_bytes(const ModelSpec& m, const RankShape& r) {
  if (m.per_layer_input_width <= 0) return 0;
  const double rows = r.b * r.s * double(m.num_hidden_layers), elems = rows * double(m.per_layer_input_width);
  double bytes = elems * ops::kBf16;
  const double normed = m.norm_scale_fp32 ? ops::kFp32 : r.stream_bytes();
  if (r.weights_train) bytes += elems * (ops::kFp32 + normed) + rows * ops::kFp32;
  return bytes;
}

// The embeddings' dropout (ModelSpec::embedding_dropout) saves its bool mask where its input needs a
// gradient, from the forward to the embeddings' backward: where the embeddings train, and under LoRA
// where a reentrant checkpoint's enable_input_require_grads hook makes the embeddings' output a leaf
// that requires one (checkpoint_args_bytes: held where a layer is checkpointed). The graph then holds
// that leaf beside its dropped copy, the first layer's input (StarCoder2-7B, reentrant LoRA, mixed: the
// fp32 embedding output, its dropped copy and the mask alive at the replay's peak,
// peak-traces-h200/unseen10/sc2-lora-re-do0.1-mixed-dpo). PeftModel installs the same hook under a
// non-reentrant checkpoint, but there the measured StarCoder2 steps split (SFT -1.52% -> -0.06%, DPO
// +2.05% -> +4.16% with the leaf counted) and no trace of one could be taken: left out there.
void add_embedding_dropout(StageBase& s, const ModelSpec& m, const RankShape& r, const TrainingSpec& t) {
  if (!t.layouts_from_model_code || m.embedding_dropout <= 0) return;
  const double elems = r.seq_tokens() * double(m.hidden_size);
  if (t.lora_rank <= 0)
    s.stage_output_bytes += elems;
  else if (t.replay == RecomputeReplay::full)
    s.checkpoint_args_bytes += elems * (1 + r.stream_bytes());
}

// Gemma's final_logit_softcapping (GemmaForCausalLM.forward: logits / c, tanh, * c on the bf16
// logits): tanh's output is saved for its backward, one more bf16 logits tensor alive from the
// forward through the loss's backward (one chunk's under a chunked head); three elementwise passes
// each way (bytes per logit: forward 2+2 each; backward the product's 2+2, tanh's 2+2+2, the
// division's 2+2).
void add_logit_softcap(StageBase& s, const ModelSpec& m, const TrainingSpec& t, const HardwareSpec& hw, double logits) {
  if (m.final_logit_softcap <= 0) return;
  s.head_transient_bytes += ops::kBf16 * logits / double(std::max<int64_t>(t.lm_head_chunks, 1));
  const double mem_bw = hw.hbm_bytes_per_s * hw.efficiency.memory_bound;
  s.fixed_fwd_s += 12 * logits / mem_bw;
  s.fixed_bwd_s += 14 * logits / mem_bw;
}

// The LM head and loss on the last stage: final norm + vocab-parallel linear,
// the logits, the loss's fp32 copy and the logits' gradient. They live only
// around the loss, one microbatch at a time.
void add_head(StageBase& s, const ModelSpec& m, const RankShape& r, const TrainingSpec& t, const HardwareSpec& hw) {
  const Block head = lm_head_block(r, m);
  double logits = r.tokens() * double(m.vocab_size) / double(r.tp);
  // GRPO with the prompt known: logits of the completion (and one more position) only, where the
  // model's forward honours logits_to_keep
  const bool keeps_completion = !(r.layouts_from_model_code && m.logits_every_position);
  if (t.objective == Objective::grpo && t.prompt_tokens > 0 && t.prompt_tokens < t.seq && keeps_completion)
    logits *= double(t.seq - t.prompt_tokens + 1) / double(t.seq);
  // policy logits, fp32 copy and gradient (+ old-policy and reference logits for GRPO/DPO),
  // one of lm_head_chunks chunks at a time under StreamBP, and the normed input's gradient
  // (src/cost/streambp.cpp)
  const ModelLogits handed = r.layouts_from_model_code ? m.logits : ModelLogits::standard;
  s.head_transient_bytes = head_peak_bytes(head, t, logits, handed);
  s.head_forward_bytes = head_forward_bytes(head, t, logits, handed);
  add_logit_softcap(s, m, t, hw, logits);
  // Falcon-H1's lm_head_multiplier as transformers applies it (FalconH1ForCausalLM.forward:
  // lm_head(h) * m): one more pass over the bf16 logits each way (2+2 bytes a logit); the unscaled
  // logits are freed at once, so the loss's tensors still set the head's peak
  if (m.logits_multiplied && r.layouts_from_model_code) {
    const double bw = hw.hbm_bytes_per_s * hw.efficiency.memory_bound;
    s.fixed_fwd_s += 4 * logits / bw, s.fixed_bwd_s += 4 * logits / bw;
  }
  for (const auto& op : head.ops) {
    const OpTime ot = op_time(op, hw);
    s.fixed_fwd_s += ot.fwd_s, s.fixed_bwd_s += ot.bwd_s;
    s.fixed_fwd_flops += op.fwd_flops, s.fixed_bwd_flops += op.bwd_flops;
    // chunked head: the forward computes the loss chunk by chunk and drops the logits, the
    // backward recomputes each chunk's logits (one more head forward, counted in backward)
    if (t.lm_head_chunks > 1 && op.kind == OpKind::gemm) s.fixed_bwd_s += ot.fwd_s, s.fixed_bwd_flops += op.fwd_flops;
  }
  const double mem_bw = hw.hbm_bytes_per_s * hw.efficiency.memory_bound;
  if (t.loss_grad_in_place) {
    // vocab-parallel cross entropy in fp32 (bytes per logit): upcast 2+4, max 4,
    // subtract 4+4, exp 4+4, sum 4, normalize 4+4; backward: scale 4+4, cast 4+2
    s.fixed_fwd_s += 38 * logits / mem_bw;
    s.fixed_bwd_s += 14 * logits / mem_bw;
    return;
  }
  if (handed == ModelLogits::own_bf16_loss && t.objective == Objective::sft) {
    // the model's own cross_entropy on bf16 logits (bytes per logit): log_softmax reading its input
    // twice and writing 2+2+2 (under autocast nll_loss's fp32 cast 2+4); backward: nll_loss's
    // zero-filled gradient 2 (4 under autocast, then its cast back 4+2), log_softmax's gradient reading
    // it and the saved output and writing 2+2+2, the slice's zero-filled gradient and its copy 2+2+2
    const bool fp32 = t.params_fp32_autocast;
    s.fixed_fwd_s += (6 + (fp32 ? 6 : 0)) * logits / mem_bw;
    s.fixed_bwd_s += ((fp32 ? 4 + 6 : 2) + 6 + 6) * logits / mem_bw;
    return;
  }
  if (t.loss_log_softmax_saved && t.objective == Objective::sft) {
    // transformers' ForCausalLMLoss (bytes per logit): logits.float() 2+4, log_softmax reading
    // its input twice and writing 4+4+4; backward: nll_loss's zero-filled fp32 gradient 4,
    // log_softmax's gradient reading it and the saved output and writing 4+4+4 (its row sums 4),
    // the cast back to bf16 4+2
    s.fixed_fwd_s += (6 + 12) * logits / mem_bw;
    s.fixed_bwd_s += (4 + 16 + 6) * logits / mem_bw;
    return;
  }
  s.fixed_fwd_s += (2 + 4) * logits / mem_bw * 2;  // softmax cross-entropy: two passes over the logits
  s.fixed_bwd_s += (4 + 2) * logits / mem_bw;      // gradient of the logits
}

// Multi-token prediction (DeepSeek-V3's num_nextn_predict_layers, Megatron's --mtp-num-layers):
// each module on the last stage runs its own LM head and loss, whose logits are saved for
// backward beside the main head's, and eh_proj (the normed embedding and hidden, 2h, to h),
// whose input it saves. Its transformer layer is one more layer of the stage (stage_estimate).
void add_mtp_heads(StageBase& s, const ModelSpec& m, const RankShape& r, const HardwareSpec& hw) {
  const double k = double(m.num_nextn_predict_layers);
  if (k <= 0) return;
  s.head_transient_bytes *= 1 + k;
  s.fixed_fwd_s *= 1 + k, s.fixed_bwd_s *= 1 + k;
  s.fixed_fwd_flops *= 1 + k, s.fixed_bwd_flops *= 1 + k;
  const double h = double(m.hidden_size), tokens = r.tokens();
  OpDef eh_proj;
  eh_proj.kind = OpKind::gemm;
  eh_proj.fwd_flops = 2 * tokens * 2 * h * h / double(r.tp);
  eh_proj.bwd_flops = eh_proj.bwd_exec_flops = 2 * eh_proj.fwd_flops;
  eh_proj.gemm_flops_each = eh_proj.fwd_flops;
  const OpTime ot = op_time(eh_proj, hw);
  s.fixed_fwd_s += k * ot.fwd_s, s.fixed_bwd_s += k * ot.bwd_s;
  s.fixed_fwd_flops += k * eh_proj.fwd_flops, s.fixed_bwd_flops += k * eh_proj.bwd_flops;
  // the two normed inputs and their concatenation (bf16), sequence-sharded under sp
  s.mtp_saved_bytes = k * 4 * r.seq_tokens() * h * 2;
}

// Each stage but the last sends activations forward, each but the first sends
// gradients back (sequence-sharded under sp).
void add_p2p(StageBase& s, const ModelSpec& m, const RankShape& r, const TrainingSpec& t, const HardwareSpec& hw) {
  if (t.pp <= 1) return;
  const double bytes = r.seq_tokens() * double(m.hidden_size) * m.residual_streams() * 2;
  const int64_t ranks = t.gpus() > kGpusPerNode ? kGpusPerNode + 1 : 2;
  const double send_s = bytes / link_bytes_per_s(hw, ranks);
  if (s.index + 1 < t.pp) s.fixed_fwd_s += send_s, s.fixed_comm_s += send_s;
  if (s.index > 0) s.fixed_bwd_s += send_s, s.fixed_comm_s += send_s;
}

// transformers' eager attention adds a 4-D float mask (masking_utils.eager_mask: b x 1 x s x s in the
// embeddings' dtype, fp32 under autocast) that the model builds once per forward, one per kind of
// layer (full and sliding-window), and hands to every layer; a checkpointed layer's arguments keep it
// to its backward (Gemma 3's reentrant mixed GRPO step at 2 x 8k: two fp32 masks of 1 GiB,
// peak-traces-h200/unseen15). Under sdpa the full-attention layers get none (is_causal) and the
// sliding-window ones, from a sequence of the window on, one bool mask (masking_utils.sdpa_mask): a
// byte per element, one s x s expanded over the batch, kept the same way (Phi-3's longest reentrant
// step at 67k: 1 byte x s^2 beside the bf16 bias each layer's kernel saves,
// reports/hf/longest-blind-h200.jsonl).
double checkpointed_masks_bytes(const ModelSpec& m, const RankShape& r, const TrainingSpec& t) {
  if (!t.layouts_from_model_code) return 0;
  bool windowed = false, full = false;
  for (int64_t i = 0; i < m.num_hidden_layers; ++i) {
    if (m.mixer(i) == Mixer::compressed_attention) full = true;  // DeepSeek-V4's one windowed mask
    if (!m.layer_has_attention(i)) continue;
    (m.layer_is_windowed(i) ? windowed : full) = true;
  }
  if (t.flash_attention) return windowed && r.s >= double(m.sliding_window_tokens) ? r.s * r.s : 0;
  const double masks = double(windowed) + double(full);
  return masks * r.b * r.s * r.s * (t.params_fp32_autocast ? 4 : 2);
}

// Gemma 4's shared_kv_states: the keys (normed, rotated) and values (normed) of the last layer of each
// attention kind before the kv-shared ones, bf16, in a dict every layer gets as an argument; a
// checkpointed layer's arguments keep it to its backward. Gemma-4-31B cut to 2 layers, reentrant
// LoRA DPO at 2 x 8k: its sliding layer's 128 MiB keys and values and its full layer's 256 MiB ones
// alive at the loss (peak-traces-h200/random-blind25-followup, -3.37% while uncounted).
double checkpointed_shared_kv_bytes(const ModelSpec& m, const RankShape& r, const TrainingSpec& t) {
  if (!t.layouts_from_model_code || !m.stores_last_kv_per_kind) return 0;
  double bytes = 0;
  for (bool windowed : {true, false})
    for (int64_t i = m.num_hidden_layers - 1; i >= 0; --i) {
      if (m.layer_shares_kv(i) || !m.layer_has_attention(i) || m.layer_is_windowed(i) != windowed) continue;
      const AttentionShape a = m.attention_shape(i);
      bytes += 2 * r.seq_tokens() * double(a.kv_heads / r.tp) * double(a.head_dim) * ops::kBf16;
      break;
    }
  return bytes;
}

// What the framework profile adds (TrainingSpec, src/spec/framework.cpp):
// the persistent QK^T buffer of the unfused attention, library workspaces,
// and the stage output the pipeline holds per in-flight microbatch, and eager attention's masks
// checkpoints keep.
void add_framework_bytes(StageBase& s, const ModelSpec& m, const RankShape& r, const TrainingSpec& t) {
  s.runtime_bytes = t.runtime_bytes;
  if (t.layouts_from_model_code) s.runtime_bytes += m.buffer_bytes;  // the model's own buffers
  s.ordered_backward = t.ordered_backward;
  if (t.attention_score_buffer && s.last_layer > s.first_layer) {
    const double heads = double(m.max_attention_heads() / t.tp);
    s.runtime_bytes += r.b * heads * r.s * r.s * 2;
  }
  if (t.keeps_stage_outputs && s.index + 1 < t.pp)
    s.stage_output_bytes = r.seq_tokens() * double(m.hidden_size) * m.residual_streams() * 2;
  s.checkpoint_args_bytes = checkpointed_masks_bytes(m, r, t) + checkpointed_shared_kv_bytes(m, r, t);
}

}  // namespace

namespace {

// Weights, gradients and optimizer state of `params` (adapters under LoRA, the reference copy
// under GRPO/DPO, one layer gathered at a time under ZeRO-3: streambp_static_bytes).
StaticBytes held_bytes(const ParamCount& params, double largest_layer, double adapter_params, const TrainingSpec& t) {
  if (t.lora_rank > 0 || t.objective != Objective::sft || t.zero_stage >= 3)
    return streambp_static_bytes(params, largest_layer, adapter_params, t);
  return static_bytes(params, t);
}

bool grads_absent_before_backward(const TrainingSpec& t) {
  // absent at the activation peak only when no earlier microbatch's backward allocated them
  return t.grads_allocated_in_backward && t.microbatches() == 1;
}

}  // namespace

double layer_gradient_bytes(const ModelSpec& m, const TrainingSpec& t, int64_t g) {
  if (!grads_absent_before_backward(t)) return 0;
  return held_bytes(layer_params(m, g, t.tp, t.ep), 0, lora_layer_params(m, t, t.tp, g), t).gradients;
}

int64_t first_adapted_layer(const ModelSpec& m, const TrainingSpec& t) {
  if (t.lora_rank <= 0) return -1;
  for (int64_t g = 0; g < m.num_hidden_layers; ++g)
    if (lora_layer_params(m, t, t.tp, g) > 0) return g;
  return m.num_hidden_layers;
}

namespace {

bool has_adapter(const Block& b) {
  // a Linear's adapter, or one on the routed experts' stacked weights (add_expert_adapter)
  return std::any_of(b.ops.begin(), b.ops.end(), is_adapter_op);
}

// Ops whose inputs and weights need no gradient (those `which` picks) save nothing and run no
// backward. Where one states what its forward holds, the tensors the picked ops up to it would have
// saved are alive with it (the module's locals, freed when its forward returns).
template <class Which>
void freeze_ops(Block& b, Which which) {
  double locals = 0;
  std::vector<std::string> seen;
  for (OpDef& op : b.ops) {
    if (!which(op)) continue;
    for (const std::string& name : op.saves)
      if (std::find(seen.begin(), seen.end(), name) == seen.end()) {
        seen.push_back(name);
        locals += b.tensor_bytes(name);
      }
    if (op.fwd_working_bytes > 0) op.fwd_working_bytes += locals;
  }
  for (OpDef& op : b.ops) {
    if (!which(op)) continue;
    op.saves.clear();
    op.bwd_flops = op.bwd_exec_flops = op.bwd_bytes = 0;
    op.working_bytes = op.fwd_working_bytes;
  }
}

// A block whose inputs and weights need no gradient.
void freeze(Block& b) {
  freeze_ops(b, [](const OpDef&) { return true; });
  b.tensors.clear();
  b.inputs.clear(), b.kept_outside.clear(), b.attention_stats.clear();
  b.inputs_saved = false;
}

// The input norm of the first adapted block saves nothing for a gradient nobody asks for: an
// upcasting RMSNorm's fp32 input, or a native LayerNorm's input and statistics (Merlyn's GPT-NeoX
// layer 0 keeps neither its input nor its norms' in peak-traces-h200/unseen17).
void drop_input_norm_saves(Block& b, const TrainingSpec& t) {
  // the block's input stays alive beside its forward (the decoder's `residual`), saved or not: it is
  // no longer saved, and a replay's walk holds it (Wizard-Vicuna-30B's first layer under MLP adapters,
  // mixed, no checkpointing: the attention's residual sum beside the down adapter's forward,
  // peak-traces-h200/random-blind38)
  const auto unsave = [&b](const std::string& name) {
    for (OpDef& op : b.ops) std::erase(op.saves, name);
    for (TensorDef& tensor : b.tensors)
      if (tensor.name == name) tensor.working_copies = 0;  // it needs no gradient either
  };
  const bool layer_norm =
      std::any_of(b.ops.begin(), b.ops.end(), [](const OpDef& op) { return op.name == "layernorm"; });
  if (layer_norm) {
    b.inputs_saved = false;
    unsave("x");
    for (TensorDef& tensor : b.tensors)
      if (tensor.name == "x32" || tensor.name == "mean" || tensor.name == "rstd") tensor.bytes = 0;
    return;
  }
  if (!t.norm_fp32_upcast) return;
  const std::string input = t.params_fp32_autocast ? "x" : "x32";
  if (input == "x") unsave("x");
  for (TensorDef& tensor : b.tensors)
    if ((tensor.name == input && input != "x") || tensor.name == "rstd" || tensor.name == "centered" ||
        tensor.name == "centered_again")
      tensor.bytes = 0;
}

// The adapters of the first adapted block that read its frozen input (q, k and v beside each other on
// the normed input; gate and up): PEFT's dropout of an input that needs no gradient records no graph,
// so its bool mask is freed at once and lora_A saves the dropped copy alone (Llama-3.2-3B's first
// layer under q/k/v/o adapters, dropout 0.05, no checkpointing: the o adapter's mask alone alive in
// peak-traces-h200/random-blind25, +2.77% while counted).
void drop_frozen_dropout_masks(Block& b, const TrainingSpec& t) {
  if (!t.layouts_from_model_code) return;
  const auto first = std::find_if(b.ops.begin(), b.ops.end(), is_adapter_op);
  if (first == b.ops.end() || first->input_held.empty()) return;
  for (const OpDef& op : b.ops) {
    if (!is_adapter_op(op) || op.input_held != first->input_held || op.dropout_mask_bytes <= 0) continue;
    for (TensorDef& tensor : b.tensors)
      if (tensor.name.ends_with(".input") && std::find(op.saves.begin(), op.saves.end(), tensor.name) != op.saves.end())
        tensor.bytes -= op.dropout_mask_bytes;
  }
}

// Whether an op of `layer` is the PEFT adapter of the projection named `projection`.
bool adapts(const LayerDef& layer, const std::string& projection) {
  return std::any_of(layer.blocks.begin(), layer.blocks.end(), [&](const Block& block) {
    return std::any_of(block.ops.begin(), block.ops.end(),
                       [&](const OpDef& op) { return op.name == projection + ".lora"; });
  });
}

// The first adapted block's gates computed by projections without adapters need no gradient (their
// input needs none, their weights are frozen): what an op saves only for such a gate's gradient is not
// kept (OpDef::saved_for_gates).
void drop_unadapted_gate_saves(Block& b, const LayerDef& layer) {
  const auto adapted = [&](const std::string& projection) { return adapts(layer, projection); };
  for (OpDef& op : b.ops)
    for (const OpDef::GateSave& save : op.saved_for_gates)
      if (std::none_of(save.projections.begin(), save.projections.end(), adapted) && std::erase(op.saves, save.tensor))
        op.working_bytes = std::max(0.0, op.working_bytes - save.working_bytes);
}

// The MoE blocks from `from` on, in the first adapted layer, where their input needs no gradient (a
// parallel layer's MLP or MoE branch beside the attention, or an MoE whose own adapters come first): a
// GEMM whose adapted weight is folded (PEFT's experts) saves no weight for one
// (reports/hf/peak-traces-h200/unseen9/cohere2moe: the first layer's folded gate_up is not kept).
void drop_weight_saves_beside(LayerDef& layer, size_t from) {
  for (size_t i = from; i < layer.blocks.size(); ++i)
    for (OpDef& op : layer.blocks[i].ops)
      if (op.name == "experts_gate_up") std::erase(op.saves, std::string("experts_gate_up.lora_weight"));
}

// A parallel layer's feed-forward branch (its MLP or MoE and their glue) reads the normed layer
// input beside the attention. In the first adapted layer that input needs no gradient, so the
// branch saves nothing up to its first adapter: a branch without adapters nothing at all (Phi-1
// under attention adapters: steps-unseen10b-h200.jsonl, its first layer's MLP kept nothing in the
// allocator's trace, peak-traces-h200/unseen10), one with an adapter on down_proj not the up
// projection's output its activation saves (Pythia-12B's first layer: peak-traces-h200/unseen15).
void freeze_branch_before_adapters(LayerDef& layer, size_t from, const TrainingSpec& t) {
  const auto in_branch = [](const Block& b) { return b.name.starts_with("mlp") || b.name.starts_with("moe"); };
  for (size_t i = from; i < layer.blocks.size(); ++i) {
    Block& b = layer.blocks[i];
    if (!in_branch(b)) continue;
    if (!has_adapter(b)) {
      freeze(b);
      continue;
    }
    if (!t.layouts_from_model_code) return;
    drop_input_norm_saves(b, t);
    drop_frozen_dropout_masks(b, t);
    const OpDef* first_adapter = &*std::find_if(b.ops.begin(), b.ops.end(), is_adapter_op);
    freeze_ops(b, [&](const OpDef& op) { return op.beside_adapters || &op < first_adapter; });
    return;
  }
}

// The first adapted block is the shared experts' and the router has no adapter: the routed experts
// read the same frozen input, and their routing weights need no gradient, so the MoE blocks after it
// without adapters of their own save nothing (DeepSeek-V4's first layer under shared-expert adapters,
// its experts not converted by PEFT: peak-traces-h200/dsv4/dsv4-lora-mlp-none-s4096).
void freeze_routed_beside_shared(LayerDef& layer, size_t from) {
  if (adapts(layer, "router")) return;
  for (size_t i = from; i < layer.blocks.size() && layer.blocks[i].name.starts_with("moe"); ++i)
    if (!has_adapter(layer.blocks[i]))
      freeze(layer.blocks[i]);
    else
      drop_unadapted_gate_saves(layer.blocks[i], layer);
}

}  // namespace

LayerDef frozen_prefix_layer(const LayerDef& layer, bool whole_layer, const TrainingSpec& t) {
  LayerDef out = layer;
  for (size_t i = 0; i < out.blocks.size(); ++i) {
    Block& b = out.blocks[i];
    if (!whole_layer && has_adapter(b)) {
      drop_input_norm_saves(b, t);
      drop_frozen_dropout_masks(b, t);
      drop_unadapted_gate_saves(b, out);
      // the ops before its first adapter read only what derives from the frozen input (Phi-4's
      // gate_up and SwiGLU before a down_proj adapter: peak-traces-h200/unseen10)
      const OpDef* first_adapter = &*std::find_if(b.ops.begin(), b.ops.end(), is_adapter_op);
      const auto before = [&](const OpDef& op) { return t.layouts_from_model_code && &op < first_adapter; };
      freeze_ops(b, [&](const OpDef& op) { return op.beside_adapters || before(op); });
      if (layer.parallel_branches) drop_weight_saves_beside(out, i + 1), freeze_branch_before_adapters(out, i + 1, t);
      // the first adapter is the MoE's (its router or experts): the experts still read the frozen
      // input (Mixtral under w1, w3, w2 alone: its first layer's folded gate_up not kept,
      // peak-traces-h200/all-linear/mixtral-w1-w3-w2-none-s2048)
      if (b.name.starts_with("moe")) drop_weight_saves_beside(out, i);
      if (b.name == "moe.shared") freeze_routed_beside_shared(out, i + 1);
      break;
    }
    freeze(b);
  }
  return out;
}

double held_adapter_params(const ModelSpec& m, const TrainingSpec& t, int64_t first_layer, int64_t last_layer,
                           bool first_stage) {
  if (!t.layouts_from_model_code || t.lora_rank <= 0) return 0;
  double held = first_stage ? double(t.lora_rank) * t.lora_targets.tower_adapter_width : 0;
  for (int64_t g = first_layer; g < last_layer; ++g) held += lora_held_layer_params(m, t, g);
  return held;
}

LayerRangeParams layer_range_params(const ModelSpec& m, const TrainingSpec& t, std::pair<int64_t, int64_t> layers) {
  LayerRangeParams out;
  for (int64_t g = layers.first; g < layers.second; ++g) {
    const ParamCount lp = layer_params(m, g, t.tp, t.ep);
    out.params.dense += lp.dense, out.params.expert += lp.expert, out.params.untrained += lp.untrained;
    out.layers_total += lp.total();
    if (t.layouts_from_model_code) out.params.untrained += indexer_params(m, g);  // transformers: under no_grad
    out.largest_layer = std::max(out.largest_layer, lp.total());
    out.adapter_params += lora_layer_params(m, t, t.tp, g);
  }
  return out;
}

// Per-rank parameter counts are whole numbers far below 2^53 where tp and ep divide the dims, so
// differences of these sums equal the sums over the range exactly.
LayerParamTable::LayerParamTable(const ModelSpec& m, const TrainingSpec& t) {
  const int64_t n = effective_layers(m, t);
  before_.resize(size_t(n + 1));
  layer_total_.resize(size_t(n));
  for (int64_t g = 0; g < n; ++g) {
    const LayerRangeParams one = layer_range_params(m, t, {g, g + 1});
    LayerRangeParams& next = before_[size_t(g + 1)];
    next = before_[size_t(g)];
    next.params.dense += one.params.dense, next.params.expert += one.params.expert;
    next.params.untrained += one.params.untrained;
    next.layers_total += one.layers_total, next.adapter_params += one.adapter_params;
    layer_total_[size_t(g)] = one.largest_layer;
  }
}

LayerRangeParams LayerParamTable::range(std::pair<int64_t, int64_t> layers) const {
  const LayerRangeParams &hi = before_[size_t(layers.second)], &lo = before_[size_t(layers.first)];
  LayerRangeParams out;
  out.params.dense = hi.params.dense - lo.params.dense, out.params.expert = hi.params.expert - lo.params.expert;
  out.params.untrained = hi.params.untrained - lo.params.untrained;
  out.layers_total = hi.layers_total - lo.layers_total, out.adapter_params = hi.adapter_params - lo.adapter_params;
  for (int64_t g = layers.first; g < layers.second; ++g)
    out.largest_layer = std::max(out.largest_layer, layer_total_[size_t(g)]);
  return out;
}

StageBase stage_base(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, const RankShape& r,
                     int64_t index, std::pair<int64_t, int64_t> layers, const LayerParamTable* table) {
  StageBase s;
  s.index = index;
  s.first_layer = layers.first, s.last_layer = layers.second;
  s.in_flight = std::min(t.pp - index, t.microbatches());
  const bool tabled = table && layers.first >= 0 && layers.second <= table->layers();
  const LayerRangeParams lp = tabled ? table->range(layers) : layer_range_params(m, t, layers);
  s.params = lp.params, s.adapter_params = lp.adapter_params;
  const double largest_layer = lp.largest_layer, layer_params_total = lp.layers_total;
  const bool first = index == 0, last = index + 1 == t.pp;
  if (first) s.params.dense += input_embedding_params(m, t.tp);
  // transformers builds a multimodal checkpoint's vision tower too; a text-only step holds its
  // weights and never runs it (no gradient, no optimizer state)
  if (first && t.layouts_from_model_code) s.params.dense += m.idle_params, s.params.untrained += m.idle_params;
  if (last) {
    s.params.dense += head_extra_params(m, t.tp);  // final norm, head bias
    if (!m.tie_word_embeddings || t.pp > 1) s.params.dense += embedding_params(m, t.tp);
    const ParamCount mtp = mtp_params(m, t.tp, t.ep);
    s.params.dense += mtp.dense, s.params.expert += mtp.expert;
    add_head(s, m, r, t, hw);
    add_mtp_heads(s, m, r, hw);
  }
  add_p2p(s, m, r, t, hw);
  s.forward_passes = double(1 + no_grad_forwards(t));
  add_framework_bytes(s, m, r, t);
  if (first) s.stage_output_bytes += per_layer_inputs_bytes(m, r);
  if (first) add_embedding_dropout(s, m, r, t);
  s.static_bytes = held_bytes(s.params, largest_layer, s.adapter_params, t);
  // PEFT's adapters on the tower's modules the target names reach, on DSA's and DeepSeek-V4's indexers
  // (run under no_grad) and on Llama 3.2 Vision's cross-attention layers (skipped): held in the adapters'
  // dtype, never trained (no gradient, no optimizer state); Voxtral's q/k/v_proj, GLM-4.1V's down_proj
  // (steps-unseen15-h200.jsonl)
  const double held = held_adapter_params(m, t, s.first_layer, s.last_layer, first);
  s.static_bytes.weights += (t.lora_adapter_bytes == 4 ? 4 : bytes_per_param(t, 1).weights) * held;
  if (grads_absent_before_backward(t)) {
    s.grads_absent_bytes = s.static_bytes.gradients;
    if (last)  // the output matrix (the tied embedding's gradient too) and the final norm
      s.head_grads_bytes = held_bytes({embedding_params(m, t.tp) + head_extra_params(m, t.tp), 0}, 0, 0, t).gradients;
  }
  if (t.tied_grads_summed_out_of_place && first && last && m.tie_word_embeddings && t.lora_rank == 0) {
    // bf16: the lookup's gradient and the sum beside the head's (three embedding-sized gradients in
    // the measured trace). Under autocast no sum shows above the head's peak (Cohere's mixed step in
    // steps-layernorm-h200.jsonl leaves room for one fp32 copy, not two), as an in-place add would
    // leave it: the lookup's gradient alone is counted
    const double copies = t.params_fp32_autocast ? 1 : 2;
    s.tied_embedding_backward_bytes = copies * held_bytes({embedding_params(m, t.tp), 0}, 0, 0, t).gradients;
  }
  if (t.params_fp32_autocast) {  // the bf16 copy of every GEMM weight outside the layers (the LM head's)
    // the layers' own copies are their kept bytes (stage_layer_cost); a vision tower never runs
    // (LFM2.5-VL's mixed LoRA step: +6.5% with its tower's copy, steps-unseen11-h200.jsonl)
    const double idle = first && t.layouts_from_model_code ? m.idle_params : 0;
    s.autocast_cast_bytes =
        2 * (s.params.total() - layer_params_total - idle - (first ? embedding_params(m, t.tp) : 0) +
             (last && m.tie_word_embeddings && t.pp == 1 ? embedding_params(m, t.tp) : 0));
    const bool head_cast = last && (!m.tie_word_embeddings || t.pp == 1);
    s.head_cast_bytes = head_cast ? 2 * embedding_params(m, t.tp) : 0;
  }
  if (t.grad_accumulation_pass)  // read the bf16 gradient, read and write the fp32 main grad
    s.fixed_bwd_s += 10 * s.params.total() / (hw.hbm_bytes_per_s * hw.efficiency.memory_bound);
  if (t.optimizer_temp_bytes_per_param > 0 && t.optimizer != Optimizer::none) {
    // with ep > 1 Megatron steps the dense and the expert-parallel parameters in two optimizers, one
    // after the other, so only the larger group's temporary is live (reports/megatron: MoE ep 2)
    const double dense = (s.params.dense - s.params.untrained) / (t.zero_stage >= 1 ? double(t.dp) : 1.0);
    const double trained = t.lora_rank > 0 ? s.adapter_params
                           : t.ep > 1      ? std::max(dense, s.params.expert)
                                           : dense + s.params.expert;
    const double temp_per_param =
        t.lora_rank > 0 && t.lora_adapter_bytes > 0 ? double(t.lora_adapter_bytes) : t.optimizer_temp_bytes_per_param;
    s.optimizer_step_bytes = temp_per_param * trained;
  }
  s.copy_bytes_per_s = host_copy_bytes_per_s(hw);
  s.link_shared = t.tp > hw.nvlink_domain_gpus || hw.nvlink_bytes_per_s <= 0;
  return s;
}

void LayerSums::add(const LayerCost& c) {
  if (c.forward_peak_bytes > 0) forward_peak_bytes = std::max(forward_peak_bytes, kept_bytes + c.forward_peak_bytes);
  kept_bytes += c.kept_bytes, forward_held_bytes += c.forward_held_bytes;
  if (c.chunk_start) open_chunk_bytes = 0;
  // a chunk's backward starts with every layer of the chunk replayed: the last layer's working set
  // sits on top of the earlier layers' replayed tensors
  const double working = (c.chunk_replay_bytes > 0 ? open_chunk_bytes : 0) + c.transient_bytes;
  transient_bytes = std::max(transient_bytes, working);
  // the earlier layers' backward runs after this one's freed its kept bytes and allocated its gradients
  ordered_transient_bytes = std::max(ordered_transient_bytes - c.kept_bytes + c.grads_bytes, working);
  open_chunk_bytes = c.chunk_replay_bytes > 0 ? open_chunk_bytes + c.chunk_replay_bytes : 0;
  offload_staging_bytes = std::max(offload_staging_bytes, c.offload_bytes);
  offloaded_layers += c.offload_bytes > 0 ? 1 : 0;
  offload_bytes += c.offload_bytes;
  fwd_s += c.fwd_s, bwd_s += c.bwd_s, recompute_s += c.recompute_s, comm_s += c.comm_s;
  fwd_comm_s += c.fwd_comm_s, bwd_comm_s += c.bwd_comm_s;
  fwd_flops += c.fwd_flops, bwd_flops += c.bwd_flops, recompute_flops += c.recompute_flops;
}

void LayerSums::add(const LayerCost& c, int64_t copies) {
  if (copies <= 0) return;
  if (c.chunk_replay_bytes > 0 || c.chunk_start || copies == 1) {
    for (int64_t i = 0; i < copies; ++i) add(c);
    return;
  }
  // n copies at once: each add lowers the ordered working set by the layer's kept bytes less its
  // gradients (d) and raises it to the layer's own (w), so after n it is the larger of
  // (before - n d) and w - (n - 1) d where d < 0, w where d >= 0
  const double n = double(copies), d = c.kept_bytes - c.grads_bytes;
  add(c);
  if (c.forward_peak_bytes > 0)  // the last copy's forward, beside the kept bytes of the n - 1 before it
    forward_peak_bytes = std::max(forward_peak_bytes, kept_bytes + (n - 2) * c.kept_bytes + c.forward_peak_bytes);
  ordered_transient_bytes =
      std::max(ordered_transient_bytes - (n - 1) * d, c.transient_bytes + std::max(0.0, -(n - 1) * d));
  kept_bytes += (n - 1) * c.kept_bytes, forward_held_bytes += (n - 1) * c.forward_held_bytes;
  offloaded_layers += c.offload_bytes > 0 ? copies - 1 : 0;
  offload_bytes += (n - 1) * c.offload_bytes;
  fwd_s += (n - 1) * c.fwd_s, bwd_s += (n - 1) * c.bwd_s, recompute_s += (n - 1) * c.recompute_s;
  comm_s += (n - 1) * c.comm_s, fwd_comm_s += (n - 1) * c.fwd_comm_s, bwd_comm_s += (n - 1) * c.bwd_comm_s;
  fwd_flops += (n - 1) * c.fwd_flops, bwd_flops += (n - 1) * c.bwd_flops;
  recompute_flops += (n - 1) * c.recompute_flops;
}

StageTotals stage_totals(const StageBase& base, const LayerSums& layers) {
  StageTotals t;
  const double checkpoint_args = layers.recompute_flops > 0 ? base.checkpoint_args_bytes : 0;
  t.activations_bytes =
      double(base.in_flight) * (layers.kept_bytes + base.stage_output_bytes + checkpoint_args) + base.mtp_saved_bytes;
  // Offload copies hide under compute only with a second buffer: while one
  // layer's backward runs, the next offloaded layer's activations come back
  // (in forward, one layer's copy out runs while the next fills its own), and
  // the last layer's copy out runs under the LM head. The event simulator
  // (sim/) shows these buffers alive at the peak.
  const double staging = layers.offloaded_layers >= 2 ? layers.offload_staging_bytes : 0;
  double head = base.head_transient_bytes > 0 ? base.head_transient_bytes + layers.offload_staging_bytes : 0;
  if (base.head_forward_bytes > 0)
    head = std::max(head, base.head_forward_bytes + layers.forward_held_bytes + layers.offload_staging_bytes);
  // under ordered backward every layer's backward runs with the head's gradients allocated and its
  // autocast weight copy freed
  const double layer_transient = base.ordered_backward
                                     ? layers.ordered_transient_bytes + base.head_grads_bytes - base.head_cast_bytes
                                     : layers.transient_bytes;
  t.transient_bytes = std::max(layer_transient + staging, head);
  const double fixed = base.static_bytes.total() + base.runtime_bytes;
  t.optimizer_step_peak_bytes = fixed + base.optimizer_step_bytes;
  const double at_activation_peak = fixed - base.grads_absent_bytes + base.autocast_cast_bytes;
  t.peak_bytes = std::max({at_activation_peak + t.activations_bytes + t.transient_bytes, t.optimizer_step_peak_bytes,
                           fixed + base.tied_embedding_backward_bytes});
  // a kept layer's forward, before the head's copies and any gradient exist, the other microbatches'
  // activations beside it
  if (layers.forward_peak_bytes > 0) {
    const double others = t.activations_bytes - (layers.kept_bytes + base.stage_output_bytes + checkpoint_args);
    t.peak_bytes = std::max(t.peak_bytes, fixed - base.grads_absent_bytes + others + layers.forward_peak_bytes);
  }
  t.fwd_s = base.forward_passes * (layers.fwd_s + base.fixed_fwd_s);
  t.bwd_s = layers.bwd_s + base.fixed_bwd_s;
  t.recompute_s = layers.recompute_s;
  t.comm_s = layers.comm_s + base.fixed_comm_s;
  // Offload copies hide under compute: device-to-host under the forward,
  // host-to-device under backward and recompute. Collectives that leave
  // NVLink (tp beyond the NVLink domain, expert all-to-all and data traffic
  // through the network card) cross the same PCIe link: their forward and
  // backward time (fixed by the layout) is taken out of those windows.
  const double copy_s = layers.offload_bytes / base.copy_bytes_per_s;
  const double fwd_comm = layers.fwd_comm_s;  // collectives that share the GPU's PCIe link
  const double bwd_comm = layers.bwd_comm_s;
  t.exposed_offload_s =
      std::max(0.0, copy_s - (t.fwd_s - fwd_comm)) + std::max(0.0, copy_s - (t.bwd_s - bwd_comm + t.recompute_s));
  t.microbatch_s = t.fwd_s + t.bwd_s + t.recompute_s + t.exposed_offload_s;
  return t;
}

}  // namespace remat
