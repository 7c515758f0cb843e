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

// Keys each query attends to on average, as the FLOP counts take it: half the sequence under the
// causal mask; under DeepSeek sparse attention at most index_topk, so past s = k the first k
// queries read k / 2 and the others k each.
double keys_per_query(const RankShape& r, const ModelSpec& m) {
  const double s = r.s, k = m.sparse_attention() ? double(m.index_topk) : s;
  if (!r.causal) return std::min(s, k);
  if (s <= k) return s / 2;
  return (k * k / 2 + (s - k) * k) / s;
}

// DSA's lightning indexer as a training kernel runs it (generic, megatron-local): wq_b on the
// query latent, wk (with its LayerNorm) and weights_proj on the layer input, ReLU scores of every
// causal pair in index_n_heads heads, weighted and summed, and the top index_topk keys per query.
// Its backward (the indexer's own loss) reads q, k and the weights; the attention reads the indices.
void add_indexer_fused(Block& b, const RankShape& r, const ModelSpec& m) {
  const double rows = r.tokens(), heads = double(m.index_n_heads), dim = double(m.index_head_dim);
  const double h = double(m.hidden_size), s_causal = r.causal ? r.s / 2 : r.s;
  b.tensors.push_back({"index_q", rows * heads * dim * kBf16});
  b.tensors.push_back({"index_k", rows * dim * kBf16});
  b.tensors.push_back({"index_weights", rows * heads * kFp32});
  b.ops.push_back(ops::gemm("indexer_q", rows, double(m.q_lora_rank), heads * dim, {"q_latent_norm"}));
  // wk and weights_proj read x_norm, which the down projection already saves
  b.ops.push_back(ops::gemm("indexer_k_weights", rows, h, dim + heads, {}));
  OpDef scores = ops::gemm("indexer_scores", rows, s_causal, heads * dim, {"index_q", "index_k", "index_weights"});
  b.ops.push_back(scores);
  // the weighted head sum and the top-k pass over the fp32 index scores
  b.ops.push_back(ops::streaming("indexer_topk", 2 * rows * s_causal * kFp32, 0, {}));
}

// transformers 5.17's DeepseekV32Indexer.forward, under torch.no_grad (nothing saved, no backward):
// wq_b, wk, weights_proj in bf16; q.float() @ k.float() gives b s x heads x s fp32 scores; the softmax
// scale and the ReLU each write a new score tensor while the last is alive (measured:
// reports/hf/steps-dsa-h200.jsonl). With one sequence torch.matmul folds the broadcast k; with more it
// expands k to every query first, a b s x dim x s copy alive with the scores until the product ends
// (GLM-5.2's DPO pair at 12288 tokens asked for 144 GiB; at 2 x 4096 the trace holds that copy and
// one score tensor: steps-unseen12-dsa-batch-h200.jsonl, peak-traces-h200/unseen12). Autocast runs
// the product in bf16: the copy and the scores are bf16 then.
void add_indexer_transformers(Block& b, const RankShape& r, const ModelSpec& m) {
  const double rows = r.tokens(), heads = double(m.index_n_heads), dim = double(m.index_head_dim);
  const double h = double(m.hidden_size), pairs = r.b * r.s * r.s;
  const auto no_grad = [](OpDef op) {
    op.forward_only = true;
    op.saves.clear();
    op.bwd_flops = op.bwd_exec_flops = 0;
    op.bwd_bytes = 0;
    return op;
  };
  b.ops.push_back(no_grad(ops::gemm("indexer_q", rows, double(m.q_lora_rank), heads * dim, {})));
  b.ops.push_back(no_grad(ops::gemm("indexer_k_weights", rows, h, dim + heads, {})));
  // an fp32 GEMM (cuBLAS SIMT) over the whole square; its output's bytes where no fp32 rate is known
  const double score_bytes = r.autocast ? kBf16 : kFp32;
  OpDef scores = no_grad(ops::streaming("indexer_scores", pairs * heads * score_bytes, 0, {}));
  scores.fp32_adapter_flops = 2 * pairs * heads * dim;
  scores.gemm_flops_each = scores.fp32_adapter_flops;
  scores.fp32_compute_bound = !r.autocast;
  const double q_copies = 4 * rows * heads * dim * kBf16;  // wq_b's output, the rotated cat and its fp32 cast
  const double score_tensor = pairs * heads * score_bytes, k_per_query = r.b > 1 ? pairs * dim * score_bytes : 0;
  scores.working_bytes = q_copies + std::max(2 * score_tensor, score_tensor + k_per_query);
  scores.fwd_working_bytes = scores.working_bytes;
  b.ops.push_back(scores);
  // the scores scaled and ReLU'd (each read and written) and read by the head sum
  b.ops.push_back(no_grad(ops::streaming("indexer_score_passes", 5 * score_tensor, 0, {})));
  // the masked fp32 index scores, top-k, and the boolean masks built from the indices
  b.ops.push_back(no_grad(ops::streaming("indexer_topk", 2 * pairs * kFp32 + 4 * pairs, 0, {})));
}

}  // namespace

