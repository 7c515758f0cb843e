#include "remat/cost/estimate.hpp"

#include <algorithm>

#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/layer_cost.hpp"
#include "remat/cost/op_time.hpp"
#include "remat/cost/params.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

double default_budget_bytes(const HardwareSpec& hw) { return hw.hbm_bytes - hw.memory_reserve_bytes; }

namespace {

// The layer shapes of a model: dense and MoE layers differ, nothing else does.
struct LayerShapes {
  LayerDef dense, moe;
  const LayerDef& at(const ModelSpec& m, int64_t i) const { return m.layer_is_moe(i) ? moe : dense; }
};

LayerShapes build_shapes(const ModelSpec& m, const RankShape& r) {
  ModelSpec dense_only = m;
  dense_only.n_routed_experts = 0;
  LayerShapes s;
  s.dense = build_layer(dense_only, r, 0);
  s.moe = s.dense;
  for (int64_t i = 0; i < m.num_hidden_layers + m.first_k_dense_replace + m.moe_layer_freq; ++i)
    if (m.layer_is_moe(i)) {
      s.moe = build_layer(m, r, i);
      break;
    }
  return s;
}

int64_t per_stage_value(const std::vector<int64_t>& v, size_t stage, int64_t fallback) {
  if (v.empty()) return fallback;
  return v.size() == 1 ? v[0] : v[stage];
}

LayerChoice choose(const Plan& plan, const LayerDef& layer, int64_t global, int64_t local, int64_t r, int64_t o) {
  if (auto it = plan.layer_overrides.find(global); it != plan.layer_overrides.end()) return it->second;
  if (local < r) return choice_for(plan.strategy, layer);
  if (local < r + o) return offload_choice(layer);
  return choice_for(Strategy::none, layer);
}

// The LM head and loss on the last stage: final norm + vocab-parallel linear,
// the logits, the loss's fp32 copy and the logits' gradient. They live only
// around the loss, one microbatch at a time.
struct HeadCost {
  double transient_bytes = 0, fwd_s = 0, bwd_s = 0, fwd_flops = 0, bwd_flops = 0;
};

HeadCost head_cost(const ModelSpec& m, const RankShape& r, const TrainingSpec& t, const HardwareSpec& hw) {
  const Block head = rmsnorm_linear_block(r, m.hidden_size, m.vocab_size, "lm_head");
  const double logits = r.tokens() * double(m.vocab_size) / double(r.tp);
  HeadCost c;
  const double fp32_copy = t.loss_fp32_logits ? 4 * logits : 0;
  const double grad = (t.loss_fp32_logits ? 4 : 2) * logits;
  c.transient_bytes = saved_bytes(head) + 2 * logits + fp32_copy + grad;
  for (const auto& op : head.ops) {
    const OpTime ot = op_time(op, hw);
    c.fwd_s += ot.fwd_s;
    c.bwd_s += ot.bwd_s;
    c.fwd_flops += op.fwd_flops;
    c.bwd_flops += op.bwd_flops;
  }
  const double mem_bw = hw.hbm_bytes_per_s * hw.efficiency.memory_bound;
  c.fwd_s += (2 + 4) * logits / mem_bw * 2;  // softmax cross-entropy: two passes over the logits
  c.bwd_s += (4 + 2) * logits / mem_bw;      // gradient of the logits
  return c;
}

StageEstimate stage_estimate(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, const Plan& plan,
                             const LayerShapes& shapes, const RankShape& r, size_t i,
                             std::pair<int64_t, int64_t> range) {
  StageEstimate st;
  const int64_t p = t.pp, mb = t.microbatches();
  st.index = int64_t(i);
  st.first_layer = range.first;
  st.last_layer = range.second;
  const int64_t n_layers = range.second - range.first;
  st.recompute_layers = std::min(per_stage_value(plan.recompute_layers, i, n_layers), n_layers);
  st.offload_layers = std::min(per_stage_value(plan.offload_layers, i, 0), n_layers - st.recompute_layers);
  st.in_flight_microbatches = std::min(p - int64_t(i), mb);

  double kept = 0, transient = 0, offload = 0, fwd_s = 0, bwd_s = 0, rc_s = 0;
  double fwd_f = 0, bwd_f = 0, rc_f = 0;
  ParamCount params;
  for (int64_t g = range.first; g < range.second; ++g) {
    const LayerDef& layer = shapes.at(m, g);
    st.per_layer.push_back(choose(plan, layer, g, g - range.first, st.recompute_layers, st.offload_layers));
    const LayerCost c = layer_cost(layer, st.per_layer.back(), t.replay == RecomputeReplay::early_stop, hw);
    kept += c.kept_bytes;
    transient = std::max(transient, c.transient_bytes);
    offload += c.offload_bytes;
    fwd_s += c.fwd_s, bwd_s += c.bwd_s, rc_s += c.recompute_s, st.comm_s += c.comm_s;
    fwd_f += c.fwd_flops, bwd_f += c.bwd_flops, rc_f += c.recompute_flops;
    const ParamCount lp = layer_params(m, g, t.tp, t.ep);
    params.dense += lp.dense, params.expert += lp.expert;
  }
  const bool first = i == 0, last = i + 1 == size_t(p);
  if (first) params.dense += embedding_params(m, t.tp);
  if (last) {
    params.dense += double(m.hidden_size);  // final norm
    if (!m.tie_word_embeddings || p > 1) params.dense += embedding_params(m, t.tp);
    const HeadCost h = head_cost(m, r, t, hw);
    transient = std::max(transient, h.transient_bytes);
    fwd_s += h.fwd_s, bwd_s += h.bwd_s, fwd_f += h.fwd_flops, bwd_f += h.bwd_flops;
  }
  // pipeline p2p: each stage but the last sends activations forward, each
  // but the first sends gradients back (sequence-sharded under sp)
  if (p > 1) {
    const double bytes = r.seq_tokens() * double(m.hidden_size) * 2;
    const int64_t ranks = t.gpus() > kGpusPerNode ? kGpusPerNode + 1 : 2;
    const double send_s = bytes / link_bytes_per_s(hw, ranks);
    if (!last) fwd_s += send_s, st.comm_s += send_s;
    if (!first) bwd_s += send_s, st.comm_s += send_s;
  }
  const StaticBytes sb = static_bytes(params, t);
  st.memory_bytes = {sb.weights, sb.gradients, sb.optimizer, double(st.in_flight_microbatches) * kept, transient, 0};
  st.memory_bytes.peak = sb.total() + st.memory_bytes.activations + transient;

  // Offload copies hide under compute: device-to-host under the forward,
  // host-to-device under backward and recompute. Where tp collectives also
  // cross the host link (no NVLink among the tp group), they take their share
  // of that window.
  const double copy_s = offload / host_copy_bytes_per_s(hw);
  const bool link_shared = t.tp > hw.nvlink_domain_gpus || hw.nvlink_bytes_per_s <= 0;
  const double busy = fwd_s + bwd_s + rc_s;
  const double free_share = link_shared && busy > 0 ? 1 - st.comm_s / busy : 1;
  const double exposed =
      std::max(0.0, copy_s - fwd_s * free_share) + std::max(0.0, copy_s - (bwd_s + rc_s) * free_share);
  st.microbatch_s = fwd_s + bwd_s + rc_s + exposed;
  const double n = double(mb);
  st.flops = {n * fwd_f, n * bwd_f, n * rc_f};
  st.time_s = {n * fwd_s, n * bwd_s, n * rc_s, n * exposed, n * st.microbatch_s};
  st.comm_s *= n;
  return st;
}

// Model FLOPs of one microbatch, counted on unsharded shapes (recompute
// excluded, as Megatron counts for MFU): every layer's forward and backward
// plus the LM head.
double model_flops_per_microbatch(const ModelSpec& m, const TrainingSpec& t, int64_t layers) {
  TrainingSpec whole = t;
  whole.tp = whole.ep = 1;
  const RankShape r = rank_shape(whole);
  const LayerShapes shapes = build_shapes(m, r);
  const auto sum = [](const LayerDef& l) {
    double f = 0;
    for (const auto& b : l.blocks)
      for (const auto& op : b.ops) f += op.fwd_flops + op.bwd_flops;
    return f;
  };
  const double dense = sum(shapes.dense), moe = sum(shapes.moe);
  double total = 6 * r.tokens() * double(m.hidden_size) * double(m.vocab_size);  // LM head
  for (int64_t i = 0; i < layers; ++i) total += m.layer_is_moe(i) ? moe : dense;
  return total;
}

}  // namespace

