#include "chunks.hpp"

#include <string>

#include "remat/spec/problems.hpp"
#include "remat/spec/validate.hpp"

namespace remat::sim_detail {

namespace {

// The layout of the virtual stages: pp x v stages of one chunk each, the
// same GPUs. Interleaving needs even chunks and one R for all of them.
TrainingSpec virtual_layout(const ModelSpec& m, const TrainingSpec& t, const Plan& plan, int64_t v) {
  const auto fail = [](const char* flag, const std::string& value, const std::string& why) {
    throw InputError({{"command line", flag, value, why}});
  };
  if (v < 1) fail("--virtual-stages", std::to_string(v), "must be at least 1");
  if (v == 1) return t;
  if (!t.layers_per_stage.empty())
    fail("--virtual-stages", std::to_string(v), "cannot be used with --layers-per-stage");
  if (t.microbatches() % t.pp != 0)
    fail("--virtual-stages", std::to_string(v),
         "needs the microbatch count (" + std::to_string(t.microbatches()) + ") to be a multiple of --pp");
  // v above the layer count leaves a chunk empty; checked before pp * v, which could overflow
  const int64_t layers = effective_layers(m, t);
  if (v > layers || layers < t.pp * v)
    fail("--virtual-stages", std::to_string(v),
         "leaves a chunk without layers (pp x virtual stages must not exceed the " + std::to_string(layers) +
             " layers)");
  if (plan.recompute_layers.size() > 1 || plan.offload_layers.size() > 1)
    fail("--virtual-stages", std::to_string(v), "takes one --recompute-layers / --offload-layers value for all chunks");
  TrainingSpec tv = t;
  tv.pp = t.pp * v;
  return tv;
}

// Splits the stage's fixed times (LM head + p2p sends, stage_model's
// add_head/add_p2p) into the head and the sends: each neighbour costs one
// send of the same size.
void split_fixed(Chunk& c, const StageBase& base, int64_t stages) {
  const bool send_fwd = c.virtual_index + 1 < stages, send_bwd = c.virtual_index > 0;
  const int sends = int(send_fwd) + int(send_bwd);
  const double send_s = sends > 0 ? base.fixed_comm_s / sends : 0;
  c.send_fwd_s = send_fwd ? send_s * base.forward_passes : 0;
  c.send_bwd_s = send_bwd ? send_s : 0;
  c.has_head = !send_fwd;
  c.head_bytes = base.head_transient_bytes;
  c.head_forward_bytes = c.has_head ? base.head_forward_bytes : 0;
  c.head_fwd_s = base.fixed_fwd_s * base.forward_passes - c.send_fwd_s;
  c.forward_passes = base.forward_passes;
  c.head_bwd_s = base.fixed_bwd_s - c.send_bwd_s;
}

// The stage's fixed pieces (stage_base) the chunk's events use.
Chunk chunk_of(const StageBase& base, int64_t vs, const TrainingSpec& t, int64_t stages) {
  Chunk c;
  c.virtual_index = vs;
  c.stage = vs % t.pp;
  c.chunk = vs / t.pp;
  c.static_bytes = base.static_bytes;
  c.runtime_bytes = base.runtime_bytes;
  c.stage_output_bytes = base.stage_output_bytes;
  c.ordered_backward = base.ordered_backward;
  c.optimizer_step_bytes = base.optimizer_step_bytes;
  c.grads_absent_bytes = base.grads_absent_bytes;
  c.head_grads_bytes = base.head_grads_bytes;
  c.autocast_cast_bytes = base.autocast_cast_bytes;
  split_fixed(c, base, stages);
  c.head_cast_bytes = c.has_head ? base.head_cast_bytes : 0;
  return c;
}

}  // namespace

ChunkSet build_chunks(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t_in, const Plan& plan,
                      int64_t v) {
  ChunkSet set;
  const TrainingSpec given = with_defaults(t_in);
  set.training = costed_training(given, plan.strategy);
  const TrainingSpec& t = set.training;
  const TrainingSpec tv = virtual_layout(m, t, plan, v);
  set.estimate = estimate(m, hw, given, plan, default_budget_bytes(hw));
  // The per-layer choices come from estimate itself, so plan -> choice is decided once.
  const Estimate ev =
      v == 1 ? set.estimate : estimate(m, hw, virtual_layout(m, given, plan, v), plan, default_budget_bytes(hw));
  const RankShape r = rank_shape(t);
  const LayerShapes shapes = build_shapes(m, r);
  const auto ranges = stage_layer_ranges(m, tv);
  for (size_t vs = 0; vs < ranges.size(); ++vs) {
    const StageBase base = stage_base(m, hw, tv, r, int64_t(vs), ranges[vs]);
    Chunk c = chunk_of(base, int64_t(vs), t, tv.pp);
    // p2p payload: the residual stream of one microbatch (stage_model's add_p2p)
    c.p2p_bytes = r.seq_tokens() * double(m.hidden_size) * 2;
    LayerSums sums;
    for (int64_t g = ranges[vs].first; g < ranges[vs].second; ++g) {
      LayerChoice choice = ev.stages[vs].per_layer[size_t(g - ranges[vs].first)];
      c.layers.push_back({g, stage_layer_cost(m, hw, tv, shapes.at(m, g), choice, g)});
      sums.add(c.layers.back().cost);
    }
    // stage_totals' offload window: tp collectives on the host link take their share
    const StageTotals tot = stage_totals(base, sums);
    const double busy = tot.fwd_s + tot.bwd_s + tot.recompute_s;
    const double free_share = base.link_shared && busy > 0 ? 1 - tot.comm_s / busy : 1;
    c.copy_bytes_per_s = base.copy_bytes_per_s * free_share;
    set.chunks.push_back(std::move(c));
  }
  return set;
}

}  // namespace remat::sim_detail