Block mla_down_block(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "mla.down";
  const double h = double(m.hidden_size), rows = r.tokens();
  parts::add_input_norm(b, r, h);
  if (r.lora_rank > 0) {
    // PEFT on transformers' DeepseekV3Attention: q_a_proj (q_proj without a query latent) and
    // kv_a_proj_with_mqa, two frozen nn.Linear on the normed input, each with its own adapter
    const bool q_latent = m.q_lora_rank > 0;
    const double q_width = mla_down_width(m) - double(m.kv_lora_rank + m.qk_rope_head_dim);
    b.ops.push_back(parts::linear(b, r, q_latent ? "q_a" : "q_proj", rows, h, q_width, "x_norm",
                                  {q_latent ? &LoraTargets::q_a : &LoraTargets::q}));
    b.ops.push_back(parts::linear(b, r, "kv_a", rows, h, double(m.kv_lora_rank + m.qk_rope_head_dim), "x_norm",
                                  {&LoraTargets::kv_a}));
    return b;
  }
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
  // transformers (DeepseekV3Attention.expand_kv): v is a view of kv_b_proj's output, so the saved
  // v keeps the whole projection, k_nope's half too (reports/hf/peak-traces-h200/dsa)
  const bool model_code = r.layouts_from_model_code;
  b.tensors.push_back({"v", rows * nh * (model_code ? d + dv : dv) * kBf16});
  b.tensors.push_back({"o", rows * nh * dv * kBf16});
  if (q_latent) {
    b.tensors.push_back({"q_latent", rows * hq * kBf16});
    b.tensors.push_back({"q_latent_norm", rows * hq * kBf16});
    b.tensors.push_back({"rstd_q", rows * kFp32});
    b.ops.push_back(ops::rmsnorm("q_norm", rows, hq, "q_latent", "rstd_q"));
    // q_b_proj and kv_b_proj under LoRA: frozen, each saving its input only for its own adapter
    b.ops.push_back(r.lora_rank > 0
                        ? parts::linear(b, r, "q_up", rows, hq, nh * (d + rope), "q_latent_norm", {&LoraTargets::q_b})
                        : ops::gemm("q_up", rows, hq, nh * (d + rope), {"q_latent_norm"}));
  }
  b.ops.push_back(ops::rmsnorm("kv_norm", rows, hkv, "kv_latent", "rstd_kv"));
  b.ops.push_back(r.lora_rank > 0
                      ? parts::linear(b, r, "kv_up", rows, hkv, nh * (d + dv), "kv_latent_norm", {&LoraTargets::kv_b})
                      : ops::gemm("kv_up", rows, hkv, nh * (d + dv), {"kv_latent_norm"}));
  // rope on the decoupled parts and assembly of per-head q, k (k_rope broadcast to heads)
  const double qk_bytes = rows * nh * (d + rope) * kBf16;
  b.ops.push_back(ops::streaming("rope_concat", 4 * qk_bytes, 4 * qk_bytes, {}));
  // QK^T with head dim d + r, PV with dv, over the keys each query reads (half under the causal mask)
  const bool dsa = m.sparse_attention();
  const bool dsa_masked = dsa && r.layouts_from_model_code;  // transformers: a dense s x s mask from the top-k
  if (dsa) (dsa_masked ? add_indexer_transformers : add_indexer_fused)(b, r, m);
  const double keys = dsa_masked ? r.s : keys_per_query(r, m);
  const double fwd = 2 * rows * keys * nh * (d + rope) + 2 * rows * keys * nh * dv;
  // transformers' eager path (--attention eager) materializes the scores as a dense layer's does, with
  // DSA's top-k mask added to them (not saved: GLM-5.1's eager reentrant step, peak-traces-h200/
  // random-blind); Megatron's MLA runs are priced with the flash kernel, as measured (reports/megatron)
  const bool eager = !r.flash_attention && model_code;
  if (eager) {
    parts::add_eager_attention(b, r, m, nh, d + rope, dv, fwd, "k", "v");
  } else {
    b.tensors.push_back({"lse", r.b * nh * r.s * kFp32});
    b.ops.push_back(ops::attention("flash_attention", fwd, r.s, d + rope, {"q", "k", "v", "o", "lse"}));
    b.attention_stats = {"lse"};
  }
  if (dsa_masked && !eager) {
    // sdpa turns the boolean mask into a bf16 bias, which its kernel saves per layer; under a mask
    // cuDNN's flash kernel skips no tiles and runs at about half its causal rate (reports/hf/
    // masked-sdpa-h200.jsonl, examples/hf/probes/masked_sdpa_probe.py)
    b.tensors.push_back(parts::mask_tensor("dsa_mask", r.b * r.s * r.s * kBf16));
    b.ops.back().saves.push_back("dsa_mask");
    b.ops.back().dense_mask = true;
  } else if (dsa && !dsa_masked) {
    b.tensors.push_back({"index_topk", rows * std::min(r.s, double(m.index_topk)) * 4});  // int32 indices
    b.ops.back().saves.push_back("index_topk");
  }
  if (model_code) {
    // sdpa_attention_forward's transpose(1, 2).contiguous() copies the kernel's output here (the
    // traces: a second s x heads x v_head_dim tensor per layer), and o_proj saves the copy
    const double bytes = rows * nh * dv * kBf16;
    b.tensors.push_back({"o_contiguous", bytes});
    b.ops.push_back(ops::streaming("o_copy", 2 * bytes, 2 * bytes, {}));
  }
  b.kept_outside = {model_code ? "o_contiguous" : "o"};
  if (model_code && !parts::saves_input(r, r.lora.o)) b.kept_outside.clear();
  // Megatron's `mla_up_proj` discards q, k, v (up projections and rope) and reruns them
  b.tag(parts::kMlaUpProjTag, {"q_up", "kv_up", "rope_concat", "q", "k", "v"});
  b.tag(parts::kCoreAttnTag, {"lse", "flash_attention", "probs", "probs32", "attention"});
  return b;
}