Estimate estimate(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t_in, const Plan& plan,
                  double budget_bytes) {
  const TrainingSpec t = with_defaults(t_in);
  const RankShape r = rank_shape(t);
  const LayerShapes shapes = build_shapes(m, r);
  const auto ranges = stage_layer_ranges(m, t);
  Estimate e;
  e.microbatches = t.microbatches();
  e.budget_bytes = budget_bytes;
  double sum_mb = 0, max_mb = 0, exec_flops = 0, max_opt = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    StageEstimate st = stage_estimate(m, hw, t, plan, shapes, r, i, ranges[i]);
    st.fits = st.memory_bytes.peak <= budget_bytes;
    e.fits = e.fits && st.fits;
    e.peak_memory_bytes = std::max(e.peak_memory_bytes, st.memory_bytes.peak);
    sum_mb += st.microbatch_s;
    max_mb = std::max(max_mb, st.microbatch_s);
    exec_flops += st.flops.forward + st.flops.backward + st.flops.recompute;
    // optimizer step: reads and writes weights, gradients and state once
    const double state = st.memory_bytes.weights + st.memory_bytes.gradients + st.memory_bytes.optimizer;
    max_opt = std::max(max_opt, 2 * state / (hw.hbm_bytes_per_s * hw.efficiency.memory_bound));
    e.stages.push_back(std::move(st));
  }
  // 1F1B: the slowest stage sets the steady state; the others add fill and drain
  const double n = double(e.microbatches);
  auto& it = e.iteration;
  it.optimizer_step_s = t.optimizer == Optimizer::none ? 0 : max_opt;
  it.time_s = sum_mb + (n - 1) * max_mb + it.optimizer_step_s;
  it.bubble_fraction = it.time_s > 0 ? (it.time_s - n * max_mb - it.optimizer_step_s) / it.time_s : 0;
  const double dp = double(t.dp), gpus = double(t.gpus());
  it.model_flops = model_flops_per_microbatch(m, t, effective_layers(m, t)) * n * dp;
  it.hardware_flops = exec_flops * dp * double(t.tp);  // per-rank work summed over ranks
  it.mfu = it.model_flops / (it.time_s * gpus * hw.peak_bf16_flops);
  it.tokens_per_s = double(t.gbs) * double(t.seq) / it.time_s;
  return e;
}

}  // namespace remat
