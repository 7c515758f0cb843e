// remat validate: the cost model's prediction of each remat-bench case.
#include "remat/validate/validate.hpp"

#include <algorithm>
#include <cmath>

#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/op_time.hpp"
#include "remat/cost/streambp.hpp"
#include "remat/spec/plan.hpp"
#include "remat/spec/problems.hpp"

namespace remat {

namespace {

// Dims each block needs, > 0 (keys as in src/cuda/README.md's dims).
std::vector<std::string> required_dims(const std::string& block) {
  if (block == "rmsnorm_linear") return {"hidden_size", "out_features"};
  if (block == "mlp") return {"hidden_size", "intermediate_size"};
  if (block == "gqa") return {"hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim"};
  if (block == "mla")
    return {"hidden_size",      "num_attention_heads", "q_lora_rank", "kv_lora_rank",
            "qk_nope_head_dim", "qk_rope_head_dim",    "v_head_dim"};
  if (block == "lm_head") return {"hidden_size", "vocab_size", "chunks"};
  if (block == "streambp_layer")
    return {"hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads", "head_dim", "chunks"};
  return {"hidden_size", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size"};
}

ModelSpec model_of(const MeasuredCase& m) {
  ModelSpec s;
  s.name = m.model;
  s.hidden_size = m.dim("hidden_size"), s.intermediate_size = m.dim("intermediate_size");
  s.num_attention_heads = m.dim("num_attention_heads"), s.num_key_value_heads = m.dim("num_key_value_heads");
  s.head_dim = m.dim("head_dim");
  s.n_routed_experts = m.dim("n_routed_experts"), s.num_experts_per_tok = m.dim("num_experts_per_tok");
  s.moe_intermediate_size = m.dim("moe_intermediate_size"), s.n_shared_experts = m.dim("n_shared_experts");
  s.q_lora_rank = m.dim("q_lora_rank"), s.kv_lora_rank = m.dim("kv_lora_rank");
  s.qk_nope_head_dim = m.dim("qk_nope_head_dim"), s.qk_rope_head_dim = m.dim("qk_rope_head_dim");
  s.v_head_dim = m.dim("v_head_dim");
  s.vocab_size = m.dim("vocab_size");
  return s;
}

// Ops of the exact blocks that remat-bench does not run (src/cuda/README.md:
// "Not modelled: RoPE's rotation ...", and no residual stream around a block).
bool backend_runs(const OpDef& op) { return op.name != "rope" && op.name != "residual_add"; }

struct CaseBlocks {
  std::vector<Block> blocks;
  std::vector<bool> recomputable;
};

CaseBlocks case_blocks(const BackendCase& c) {
  RankShape r;  // one GPU, b x s, causal flash attention, fused SwiGLU
  r.b = double(c.b), r.s = double(c.s);
  const ModelSpec& m = c.model;
  if (c.block == "rmsnorm_linear")
    return {{rmsnorm_linear_block(r, m.hidden_size, c.out_features, "rmsnorm_linear")}, {true}};
  if (c.block == "mlp") return {{mlp_block(r, m.hidden_size, m.intermediate_size)}, {true}};
  if (c.block == "gqa") return {{gqa_block(r, m), attention_out_glue(r, m)}, {true, false}};
  if (c.block == "mla")
    return {{mla_down_block(r, m), mla_up_attn_block(r, m), attention_out_glue(r, m)}, {true, true, false}};
  return {{moe_shared_block(r, m), moe_dispatch_glue(r, m), moe_routed_block(r, m), moe_combine_glue(r, m)},
          {true, false, true, false}};
}

BlockMode block_mode(const std::string& strategy) {
  if (strategy == "standard") return BlockMode::standard;
  if (strategy == "eagle") return BlockMode::eagle;
  if (strategy == "offload") return BlockMode::offload;
  return BlockMode::keep;
}

}  // namespace

BackendCase backend_case(const MeasuredCase& m, bool deterministic_attention, const std::string& file,
                         const std::string& key) {
  BackendCase c;
  c.block = m.block, c.strategy = m.strategy;
  c.model = model_of(m);
  c.out_features = m.dim("out_features");
  c.b = m.dim("b"), c.s = m.dim("s");
  c.chunks = std::max<int64_t>(m.dim("chunks"), 1);
  c.deterministic_attention = deterministic_attention;
  std::vector<Problem> problems;
  for (const auto& d : required_dims(m.block))
    if (m.dim(d) <= 0)
      problems.push_back({file, key + ".dims." + d, std::to_string(m.dim(d)), "must be > 0 for " + m.block});
  for (const char* d : {"b", "s"})
    if (m.dim(d) <= 0) problems.push_back({file, key + ".dims." + d, std::to_string(m.dim(d)), "must be > 0"});
  if (problems.empty() && is_streambp_block(m.block) && (m.dim("b") * m.dim("s")) % m.dim("chunks") != 0)
    problems.push_back({file, key + ".dims.chunks", std::to_string(m.dim("chunks")), "must divide b * s"});
  if ((m.block == "gqa" || m.block == "streambp_layer") && problems.empty() &&
      m.dim("num_attention_heads") % m.dim("num_key_value_heads") != 0)
    problems.push_back({file, key + ".dims.num_key_value_heads", std::to_string(m.dim("num_key_value_heads")),
                        "must divide num_attention_heads"});
  if (!problems.empty()) throw InputError(std::move(problems));
  return c;
}

namespace {

PhaseTimes predict(const BackendCase& c, const HardwareSpec& hw, const OpKind* only) {
  const CaseBlocks cb = case_blocks(c);
  const BlockMode mode = block_mode(c.strategy);
  auto counted = [&](const OpDef& op) { return backend_runs(op) && (!only || op.kind == *only); };
  PhaseTimes t;
  for (size_t i = 0; i < cb.blocks.size(); ++i) {
    const Block& blk = cb.blocks[i];
    for (const OpDef& op : blk.ops) {
      if (!counted(op)) continue;
      const OpTime ot = op_time(op, hw);
      t.forward_s += ot.fwd_s, t.backward_s += ot.bwd_s;
    }
    const BlockCost cost = block_cost(blk, cb.recomputable[i] ? mode : BlockMode::keep, /*early_stop=*/false);
    for (const OpDef* op : cost.recompute_ops)
      if (counted(*op)) t.recompute_s += op_time(*op, hw).fwd_s;
  }
  return t;
}

}  // namespace

PhaseTimes predict_times(const BackendCase& c, const HardwareSpec& hw) { return predict(c, hw, nullptr); }

bool is_streambp_block(const std::string& block) { return block == "lm_head" || block == "streambp_layer"; }

BackendMemory predict_streambp_memory(const BackendCase& c) {
  RankShape r;  // one GPU, b x s, causal flash attention
  r.b = double(c.b), r.s = double(c.s);
  BackendMemory out;
  if (c.block == "lm_head") {
    TrainingSpec t;  // SFT: bf16 logits, the loss's fp32 copy and fp32 gradient
    t.lm_head_chunks = c.chunks;
    const Block head = rmsnorm_linear_block(r, c.model.hidden_size, c.model.vocab_size, "lm_head");
    out.kept_bytes = saved_bytes(head);
    out.peak_bytes = head_peak_bytes(head, t, r.tokens() * double(c.model.vocab_size), ModelLogits::standard);
    return out;
  }
  const StreamBpBytes b = streambp_chunked_bytes(build_layer(c.model, r, 0), c.chunks);
  out.kept_bytes = b.kept;
  out.peak_bytes = b.kept + b.transient;
  return out;
}

PhaseTimes predict_times_of_kind(const BackendCase& c, const HardwareSpec& hw, OpKind kind) {
  return predict(c, hw, &kind);
}

double predict_offload_copy_s(const BackendCase& c, const HardwareSpec& hw) {
  // The backend copies every buffer `none` keeps, less those it leaves on the device.
  BackendCase none = c, offload = c;
  none.strategy = "none", offload.strategy = "offload";
  const double bytes = backend_memory(none).kept_bytes - backend_memory(offload).kept_bytes;
  return bytes / host_copy_bytes_per_s(hw);
}

double relative_error(double predicted, double measured) {
  if (measured == 0) return predicted == 0 ? 0 : 1;
  return (predicted - measured) / measured;
}

std::vector<CaseValidation> validate_cases(const Measurements& m, const HardwareSpec& hw, const std::string& file) {
  std::vector<CaseValidation> out;
  for (size_t i = 0; i < m.cases.size(); ++i) {
    const MeasuredCase& mc = m.cases[i];
    const BackendCase c = backend_case(mc, m.deterministic_attention, file, "cases[" + std::to_string(i) + "]");
    CaseValidation v;
    v.block = mc.block, v.strategy = mc.strategy, v.s = c.s, v.chunks = c.chunks;
    v.measured = {mc.forward_s, mc.backward_s, mc.recompute_s};
    v.measured_kept_bytes = double(mc.kept_bytes), v.measured_peak_bytes = double(mc.peak_bytes);
    if (is_streambp_block(mc.block)) {
      v.memory_only = true;
      v.memory = predict_streambp_memory(c);
      out.push_back(std::move(v));
      continue;
    }
    v.predicted = predict_times(c, hw);
    v.memory = backend_memory(c);
    if (mc.offload.present) {
      v.measured_d2h_s = mc.offload.d2h_s;
      v.predicted_d2h_s = predict_offload_copy_s(c, hw);
    }
    out.push_back(std::move(v));
  }
  return out;
}

ErrorSummary summarize(const std::vector<CaseValidation>& cases, const std::set<int64_t>& lengths) {
  ErrorSummary e;
  double fwd = 0, bwd = 0, rc = 0, total = 0, phases = 0, d2h = 0;
  int64_t n_rc = 0, n_phases = 0, n_d2h = 0;
  for (const auto& c : cases) {
    if (!lengths.empty() && !lengths.count(c.s)) continue;
    ++e.cases;
    e.max_kept_error = std::max(e.max_kept_error, std::abs(relative_error(c.memory.kept_bytes, c.measured_kept_bytes)));
    e.max_peak_error = std::max(e.max_peak_error, std::abs(relative_error(c.memory.peak_bytes, c.measured_peak_bytes)));
    if (c.memory_only) continue;
    ++e.timed_cases;
    const double ef = std::abs(relative_error(c.predicted.forward_s, c.measured.forward_s));
    const double eb = std::abs(relative_error(c.predicted.backward_s, c.measured.backward_s));
    fwd += ef, bwd += eb, phases += ef + eb, n_phases += 2;
    total += std::abs(relative_error(c.predicted.total_s(), c.measured.total_s()));
    if (c.measured.recompute_s > 0) {
      const double er = std::abs(relative_error(c.predicted.recompute_s, c.measured.recompute_s));
      rc += er, phases += er, ++n_rc, ++n_phases;
    }
    if (c.measured_d2h_s > 0) d2h += std::abs(relative_error(c.predicted_d2h_s, c.measured_d2h_s)), ++n_d2h;
  }
  if (e.timed_cases == 0) return e;
  e.mape_forward = fwd / double(e.timed_cases), e.mape_backward = bwd / double(e.timed_cases);
  e.mape_total = total / double(e.timed_cases);
  e.mape_recompute = n_rc ? rc / double(n_rc) : 0;
  e.mape_phases = phases / double(n_phases);
  e.mape_offload_d2h = n_d2h ? d2h / double(n_d2h) : 0;
  return e;
}

}  // namespace remat