namespace {

// The shared experts on the normed input (moe_shared_block, or their own block).
void add_shared_experts(Block& b, const RankShape& r, const ModelSpec& m) {
  const double h = double(m.hidden_size), f = double(m.shared_mlp_width()) / double(r.tp);
  if (r.tp > 1) b.ops.push_back(parts::input_gather(r, h));
  if (m.mlp_kind == MlpKind::gated) {
    b.ops.push_back(
        parts::linear(b, r, "shared_gate_up", r.tokens(), h, 2 * f, "x_norm", {&LoraTargets::gate, &LoraTargets::up}));
    parts::add_swiglu(b, r.tokens(), f, "shared_", r.swiglu_fused, r.glu_linear_copy,
                      r.layouts_from_model_code && m.clamped_swiglu);
  } else {
    b.ops.push_back(parts::linear(b, r, "shared_up", r.tokens(), h, f, "x_norm", {&LoraTargets::up}));
    parts::add_activation(b, r.tokens(), f, "shared_");
  }
  b.ops.push_back(parts::linear(b, r, "shared_down", r.tokens(), f, h, "shared_act", {&LoraTargets::down}));
  // Qwen2-MoE's sigmoid gate on the shared expert's output, an nn.Linear of h x 1 on the MoE's input:
  // its output is negligible, but an adapter on it casts and saves that input as the others do
  if (m.shared_expert_gate && r.layouts_from_model_code)
    b.ops.push_back(
        parts::linear(b, r, "shared_expert_gate", r.tokens(), h, 1, "x_norm", {&LoraTargets::shared_expert_gate}));
}

}  // namespace

bool shared_experts_own_block(const RankShape& r, const ModelSpec& m) {
  return r.layouts_from_model_code && m.shared_experts_after_routed();
}

Block moe_shared_experts_block(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "moe.shared_experts";
  b.inputs = {"x_norm"};
  b.inputs_saved = false;
  b.tensors.push_back({"x_norm", r.tokens() * double(m.hidden_size) * kBf16});  // its one reader's copy
  add_shared_experts(b, r, m);
  b.branch_grad_bytes = r.tokens() * double(m.hidden_size) * r.stream_bytes();
  return b;
}

