// MoE and MLA recompute blocks (EAGLE Appendix C: MoE as norm+router+shared
// experts and routed experts; MLA as down projections and latent norms + up
// projections + flash attention), and the layer assembly.
#include <algorithm>

#include "exact_ops.hpp"
#include "exact_parts.hpp"
#include "remat/cost/exact_blocks.hpp"

namespace remat {

using ops::kBf16;
using ops::kFp32;

namespace {

// Rows each rank routes: its own sequence shard (Megatron, expert tp 1).
double moe_rows(const RankShape& r) { return r.seq_tokens(); }

double mla_down_width(const ModelSpec& m) {
  const double q = m.q_lora_rank > 0 ? double(m.q_lora_rank) : double(m.num_attention_heads) * double(m.qk_head_dim());
  return q + double(m.kv_lora_rank) + double(m.qk_rope_head_dim);
}

}  // namespace

Block mla_down_block(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "mla.down";
  const double h = double(m.hidden_size), rows = r.tokens();
  parts::add_input_norm(b, r, h);
  // q and kv down projections (replicated over tp), fused into one GEMM
  b.ops.push_back(ops::gemm("down_proj", rows, h, mla_down_width(m), {"x_norm"}));
  return b;
}

Block mla_up_attn_block(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "mla.up_attn";
  const double rows = r.tokens();
  const double nh = double(m.num_attention_heads / r.tp);
  const double d = double(m.qk_nope_head_dim), rope = double(m.qk_rope_head_dim), dv = double(m.v_head_dim);
  const double hq = double(m.q_lora_rank), hkv = double(m.kv_lora_rank);
  const bool q_latent = m.q_lora_rank > 0;
  // block inputs: the down projection's outputs (h~ = h_q + h_kv + r wide)
  b.inputs = {q_latent ? "q_latent" : "q", "kv_latent", "k_rope"};
  b.tensors.push_back({"kv_latent", rows * hkv * kBf16});
  b.tensors.push_back({"k_rope", rows * rope * kBf16});
  b.tensors.push_back({"kv_latent_norm", rows * hkv * kBf16});
  b.tensors.push_back({"rstd_kv", rows * kFp32});
  b.tensors.push_back({"q", rows * nh * (d + rope) * kBf16});
  b.tensors.push_back({"k", rows * nh * (d + rope) * kBf16});
  b.tensors.push_back({"v", rows * nh * dv * kBf16});
  b.tensors.push_back({"o", rows * nh * dv * kBf16});
  if (q_latent) {
    b.tensors.push_back({"q_latent", rows * hq * kBf16});
    b.tensors.push_back({"q_latent_norm", rows * hq * kBf16});
    b.tensors.push_back({"rstd_q", rows * kFp32});
    b.ops.push_back(ops::rmsnorm("q_norm", rows, hq, "q_latent", "rstd_q"));
    b.ops.push_back(ops::gemm("q_up", rows, hq, nh * (d + rope), {"q_latent_norm"}));
  }
  b.ops.push_back(ops::rmsnorm("kv_norm", rows, hkv, "kv_latent", "rstd_kv"));
  b.ops.push_back(ops::gemm("kv_up", rows, hkv, nh * (d + dv), {"kv_latent_norm"}));
  // rope on the decoupled parts and assembly of per-head q, k (k_rope broadcast to heads)
  const double qk_bytes = rows * nh * (d + rope) * kBf16;
  b.ops.push_back(ops::streaming("rope_concat", 4 * qk_bytes, 4 * qk_bytes, {}));
  // QK^T with head dim d + r, PV with dv; half under the causal mask
  const double fwd = (2 * rows * r.s * nh * (d + rope) + 2 * rows * r.s * nh * dv) * (r.causal ? 0.5 : 1.0);
  b.tensors.push_back({"lse", r.b * nh * r.s * kFp32});
  b.ops.push_back(ops::attention("flash_attention", fwd, r.s, d + rope, {"q", "k", "v", "o", "lse"}));
  b.attention_stats = {"lse"};
  b.kept_outside = {"o"};
  // Megatron's `mla_up_proj` discards q, k, v (up projections and rope) and reruns them
  b.tag(parts::kMlaUpProjTag, {"q_up", "kv_up", "rope_concat", "q", "k", "v"});
  b.tag(parts::kCoreAttnTag, {"lse", "flash_attention"});
  return b;
}

Block moe_shared_block(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "moe.shared";
  const double h = double(m.hidden_size), e = double(m.n_routed_experts);
  const double rows = moe_rows(r);
  parts::add_input_norm(b, r, h, /*gather=*/false);
  b.tensors.push_back({"router_scores", rows * e * kFp32});
  // a frozen router (LoRA) saves no input: only its weight's gradient reads it
  b.ops.push_back(parts::linear(b, r, "router", rows, h, e, "x_norm", {}));
  b.ops.push_back(ops::streaming("topk", 2 * rows * e * kFp32, 2 * rows * e * kFp32, {"router_scores"}));
  if (m.n_shared_experts > 0) {
    const double f = double(m.shared_mlp_width()) / double(r.tp);
    if (r.tp > 1) b.ops.push_back(parts::input_gather(r, h));
    if (m.mlp_kind == MlpKind::gated) {
      b.ops.push_back(parts::linear(b, r, "shared_gate_up", r.tokens(), h, 2 * f, "x_norm",
                                    {&LoraTargets::gate, &LoraTargets::up}));
      parts::add_swiglu(b, r.tokens(), f, "shared_", r.swiglu_fused, r.glu_linear_copy);
    } else {
      b.ops.push_back(parts::linear(b, r, "shared_up", r.tokens(), h, f, "x_norm", {&LoraTargets::up}));
      parts::add_activation(b, r.tokens(), f, "shared_");
    }
    b.ops.push_back(parts::linear(b, r, "shared_down", r.tokens(), f, h, "shared_act", {&LoraTargets::down}));
  }
  // `moe` checkpoints the whole MoE layer from the router on (its input, the normed hidden, stays)
  b.tag(parts::kMoeTag, {"router_scores", "router", "topk"});
  b.tag(parts::kMoeTag | parts::kSharedExpertsTag,
        {"gather_input", "allreduce_dinput", "shared_gate_up", "shared_gate", "shared_up", "shared_silu",
         "shared_up_copy", "shared_act", "shared_swiglu", "shared_mul", "shared_pre_act", "shared_act_fn",
         "shared_down"});
  return b;
}

Block moe_dispatch_glue(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "moe.dispatch";
  const double h = double(m.hidden_size), k = double(m.num_experts_per_tok), rows = moe_rows(r);
  b.tensors.push_back({"routing_map", rows * k * kFp32});  // int32 destination per copy
  b.ops.push_back(ops::streaming("permute", (1 + k) * rows * h * kBf16, (1 + k) * rows * h * kBf16, {"routing_map"}));
  if (r.ep > 1) {
    const double wire = double(r.ep - 1) / double(r.ep) * rows * k * h * kBf16;
    b.ops.push_back(ops::collective("all_to_all_dispatch", wire, wire, r.ep));
  }
  b.tag(parts::kMoeTag, {"routing_map", "permute", "all_to_all_dispatch"});
  return b;
}

Block moe_routed_block(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "moe.routed";
  const double h = double(m.hidden_size), f = double(m.moe_intermediate_size);
  const double rows = moe_rows(r) * double(m.num_experts_per_tok);  // K copies, balanced over ep
  const double local_experts = double(m.n_routed_experts / r.ep);
  // frozen experts (LoRA on other matrices) save no GEMM input: only the weights' gradients read them
  const std::vector<std::string> none;
  b.inputs = {"x_permuted"};
  b.inputs_saved = r.weights_train;
  b.tensors.push_back({"x_permuted", rows * h * kBf16});
  if (m.mlp_kind == MlpKind::gated) {
    b.ops.push_back(ops::gemm("experts_gate_up", rows, h, 2 * f, r.weights_train ? b.inputs : none, local_experts));
    parts::add_swiglu(b, rows, f, "experts_", r.swiglu_fused, r.glu_linear_copy);
  } else {  // Nemotron-H's experts: up, relu^2, down
    b.ops.push_back(ops::gemm("experts_up", rows, h, f, r.weights_train ? b.inputs : none, local_experts));
    parts::add_activation(b, rows, f, "experts_");
  }
  std::string down_input = "experts_act";
  if (r.glu_linear_copy) {  // Megatron-LM's unfused MLP weights the activation by the router probability
    // in fp32 and casts it back (mlp.py, per_token_scale): a new tensor, the down projection's input;
    // the multiply keeps the activation for the probabilities' gradient
    const double bytes = rows * f * kBf16;
    b.tensors.push_back({"experts_weighted", bytes});
    b.ops.push_back(ops::streaming("experts_probs_mul", 6 * bytes, 8 * bytes, {"experts_act"}));
    down_input = "experts_weighted";
  }
  const std::vector<std::string> down_saves = {down_input};
  b.ops.push_back(ops::gemm("experts_down", rows, f, h, r.weights_train ? down_saves : none, local_experts));
  if (r.moe_probs_scale_outputs) {
    // transformers' experts (grouped_mm and the per-expert loop alike): the outputs times their
    // routing weights, then summed into place; the multiply saves the outputs for the weights'
    // gradient
    b.tensors.push_back({"experts_out", rows * h * kBf16});
    b.ops.push_back(ops::streaming("experts_probs_out", 3 * rows * h * kBf16, 5 * rows * h * kBf16, {"experts_out"}));
  }
  b.tag(parts::kMoeTag, {"x_permuted", "experts_gate_up", "experts_gate", "experts_up", "experts_pre_act",
                         "experts_down", "experts_out", "experts_probs_out"});
  // `moe_act` discards the experts' activation output and reruns the activation
  b.tag(parts::kMoeTag | parts::kMoeActTag, {"experts_silu", "experts_up_copy", "experts_act", "experts_swiglu",
                                             "experts_mul", "experts_weighted", "experts_probs_mul", "experts_act_fn"});
  return b;
}

Block moe_combine_glue(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "moe.combine";
  const double h = double(m.hidden_size), k = double(m.num_experts_per_tok), rows = moe_rows(r);
  if (r.ep > 1) {
    const double wire = double(r.ep - 1) / double(r.ep) * rows * k * h * kBf16;
    b.ops.push_back(ops::collective("all_to_all_combine", wire, wire, r.ep));
  }
  // Router probabilities, one per routed copy. They weight each copy inside the
  // experts' activation (Megatron-LM's TEGroupedMLP: weighted_bias_swiglu_impl
  // with permuted_probs; remat-bench's SwiGLU with a per-row scale), whose
  // backward reads them: kept by every strategy. The unpermute then only sums
  // the K copies, so the expert outputs are not saved for the probability
  // gradient (it comes from the activation's inputs, which the routed block
  // keeps or recomputes).
  b.tensors.push_back({"probs", rows * k * kFp32});
  b.ops.push_back(ops::streaming("unpermute", (1 + k) * rows * h * kBf16, (1 + k) * rows * h * kBf16, {"probs"}));
  parts::add_output_norms(b, r, h, feedforward_output_norms(m));
  b.ops.push_back(parts::residual_add(r, h));
  b.tag(parts::kMoeTag, {"all_to_all_combine", "probs", "unpermute"});
  return b;
}

namespace {

void add_mixer(LayerDef& layer, const ModelSpec& m, const RankShape& r, int64_t layer_index) {
  auto add = [&layer](Block b, bool recomputable) {
    layer.blocks.push_back(std::move(b));
    layer.recomputable.push_back(recomputable);
  };
  switch (m.mixer(layer_index)) {
    case Mixer::attention:
      if (m.attention() == AttentionKind::mla) {
        add(mla_down_block(r, m), true);
        add(mla_up_attn_block(r, m), true);
      } else {
        add(gqa_block(r, m, m.layer_is_windowed(layer_index), m.layer_shares_kv(layer_index)), true);
      }
      add(attention_out_glue(r, m, m.layer_is_windowed(layer_index)), false);
      return;
    case Mixer::mamba2:
      add(mamba2_block(r, m), true);
      add(mixer_out_glue(r, m.hidden_size), false);
      return;
    case Mixer::gated_deltanet:
      add(gated_deltanet_block(r, m), true);
      add(mixer_out_glue(r, m.hidden_size), false);
      return;
    case Mixer::mamba1:
      add(mamba1_block(r, m), true);
      add(mixer_out_glue(r, m.hidden_size), false);
      return;
    case Mixer::short_conv:
      add(short_conv_block(r, m), true);
      add(mixer_out_glue(r, m.hidden_size), false);
      return;
    case Mixer::none:
      return;
  }
}

}  // namespace

LayerDef build_layer(const ModelSpec& m, const RankShape& rank, int64_t layer_index) {
  const RankShape r = with_model(rank, m);
  LayerDef layer;
  auto add = [&layer](Block b, bool recomputable) {
    layer.blocks.push_back(std::move(b));
    layer.recomputable.push_back(recomputable);
  };
  add_mixer(layer, m, r, layer_index);
  const bool ffn = m.has_ffn(layer_index);
  if (ffn && m.layer_is_moe(layer_index)) {
    add(moe_shared_block(r, m), true);
    add(moe_dispatch_glue(r, m), false);
    add(moe_routed_block(r, m), true);
    add(moe_combine_glue(r, m), false);
  } else if (ffn) {
    add(dense_mlp_block(r, m, m.mlp_width(layer_index)), true);
    add(mlp_out_glue(r, m), false);
  }
  if (m.per_layer_input_width > 0) add(per_layer_input_block(r, m), false);
  layer.input_bytes = r.seq_tokens() * double(m.hidden_size) * r.stream_bytes();
  layer.ordered_backward = r.ordered_backward;
  if (ffn && m.layer_is_moe(layer_index)) layer.local_experts = m.n_routed_experts / std::max<int64_t>(1, r.ep);
  return layer;
}

}  // namespace remat