Block moe_shared_block(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "moe.shared";
  const double h = double(m.hidden_size), e = double(m.n_routed_experts);
  const double rows = moe_rows(r);
  parts::add_input_norm(b, r, h, /*gather=*/false);
  b.tensors.push_back({"router_scores", rows * e * kFp32});
  if (r.layouts_from_model_code && m.router_input_jitter) {
    // transformers' PhiMoE applies its input jitter twice in training: PhimoeSparseMoeBlock.forward
    // multiplies hidden_states in place by uniform noise, then PhimoeTopKRouter.forward multiplies
    // the same tensor by a second noise tensor; each product saves its noise for the gradient
    // (peak-traces-h200/random-blind56/rb56-26-phi-3.5-moe-...: two 192 MiB tensors a layer at
    // 24576 x 4096, beside the two residual sums)
    const double bytes = rows * h * r.stream_bytes();
    for (const char* noise : {"moe_input_jitter", "router_jitter"}) {
      b.tensors.push_back({noise, bytes});
      b.ops.push_back(ops::streaming(noise, 3 * bytes, 2 * bytes, {noise}));
    }
  }
  // a frozen router (LoRA) saves no input: only its weight's gradient reads it
  if (r.layouts_from_model_code && m.router_fp32_input) {
    // transformers' DeepseekV3TopkRouter: F.linear on hidden_states.type(torch.float32), which the
    // linear saves for its weight's gradient (reports/hf/peak-traces-h200/dsa)
    b.tensors.push_back({"router_x_fp32", rows * h * kFp32});
    b.ops.push_back(parts::linear(b, r, "router", rows, h, e, "router_x_fp32", {&LoraTargets::router}));
  } else {
    b.ops.push_back(parts::linear(b, r, "router", rows, h, e, "x_norm", {&LoraTargets::router}));
  }
  b.ops.push_back(ops::streaming("topk", 2 * rows * e * kFp32, 2 * rows * e * kFp32, {"router_scores"}));
  // a latent MoE's projection down to the experts' width (NemotronHMoE.fc1_latent_proj): it reads
  // the normed hidden state the router reads; the experts keep their own copies of its output
  if (m.moe_latent_size > 0)
    b.ops.push_back(parts::linear(b, r, "latent_down", rows, h, double(m.moe_latent_size), "x_norm", {}));
  // Qwen2-MoE's block builds its gated shared expert at any width, zero included (whose adapters
  // still cast and save their input)
  if ((m.n_shared_experts > 0 || m.shared_expert_gate) && !shared_experts_own_block(r, m)) add_shared_experts(b, r, m);
  // `moe` checkpoints the whole MoE layer from the router on (its input, the normed hidden, stays)
  b.tag(parts::kMoeTag, {"router_scores", "router", "topk", "latent_down"});
  b.tag(parts::kMoeTag | parts::kSharedExpertsTag,
        {"gather_input", "allreduce_dinput", "shared_gate_up", "shared_gate", "shared_up", "shared_silu",
         "shared_up_copy", "shared_act", "shared_swiglu", "shared_gate_clamped", "shared_up_clamped", "shared_clamps",
         "shared_mul", "shared_pre_act", "shared_act_fn", "shared_down"});
  return b;
}

// Llama 4 as transformers runs it (ModelSpec::experts_run_all_tokens): no permutation, the routed
// block repeats the tokens for every expert and the combine sums the experts' outputs.
namespace {
bool experts_all_tokens(const RankShape& r, const ModelSpec& m) {
  return r.layouts_from_model_code && m.experts_run_all_tokens;
}
}  // namespace

Block moe_dispatch_glue(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "moe.dispatch";
  if (experts_all_tokens(r, m)) return b;
  const double h = double(m.expert_io_width()), k = double(m.num_experts_per_tok), rows = moe_rows(r);
  b.tensors.push_back({"routing_map", rows * k * kFp32});  // int32 destination per copy
  b.ops.push_back(ops::streaming("permute", (1 + k) * rows * h * kBf16, (1 + k) * rows * h * kBf16, {"routing_map"}));
  if (r.ep > 1) {
    const double wire = double(r.ep - 1) / double(r.ep) * rows * k * h * kBf16;
    b.ops.push_back(ops::collective("all_to_all_dispatch", wire, wire, r.ep));
  }
  b.tag(parts::kMoeTag, {"routing_map", "permute", "all_to_all_dispatch"});
  return b;
}

namespace {

// One GEMM over every local expert's weights, whose gradient its backward allocates whole (the
// experts' stacked parameter) where gradients appear in backward (RankShape::weight_grad_bytes).
// Frozen and unadapted (LoRA elsewhere), its backward computes the input's gradient only.
OpDef expert_gemm(const RankShape& r, const char* name, double rows, double in, double out,
                  const std::vector<std::string>& saves, double experts, bool adapted = false) {
  OpDef op = ops::gemm(name, rows, in, out, saves, experts);
  op.weight_grad_bytes = r.weight_grad_bytes * in * out * experts;
  if (!r.weights_train && !adapted) op.bwd_flops = op.bwd_exec_flops = op.fwd_flops;
  return op;
}

// PEFT's ParamWrapper on a stacked expert weight (tuners/lora/layer.py, _LoraFactorsProxy): each
// forward folds W + scaling (B A) into a new tensor of W's size and dtype with one baddbmm, which
// saves the two factors cast to W's dtype; the experts' GEMM saves the folded weight and, since it
// now needs a weight gradient, its input. Backward, that GEMM writes the folded weight's whole
// gradient, which the baddbmm's backward reads twice (once per factor).
void add_expert_adapter(Block& b, const RankShape& r, const std::string& gemm, double in, double out, double experts,
                        double rank, double element) {
  const double weight_bytes = in * out * experts * element;  // the weight's dtype
  // working copies 0: their backward's working set is stated (adapted_experts_working_bytes)
  b.tensors.push_back({gemm + ".lora_weight", weight_bytes, 0, 0, 0, 0});
  // the factors cast to the weight's dtype: copies where the adapters' differs (fp32 on a bf16 weight)
  const double factor_bytes = r.lora_bytes != element ? rank * experts * (in + out) * element : 0;
  b.tensors.push_back({gemm + ".lora_factors", factor_bytes, 0, 0, 0, 0});
  b.ops.push_back(ops::streaming(gemm + ".lora_fold", 2 * weight_bytes, 2 * weight_bytes, {gemm + ".lora_factors"}));
}

// The routed block's backward working set beyond its saved tensors, with adapted experts. The down
// GEMM's backward holds its output's and input's gradients and its folded weight's; gate_up's, the
// last, runs when only what the ops up to it saved is left (its input, folded weight and factors;
// Llama 4's repeated tokens). At least what the ops before it hold (the ops after it, the routing
// weights' product, state their own). `rows` count bf16 elements (twice the rows of an fp32 run),
// `element` the weights' bytes.
double adapted_experts_working_bytes(const Block& b, size_t down_op, const RankShape& r, double rows, double h,
                                     double f, double experts, double element, bool input_saved) {
  double others = 0;
  for (size_t i = 0; i < down_op; ++i) others = std::max(others, b.ops[i].working_bytes);
  const double down_weight = r.lora_experts_down_rank > 0 ? f * h * experts * element : 0;
  const double gate_up_weight = r.lora_experts_gate_up_rank > 0 ? 2 * f * h * experts * element : 0;
  const double down = rows * (h + f) * kBf16 + down_weight;
  double left = b.tensor_bytes("experts_gate_up.lora_weight") + b.tensor_bytes("experts_gate_up.lora_factors") +
                b.tensor_bytes("x_repeated") + b.tensor_bytes("score_column");
  if (input_saved) left += b.tensor_bytes("x_permuted");
  const double gate_up = left + rows * (2 * f + h) * kBf16 + gate_up_weight - saved_bytes(b);
  return std::max({others, down, gate_up});
}

// grouped_mm_experts_forward (transformers/integrations/moe.py) under a DeepSeek-V3 router, whose
// top-k weights stay fp32: the outputs times the weights is an fp32 product, permuted back by an
// indexed copy, both alive until the sum over the top-k; backward holds three fp32 routed-rows x
// hidden tensors (the index's scattered gradient, its products with the weights and with the
// outputs) beside the scattered gradient in the outputs' dtype (DeepSeek-V3's and EXAONE-MoE's LoRA
// steps without checkpointing; Kimi-K2.6's under attention adapters, its experts frozen: three 2688 MiB
// fp32 blocks and a 1344 MiB bf16 one at its peak, -2.85% while that one was left out,
// peak-traces-h200/random-blind25-followup; the product alone 3.4 fp32 rows, weighting-probe-h200.jsonl).
// A non-reentrant checkpoint's backward does not hold the bf16 one (GLM-4.5's GRPO at 49k tokens,
// DeepSeek-V2-Lite's at 32k: peak-traces-h200/unseen11, unseen12; with adapted experts, DeepSeek-V3's
// bf16 LoRA step at 16k: peak-traces-h200/unseen17).
void weigh_in_fp32(OpDef& op, double rows, double h, double element) {
  const double fp32_rows = rows * h * kFp32, cast = element < kFp32 ? rows * h * element : 0;
  op.fwd_working_bytes = 2 * fp32_rows;
  op.working_bytes = 3 * fp32_rows + cast;
  op.early_stop_released_bytes = cast;
}

}  // namespace

Block moe_routed_block(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "moe.routed";
  const double h = double(m.expert_io_width()), f = double(m.moe_intermediate_size);
  const double local_experts = double(m.n_routed_experts / r.ep);
  const bool all_tokens = experts_all_tokens(r, m);
  // K copies, balanced over ep; or every token once per expert
  const double rows = moe_rows(r) * (all_tokens ? local_experts : double(m.num_experts_per_tok));
  // under autocast (fp32 parameters) transformers' grouped_mm experts run in fp32: their tensors are
  // twice a bf16 run's (`wide` rows of bf16 bytes), their weights uncast (measured: olmoe's mixed
  // steps in steps-unseen8-modes-h200.jsonl, reports/hf/peak-traces-h200/unseen8)
  const double element = r.autocast && r.layouts_from_model_code && m.experts_grouped_mm() ? kFp32 : kBf16;
  const double wide = rows * element / kBf16;
  // frozen experts (LoRA on other matrices) save no GEMM input: only the weights' gradients read them
  const std::vector<std::string> none;
  const bool gate_up_adapted = m.mlp_kind == MlpKind::gated && r.lora_experts_gate_up_rank > 0;
  const bool down_adapted = r.lora_experts_down_rank > 0;
  const std::vector<std::string> gemm_input = {"x_permuted"};
  b.inputs = gemm_input;
  b.inputs_saved = r.weights_train || gate_up_adapted;
  b.tensors.push_back({"x_permuted", wide * h * kBf16});
  if (all_tokens) {
    // Llama4TextMoe: hidden.repeat(experts, 1) * scores: the product (x_permuted, the experts' input)
    // saves the repeated tokens and the score column for the scores' gradient
    b.tensors.push_back({"x_repeated", rows * h * r.stream_bytes()});  // the residual stream's dtype
    b.tensors.push_back({"score_column", rows * kBf16});
    b.inputs = {};
    b.ops.push_back(ops::streaming("experts_repeat", (1 / local_experts + 1) * rows * h * kBf16, 0, {}));
    b.ops.push_back(
        ops::streaming("experts_scale", 3 * rows * h * kBf16, 4 * rows * h * kBf16, {"x_repeated", "score_column"}));
  }
  if (m.mlp_kind == MlpKind::gated) {
    std::vector<std::string> saves = r.weights_train || gate_up_adapted ? gemm_input : none;
    if (gate_up_adapted) {
      add_expert_adapter(b, r, "experts_gate_up", h, 2 * f, local_experts, r.lora_experts_gate_up_rank, element);
      saves.push_back("experts_gate_up.lora_weight");
    }
    b.ops.push_back(expert_gemm(r, "experts_gate_up", rows, h, 2 * f, saves, local_experts, gate_up_adapted));
    parts::add_swiglu(b, wide, f, "experts_", r.swiglu_fused, r.glu_linear_copy,
                      r.layouts_from_model_code && m.clamped_swiglu);
    if (r.layouts_from_model_code && m.clamped_glu_experts) {
      // GPT-OSS (modeling_gpt_oss.py, _apply_gate): the clamps save gate_up's strided views (gate and
      // up above), and the clamped gate, the glu and up + 1 are new tensors its products save
      const double bytes = wide * f * kBf16;
      for (const char* name : {"experts_gate_clamped", "experts_glu", "experts_up_plus_one"})
        b.tensors.push_back({name, bytes});
      b.ops.push_back(ops::streaming("experts_clamps", 6 * bytes, 10 * bytes,
                                     {"experts_gate_clamped", "experts_glu", "experts_up_plus_one"}));
    }
  } else {  // Nemotron-H's experts: up, relu^2, down
    b.ops.push_back(expert_gemm(r, "experts_up", rows, h, f, r.weights_train ? gemm_input : none, local_experts));
    parts::add_activation(b, wide, f, "experts_");
  }
  std::string down_input = "experts_act";
  if (r.glu_linear_copy) {  // Megatron-LM's unfused MLP weights the activation by the router probability
    // in fp32 and casts it back (mlp.py, per_token_scale): a new tensor, the down projection's input;
    // the multiply keeps the activation for the probabilities' gradient
    const double bytes = wide * f * kBf16;
    b.tensors.push_back({"experts_weighted", bytes});
    b.ops.push_back(ops::streaming("experts_probs_mul", 6 * bytes, 8 * bytes, {"experts_act"}));
    down_input = "experts_weighted";
  }
  std::vector<std::string> down_saves = r.weights_train || down_adapted ? std::vector{down_input} : none;
  if (down_adapted) {
    add_expert_adapter(b, r, "experts_down", f, h, local_experts, r.lora_experts_down_rank, element);
    down_saves.push_back("experts_down.lora_weight");
  }
  b.ops.push_back(expert_gemm(r, "experts_down", rows, f, h, down_saves, local_experts, down_adapted));
  const size_t down_op = b.ops.size() - 1;
  if (r.moe_probs_scale_outputs && !all_tokens) {
    // transformers' experts (grouped_mm and the per-expert loop alike): the outputs times their
    // routing weights, then summed into place; the multiply saves the outputs for the weights'
    // gradient
    b.tensors.push_back({"experts_out", wide * h * kBf16});
    b.ops.push_back(ops::streaming("experts_probs_out", 3 * wide * h * kBf16, 5 * wide * h * kBf16, {"experts_out"}));
    // the outputs are saved for the routing weights' gradient alone, and its backward computes
    // their product with the outputs' gradient: neither where the router's input is frozen
    // (Qwen3.6-35B-A3B's first layer under expert adapters, GRPO 4 x 4096: no routed outputs alive
    // at its peak, +2.92% while they were counted, peak-traces-h200/random-blind44)
    const bool fp32_weights = r.layouts_from_model_code && m.router_fp32_input && m.experts_grouped_mm();
    const bool stated_working = r.layouts_from_model_code && m.experts_grouped_mm();
    const double weights_grad = !stated_working ? 0 : fp32_weights ? rows * h * kFp32 : wide * h * kBf16;
    b.ops.back().saved_for_gates = {{"experts_out", {"router"}, weights_grad}};
    if (fp32_weights)
      weigh_in_fp32(b.ops.back(), rows, h, element);
    else if (stated_working)
      // routing weights in the outputs' dtype: the product's backward holds the index's scattered
      // gradient, its product with the weights and the one with the outputs (summed to the weights'
      // gradient after), with every tensor the block saved still alive (Granite-3.1-1B-A400M's
      // non-reentrant GRPO at 4 x 3000: three routed-rows x hidden gradients beside the saved
      // outputs, -4.49% while the set was placed at the gate_up GEMM's backward,
      // steps-random-blind25-h200.jsonl)
      b.ops.back().working_bytes = 3 * wide * h * kBf16;
    if (r.layouts_from_model_code && m.experts_python_loop) {
      // the loop's weighted outputs (fp32 under fp32 routing weights), cast back to bf16 and summed
      // into place by index_add_, which saves the cast copy for its gradient
      b.tensors.push_back({"experts_summed", rows * h * kBf16});
      b.ops.push_back(ops::streaming("experts_index_add", 8 * rows * h, 2 * rows * h * kBf16, {"experts_summed"}));
    }
  }
  if (gate_up_adapted || down_adapted)
    b.ops[down_op].working_bytes = adapted_experts_working_bytes(b, down_op, r, wide, h, f, local_experts, element,
                                                                 r.weights_train || gate_up_adapted);
  b.tag(parts::kMoeTag, {"x_permuted", "experts_gate_up", "experts_gate", "experts_up", "experts_pre_act",
                         "experts_down", "experts_out", "experts_probs_out", "experts_summed", "experts_index_add"});
  // `moe_act` discards the experts' activation output and reruns the activation
  b.tag(parts::kMoeTag | parts::kMoeActTag,
        {"experts_silu", "experts_up_copy", "experts_act", "experts_swiglu", "experts_gate_clamped",
         "experts_up_clamped", "experts_clamps", "experts_glu", "experts_up_plus_one", "experts_clamps", "experts_mul",
         "experts_weighted", "experts_probs_mul", "experts_act_fn"});
  return b;
}

Block moe_combine_glue(const RankShape& r, const ModelSpec& m) {
  Block b;
  b.name = "moe.combine";
  const double io = double(m.expert_io_width()), k = double(m.num_experts_per_tok), rows = moe_rows(r);
  if (experts_all_tokens(r, m)) {
    // routed_out.reshape(experts, -1, h).sum(dim=0), added in place to the shared expert's output
    const double experts = double(m.n_routed_experts / r.ep);
    b.ops.push_back(
        ops::streaming("experts_sum", (experts + 1) * rows * io * kBf16, (experts + 1) * rows * io * kBf16, {}));
    parts::add_output_norms(b, r, double(m.hidden_size), feedforward_output_norms(m));
    b.ops.push_back(parts::residual_add(r, double(m.hidden_size)));
    return b;
  }
  if (r.ep > 1) {
    const double wire = double(r.ep - 1) / double(r.ep) * rows * k * io * kBf16;
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
  b.ops.push_back(ops::streaming("unpermute", (1 + k) * rows * io * kBf16, (1 + k) * rows * io * kBf16, {"probs"}));
  const double h = double(m.hidden_size);
  if (m.moe_latent_size > 0) {
    // the projection back up (fc2_latent_proj) saves the summed experts' output, its input
    b.tensors.push_back({"latent_combined", rows * io * kBf16});
    b.ops.push_back(parts::linear(b, r, "latent_up", rows, io, h, "latent_combined", {}));
  }
  parts::add_output_norms(b, r, h, feedforward_output_norms(m));
  b.ops.push_back(parts::residual_add(r, h));
  b.tag(parts::kMoeTag, {"all_to_all_combine", "probs", "unpermute", "latent_combined", "latent_up"});
  return b;
}

namespace {

// Llama 4's Llama4TextL2Norm on q and k of its rotary layers (modeling_llama4.py): x.float() times
// rsqrt(mean(x^2) + eps), cast back; the product saves the fp32 copy and 1/rms per head and row.
// Its forward reads bf16 and writes fp32, reads that and writes bf16 (12 bytes per element); its
// backward about as much again.
void add_qk_l2_norm(Block& b, const RankShape& r, const AttentionShape& a) {
  const double rows = r.tokens(), heads = double((a.heads + (a.shares_kv ? 0 : a.kv_heads)) / r.tp);
  const double elems = rows * heads * double(a.head_dim);
  b.tensors.push_back({"qk_l2_fp32", elems * kFp32});
  b.tensors.push_back({"qk_l2_rstd", rows * heads * kFp32});
  OpDef norm = ops::streaming("qk_l2_norm", 12 * elems, 12 * elems, {"qk_l2_fp32", "qk_l2_rstd"});
  // before the attention kernel, as the model runs it (an early-stop replay ends at that kernel)
  auto at = std::find_if(b.ops.begin(), b.ops.end(), [](const OpDef& op) { return op.kind == OpKind::attention; });
  b.ops.insert(at, std::move(norm));
}

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
        Block attention = gqa_block(r, m, m.layer_is_windowed(layer_index), m.layer_shares_kv(layer_index));
        if (r.layouts_from_model_code && m.qk_l2_norm && !m.layer_is_nope(layer_index))
          add_qk_l2_norm(attention, r, m.attention_shape_of(m.layer_is_windowed(layer_index)));
        add(std::move(attention), true);
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
    case Mixer::lightning:
      add(lightning_block(r, m), true);
      add(mixer_out_glue(r, m.hidden_size), false);
      return;
    case Mixer::compressed_attention:
      add(compressed_attention_block(r, m, m.compressed_layer(layer_index)), true);
      add(hyper_connection_out_glue(r, m, "attn.out"), false);
      return;
    case Mixer::attention_mamba2:
      add(attention_mamba2_block(r, m), true);
      add(attention_mamba2_glue(r, m), false);
      return;
    case Mixer::none:
      return;
  }
}

// Post-norms only (ModelSpec::post_norms_only, transformers' Olmo2DecoderLayer): each branch's linears
// read the residual stream, and its norm runs on the branch's output, before the residual add, so its
// backward runs first in the branch (its fp32 input freed before the branch's own backward). In bf16
// the linears save the stream itself; under autocast each saves its bf16 cast of it, as before.
void drop_input_norm(Block& b, const RankShape& r) {
  const auto norm = std::find_if(b.ops.begin(), b.ops.end(), [](const OpDef& op) { return op.name == "rmsnorm"; });
  if (norm == b.ops.end()) return;
  b.ops.erase(norm);
  const bool stream_saved = !r.autocast;
  std::erase_if(b.tensors, [&](const TensorDef& t) {
    return t.name == "x32" || t.name == "x_normed" || t.name == "rstd" || (stream_saved && t.name == "x_norm");
  });
  if (!stream_saved) return;
  bool saved = false;
  for (OpDef& op : b.ops) {
    std::replace(op.saves.begin(), op.saves.end(), std::string("x_norm"), std::string("x"));
    if (op.input_held == "x_norm") op.input_held = "x";
    saved = saved || std::find(op.saves.begin(), op.saves.end(), "x") != op.saves.end();
  }
  b.inputs_saved = saved;
}

void add_output_norm(Block& b, const RankShape& r, double hidden) {
  Block norm;
  parts::add_output_norms(norm, r, hidden, 1);
  b.tensors.insert(b.tensors.end(), norm.tensors.begin(), norm.tensors.end());
  const bool ends_with_add = !b.ops.empty() && b.ops.back().name == "residual_add";
  b.ops.insert(ends_with_add ? b.ops.end() - 1 : b.ops.end(), norm.ops.begin(), norm.ops.end());
}

void move_norms_to_outputs(LayerDef& layer, const RankShape& r, double hidden) {
  for (Block& b : layer.blocks) {
    drop_input_norm(b, r);
    if (b.name == "attn.out" || b.name == "mlp.out" || b.name == "moe.combine") add_output_norm(b, r, hidden);
  }
}

}  // namespace

LayerDef build_layer(const ModelSpec& model, const RankShape& rank, int64_t layer_index) {
  // a layer variant's own key/value heads reach the attention blocks through the model they read
  const int64_t own_kv_heads = model.layer_variant_of(layer_index).kv_heads;
  ModelSpec with_own_heads;
  if (own_kv_heads > 0) with_own_heads = model, with_own_heads.num_key_value_heads = own_kv_heads;
  const ModelSpec& m = own_kv_heads > 0 ? with_own_heads : model;
  const RankShape r = with_model(rank, m);
  LayerDef layer;
  auto add = [&layer](Block b, bool recomputable) {
    layer.blocks.push_back(std::move(b));
    layer.recomputable.push_back(recomputable);
  };
  add_mixer(layer, m, r, layer_index);
  const bool ffn = m.has_ffn(layer_index);
  const bool hyper_connections = m.hyper_connections > 0;
  if (ffn && hyper_connections) add(hyper_connection_block(r, m), false);
  if (ffn && m.layer_is_moe(layer_index)) {
    Block shared = moe_shared_block(r, m);
    if (m.parallel_attn_mlp) parts::share_with_attention(shared, m.shared_input_norm);  // Cohere2-MoE
    add(std::move(shared), true);
    add(moe_dispatch_glue(r, m), false);
    add(moe_routed_block(r, m), true);
    if (shared_experts_own_block(r, m)) add(moe_shared_experts_block(r, m), false);
    add(moe_combine_glue(r, m), false);
  } else if (ffn) {
    add(dense_mlp_block(r, m, m.mlp_width(layer_index)), true);
    add(mlp_out_glue(r, m), false);
  }
  if (ffn && hyper_connections) add(hyper_connection_out_glue(r, m, "hc.ffn.out"), false);
  if (m.per_layer_input_width > 0) add(per_layer_input_block(r, m), false);
  if (m.post_norms_only && r.layouts_from_model_code) move_norms_to_outputs(layer, r, double(m.hidden_size));
  layer.input_bytes = r.seq_tokens() * double(m.hidden_size) * m.residual_streams() * r.stream_bytes();
  layer.ordered_backward = r.ordered_backward;
  layer.parallel_branches = m.parallel_attn_mlp;
  layer.pytorch_autograd = r.layouts_from_model_code;
  if (r.autocast) layer.branch_grad_cast_bytes = r.seq_tokens() * double(m.hidden_size) * kBf16;
  if (ffn && m.layer_is_moe(layer_index)) layer.local_experts = m.n_routed_experts / std::max<int64_t>(1, r.ep);
  return layer;
}

}  // namespace remat
