#include "remat/cost/estimate.hpp"

#include <algorithm>
#include <array>

#include "remat/cost/stage_model.hpp"
#include "remat/cost/streambp.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

double default_budget_bytes(const HardwareSpec& hw) { return hw.hbm_bytes - hw.memory_reserve_bytes; }

namespace {

int64_t per_stage_value(const std::vector<int64_t>& v, size_t stage, int64_t fallback) {
  if (v.empty()) return fallback;
  return v.size() == 1 ? v[0] : v[stage];
}

LayerChoice choose(const Plan& plan, const LayerDef& layer, int64_t global, int64_t local, int64_t r, int64_t o,
                   int64_t n_layers) {
  if (auto it = plan.layer_overrides.find(global); it != plan.layer_overrides.end()) return it->second;
  if (plan.megatron) return megatron_layer_choice(*plan.megatron, local, n_layers);
  if (local < r) return choice_for(plan.strategy, layer);
  if (local < r + o) return offload_choice(layer);
  return choice_for(Strategy::none, layer);
}

// Megatron-LM's MTP block (multi_token_prediction.py at d98e8a64dd) checkpoints its layer under
// full uniform recompute, skips block (unsupported there), and its layer honours selective modules;
// remat's own strategies leave it kept.
LayerChoice mtp_layer_choice(const Plan& plan) {
  LayerChoice c;
  if (!plan.megatron) return c;
  const MegatronRecompute& r = *plan.megatron;
  if (r.granularity == MegatronGranularity::selective) c.mode = LayerMode::selective, c.modules = r.modules;
  if (r.granularity == MegatronGranularity::full && r.method == MegatronMethod::uniform) c.mode = LayerMode::full;
  return c;
}

bool recomputes(const LayerChoice& c) {
  if (c.mode == LayerMode::full || c.mode == LayerMode::selective) return true;
  return std::any_of(c.blocks.begin(), c.blocks.end(),
                     [](BlockMode m) { return m == BlockMode::standard || m == BlockMode::eagle; });
}

bool offloads(const LayerChoice& c) {
  return std::find(c.blocks.begin(), c.blocks.end(), BlockMode::offload) != c.blocks.end();
}

// StreamBP's extra weight traffic for layer g (bf16 weights; the gradient accumulator only where
// the weights train).
double streambp_layer_weight_s(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, int64_t g) {
  const double params = layer_params(m, g, t.tp, t.ep).total();
  const double grad_bytes = t.lora_rank > 0 ? 0 : bytes_per_param(t, 1).gradients * params;
  return streambp_weight_read_s(2 * params, grad_bytes, t.streambp_chunks, hw);
}
}  // namespace

namespace {

// The rank shape of `t` unsharded (tp and ep 1), on which model FLOPs are counted.
RankShape full_width(const TrainingSpec& t) {
  TrainingSpec whole = t;
  whole.tp = whole.ep = 1;
  return rank_shape(whole);
}

// model_flops_per_microbatch over `shapes`, layers whose FLOPs are those of `whole`'s.
double model_flops_of(const ModelSpec& m, const RankShape& whole, const LayerShapes& shapes, int64_t layers) {
  const auto sum = [](const LayerDef& l) {
    double f = 0;
    for (const auto& b : l.blocks)
      for (const auto& op : b.ops) f += op.fwd_flops + op.bwd_flops;
    return f;
  };
  std::vector<double> per_kind(shapes.kinds.size());
  for (size_t k = 0; k < per_kind.size(); ++k) per_kind[k] = sum(shapes.kinds[k]);
  // the LM head as the last stage runs it (frozen under LoRA: its backward is the input's gradient only)
  const Block head = lm_head_block(whole, m);
  double head_flops = 0;
  for (const auto& op : head.ops) head_flops += op.fwd_flops + op.bwd_flops;
  double total = head_flops;
  for (int64_t i = 0; i < layers; ++i) total += per_kind[size_t(m.layer_kind(i))];
  // multi-token prediction: each module's layer, LM head and eh_proj (2h to h: 3 x 2 x tokens x 2h x h)
  const double h = double(m.hidden_size);
  for (int64_t k = 0; k < m.num_nextn_predict_layers; ++k)
    total += per_kind[size_t(m.layer_kind(layers + k))] + head_flops + 6 * whole.tokens() * 2 * h * h;
  return total;
}

}  // namespace

// Model FLOPs of one microbatch, counted on unsharded shapes (recompute
// excluded, as Megatron counts for MFU): every layer's forward and backward
// plus the LM head.
double model_flops_per_microbatch(const ModelSpec& m, const TrainingSpec& t, int64_t layers) {
  const RankShape whole = full_width(t);
  return model_flops_of(m, whole, build_shapes(m, whole), layers);
}

double model_flops_per_microbatch(const ModelSpec& m, const TrainingSpec& t, int64_t layers, const LayerShapes& built) {
  // without tp the rank's layers count the unsharded FLOPs: ep only adds collectives (no FLOPs)
  // and splits the experts' GEMMs into more calls (tests/test_flops.cpp holds this)
  if (t.tp != 1) return model_flops_per_microbatch(m, t, layers);
  return model_flops_of(m, full_width(t), built, layers);
}

double iteration_model_flops(const ModelSpec& m, const TrainingSpec& costed) {
  return iteration_model_flops(model_flops_per_microbatch(m, costed, effective_layers(m, costed)), costed);
}

double iteration_model_flops(double microbatch_model_flops, const TrainingSpec& costed) {
  return microbatch_model_flops * double(costed.microbatches()) * double(costed.dp);
}

IterationEstimate iteration_from_stages(const std::vector<StageRun>& stages, double model_flops, double hardware_flops,
                                        const TrainingSpec& t, const HardwareSpec& hw) {
  IterationEstimate it;
  double sum = 0, slowest = 0, step_s = 0;
  for (const StageRun& s : stages) {
    sum += s.microbatch_s, slowest = std::max(slowest, s.microbatch_s);
    const StaticBytes& sb = s.static_bytes;
    step_s = std::max(step_s, optimizer_step_s({sb.weights, sb.gradients, sb.optimizer}, t, hw));
  }
  // 1F1B: the slowest stage sets the steady state; the others add fill and drain
  const double n = double(t.microbatches());
  it.optimizer_step_s = step_s;
  it.time_s = sum + (n - 1) * slowest + step_s;
  // at most rounding below zero when one stage is the whole pipeline; clamped so it prints 0.0, not -0.0
  it.bubble_fraction = it.time_s > 0 ? std::max(0.0, (it.time_s - n * slowest - step_s) / it.time_s) : 0;
  it.model_flops = model_flops;
  it.hardware_flops = hardware_flops;
  it.mfu = model_flops / (it.time_s * double(t.gpus()) * hw.peak_bf16_flops);
  it.tokens_per_s = double(t.gbs) * double(t.seq) / it.time_s;
  return it;
}

// Optimizer step: reads and writes weights, gradients and state once.
int64_t host_bound_layers(const Estimate& e) {
  int64_t n = 0;
  for (const auto& st : e.stages) n += st.host_bound_layers;
  return n;
}

double optimizer_step_s(const StageMemory& mem, const TrainingSpec& t, const HardwareSpec& hw) {
  if (t.optimizer == Optimizer::none) return 0;
  const double state = mem.weights + mem.gradients + mem.optimizer;
  double bytes = t.optimizer_bytes_per_param > 0 ? t.optimizer_bytes_per_param * mem.weights / 2 : 2 * state;
  if (t.optimizer_bytes_per_grad_byte > 0) bytes = t.optimizer_bytes_per_grad_byte * mem.gradients;
  return bytes / (hw.hbm_bytes_per_s * hw.efficiency.memory_bound);
}

TrainingSpec costed_training(const TrainingSpec& t, Strategy s) {
  return streambp_effective_training(with_defaults(t), s);
}

namespace {

// The weights of layer g that autocast casts to bf16 (a layer that never runs, untrained, casts
// nothing; transformers' grouped_mm experts are not autocast: they run in fp32 on their own weights,
// moe_routed_block).
double autocast_weights(const ModelSpec& m, const TrainingSpec& t, int64_t g) {
  const ParamCount lp = layer_params(m, g, t.tp, t.ep);
  const double experts = t.layouts_from_model_code && m.experts_grouped_mm() ? lp.expert : 0;
  return lp.total() - lp.untrained - experts;
}

double cast_s_of(double weights, const HardwareSpec& hw) {
  return weights * (4 + 2) / (hw.hbm_bytes_per_s * hw.efficiency.memory_bound);
}

}  // namespace

double autocast_cast_s(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, int64_t g) {
  return cast_s_of(autocast_weights(m, t, g), hw);
}

namespace {

// The share of a layer's GEMM FLOPs in the GEMMs after its first adapted projection (PEFT's ops
// come first: name.lora, name.lora_gemm, then the base GEMM `name`). A parallel layer's MLP or MoE
// branch reads the frozen normed input beside the attention, so its GEMMs count only after the
// branch's own first adapted projection (Merlyn's GPT-NeoX layer 0 under qkv, dense and down adapters
// saves dense's copy alone: peak-traces-h200/unseen17).
double gemm_share_after_first_adapter(const LayerDef& layer) {
  double all = 0, after = 0;
  std::string base;  // the first adapted projection, once found
  bool past = false;
  bool in_branch = false;
  for (const Block& b : layer.blocks) {
    const bool branch = layer.parallel_branches && (b.name.starts_with("mlp") || b.name.starts_with("moe"));
    if (branch && !in_branch) base.clear(), past = false;
    in_branch = branch;
    for (const OpDef& op : b.ops) {
      if (base.empty() && op.name.ends_with(".lora")) base = op.name.substr(0, op.name.size() - 5);
      if (op.kind != OpKind::gemm) continue;
      all += op.fwd_flops;
      if (past) after += op.fwd_flops;
      if (!base.empty() && op.name == base) past = true;
    }
  }
  return all > 0 ? after / all : 0;
}

// autocast's bf16 copy of each of the layer's `weights`, which its GEMMs save: kept by a layer that keeps its tensors,
// freed by its backward (Nemotron 3 Super's mixed step peaks in its first layer's backward, the later layers' copies
// gone: reports/hf/steps-latent-moe). A checkpointed layer drops them with its other saved tensors
// (autocast's cache of leaf casts is cleared when the forward leaves autocast) and its replay, which
// re-enters autocast, makes them again: working bytes (Qwen3-8B's non-reentrant mixed step at the
// loss holds no layer's copy, peak-traces-h200/unseen10). A frozen weight (LoRA) saves a copy only
// where its input needs a gradient: none before the first adapter. A replayed layer is the exception:
// PeftModel prepares a model with gradient checkpointing on by enable_input_require_grads (either
// replay), which makes the embeddings' output require a gradient, so every GEMM in the replay reads an
// input that needs one (Llama-2-7B cut to one layer, MLP adapters, reentrant mixed DPO: all seven
// copies alive at the replay's down adapter, peak-traces-h200/random-blind60, -4.05% while only
// down_proj's was counted; Llama-65B's, all-linear, non-reentrant: q, k, v and o's copies alive,
// peak-traces-h200/unseen9-followup).
double autocast_casts(const TrainingSpec& t, const LayerDef& layer, double weights, int64_t g, int64_t first_adapted,
                      bool replayed) {
  if (!t.params_fp32_autocast) return 0;
  if (t.lora_rank > 0 && replayed) return 2 * weights;
  if (t.lora_rank > 0 && g < first_adapted) return 0;
  const double casts = 2 * weights;
  // in the first adapted layer only the GEMMs after the first adapted one read an input that needs a
  // gradient (StarCoder2's layer 0 under q, k, v, o, c_proj adapters saves o_proj's, c_fc's and
  // c_proj's copies; Phi-4's under a down_proj adapter none): their share of the layer's GEMM work
  return t.lora_rank > 0 && g == first_adapted ? casts * gemm_share_after_first_adapter(layer) : casts;
}

// The time of autocast's casts (fp32 parameters): each forward of the layer, and each replay, reads
// every fp32 weight its GEMMs use and writes its bf16 copy (4 + 2 bytes a weight); a trained weight's
// bf16 gradient is cast back to fp32 in backward (2 + 4). Llama-3.3-70B cut to 2 layers, LoRA on the
// MLP, mixed, 2k tokens: the replay's casts are a fifth of its extra time
// (steps-random-blind26-h200.jsonl).
void add_autocast_cast_time(LayerCost& lc, const HardwareSpec& hw, const TrainingSpec& t, double weights,
                            bool replayed) {
  const double cast_s = cast_s_of(weights, hw);
  lc.fwd_s += cast_s;
  if (replayed) lc.recompute_s += cast_s;
  if (t.lora_rank <= 0) lc.bwd_s += cast_s;
}

// `replayed`: a fully recomputed layer, whose casts layer_cost placed block by block (full_layer).
LayerCost with_autocast_casts(LayerCost lc, const TrainingSpec& t, const LayerChoice& choice, double casts,
                              bool replayed) {
  if (!replayed) (choice.mode == LayerMode::keep ? lc.kept_bytes : lc.transient_bytes) += casts;
  // a kept layer's copies are made by its GEMMs as it runs (before their adapters)
  if (choice.mode == LayerMode::keep && lc.forward_peak_bytes > 0) lc.forward_peak_bytes += casts;
  // a reentrant checkpoint runs the layer's forward under no_grad, but autocast caches the casts of
  // leaves that require a gradient whatever the grad mode: a trained layer's copies stay cached until
  // the forward leaves autocast, after the loss's forward (LFM2-2.6B's full reentrant mixed DPO step
  // peaks at its loss with both layers' copies alive: peak-traces-h200/random-blind10, -4.06% while
  // uncounted). A non-reentrant checkpoint's forward caches them the same way: they are gone by the
  // backward (Qwen3-8B's SFT step peaks in its loss's backward without them, above), but a loss whose
  // forward sets the peak sees every layer's copy (SmolLM-1.7B's non-reentrant mixed GRPO 2 x 12k:
  // the four layers' 28 copies beside the per-row log-probabilities, peak-traces-h200/random-blind25,
  // -2.74% while uncounted).
  if (t.layouts_from_model_code && t.lora_rank <= 0 && choice.mode == LayerMode::full) lc.forward_held_bytes = casts;
  return lc;
}

}  // namespace

LayerCost stage_layer_cost(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& costed,
                           const LayerDef& layer, LayerChoice& choice, int64_t g) {
  BlockCostMemo memo;
  return stage_layer_cost(m, hw, costed, layer, choice, g, memo);
}

LayerCost stage_layer_cost(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& costed,
                           const LayerDef& layer, LayerChoice& choice, int64_t g, BlockCostMemo& memo) {
  if (choice.stream_chunks > 0) choice.stream_chunks = costed.streambp_chunks;
  const int64_t first_adapted = first_adapted_layer(m, costed);
  const double weights = costed.params_fp32_autocast ? autocast_weights(m, costed, g) : 0;
  const bool replayed = choice.mode == LayerMode::full && choice.stream_chunks <= 1;
  const double casts = autocast_casts(costed, layer, weights, g, first_adapted, replayed);
  LayerCost lc;
  if (choice.mode == LayerMode::keep && g <= first_adapted) {
    const LayerDef frozen = frozen_prefix_layer(layer, g < first_adapted, costed);
    BlockCostMemo own;  // its blocks live here only
    lc = layer_cost(frozen, choice, costed.replay == RecomputeReplay::early_stop, hw, own);
  } else {
    lc = layer_cost(layer, choice, costed.replay == RecomputeReplay::early_stop, hw, memo, replayed ? casts : 0);
  }
  if (choice.stream_chunks > 1) lc.recompute_s += streambp_layer_weight_s(m, hw, costed, g);
  lc.grads_bytes = layer_gradient_bytes(m, costed, g);
  if (costed.params_fp32_autocast) lc = with_autocast_casts(lc, costed, choice, casts, replayed);
  if (costed.params_fp32_autocast && costed.layouts_from_model_code)
    add_autocast_cast_time(lc, hw, costed, weights, replayed);
  return lc;
}

namespace {

size_t hash_of(const LayerDef* layer, int frozen, const LayerChoice& c) {
  size_t h = std::hash<const void*>()(layer) ^ (uint64_t(frozen) * 0x9e3779b97f4a7c15ULL);
  const auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ULL; };
  mix(uint64_t(c.mode));
  for (BlockMode b : c.blocks) mix(uint64_t(b));
  mix(uint64_t(c.stream_chunks));
  mix(uint64_t(c.modules));
  mix(uint64_t(c.chunk_layers));
  mix(uint64_t(c.chunk_position));
  return h;
}

}  // namespace

const LayerCost& LayerCostCache::cost(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& costed,
                                      const LayerDef& layer, LayerChoice& choice, int64_t g) {
  // a layer's cost depends on its shape, its choice's cost key and, up to the first adapted layer,
  // LoRA's frozen prefix; the key is made in place (no copy) and the caller's place in its chunk
  // restored
  const int64_t chunk_layers = choice.chunk_layers, chunk_position = choice.chunk_position;
  reduce_to_cost_key(choice);
  const int64_t first_adapted = first_adapted_layer(m, costed);
  const int frozen = g < first_adapted ? 2 : g == first_adapted ? 1 : 0;
  const Entry* found = nullptr;
  const size_t h = hash_of(&layer, frozen, choice);
  const auto matches = [&](const Entry& e) { return e.layer == &layer && e.frozen == frozen && e.choice == choice; };
  size_t& recent = recent_[h % recent_.size()];
  if (recent > 0 && matches(entries_[recent - 1])) found = &entries_[recent - 1];
  for (auto [it, end] = by_hash_.equal_range(h); it != end && !found; ++it)
    if (matches(entries_[it->second])) found = &entries_[it->second], recent = it->second + 1;
  if (!found) {
    Entry e{&layer, frozen, choice, choice, {}};
    e.cost = stage_layer_cost(m, hw, costed, layer, e.costed_choice, g, blocks_);
    by_hash_.emplace(h, entries_.size());
    recent = entries_.size() + 1;
    found = &entries_.emplace_back(std::move(e));
  }
  if (!(choice == found->costed_choice)) choice = found->costed_choice;  // as stage_layer_cost updated it
  choice.chunk_layers = chunk_layers, choice.chunk_position = chunk_position;
  return found->cost;
}

StageLayerWalk::StageLayerWalk(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, const Plan& plan,
                               const LayerShapes& shapes, size_t stage, int64_t first_layer, int64_t n_layers,
                               LayerCostCache& cache)
    : m_(m), hw_(hw), t_(t), plan_(plan), shapes_(shapes), cache_(cache), stage_(stage), first_(first_layer) {
  set_length(n_layers);
}

void StageLayerWalk::set_length(int64_t n_layers) {
  n_layers_ = n_layers;
  // R counts the layers that recompute: every layer by default, none under the none strategy
  const int64_t all_by_default = plan_.strategy == Strategy::none ? 0 : n_layers;
  recompute_limit_ = std::min(per_stage_value(plan_.recompute_layers, stage_, all_by_default), n_layers);
  if (plan_.strategy == Strategy::none) recompute_limit_ = 0;
  offload_limit_ = std::min(per_stage_value(plan_.offload_layers, stage_, 0), n_layers - recompute_limit_);
}

const LayerChoice& StageLayerWalk::add_next() {
  const int64_t g = first_ + added_;
  const LayerDef& layer = shapes_.at(m_, g);
  last_ = choose(plan_, layer, g, added_, recompute_limit_, offload_limit_, n_layers_);
  const LayerCost& lc = cache_.cost(m_, hw_, t_, layer, last_, g);
  host_bound_ += lc.host_bound ? 1 : 0;
  recomputing_ += recomputes(last_) ? 1 : 0;
  offloading_ += offloads(last_) ? 1 : 0;
  sums_.add(lc);
  ++added_;
  return last_;
}

// R and the offload count clamp to the stage's length, but a layer at place p < length recomputes
// (offloads) in a stage of any length past p alike; a uniform chunk's size is cut by the length.
int64_t layers_placed_alike(const Plan& plan, int64_t n_layers) {
  const bool uniform_chunks = plan.megatron && plan.megatron->granularity == MegatronGranularity::full &&
                              plan.megatron->method == MegatronMethod::uniform && plan.megatron->num_layers > 1;
  if (!uniform_chunks || n_layers == 0) return n_layers;
  return (n_layers - 1) / plan.megatron->num_layers * plan.megatron->num_layers;
}

StageEstimate StageLayerWalk::finish(const StageBase& base) {
  StageEstimate st;
  st.index = int64_t(stage_);
  st.first_layer = first_;
  st.last_layer = first_ + added_;
  st.in_flight_microbatches = base.in_flight;
  st.adapter_params = base.adapter_params;
  st.host_bound_layers = host_bound_;
  if (plan_.megatron || !plan_.layer_overrides.empty()) {  // count what the per-layer choices do on this stage
    st.recompute_layers = recomputing_, st.offload_layers = offloading_;
  } else {  // the plan's counts, for a stage of the layers added (they lead the stage)
    st.recompute_layers = std::min(recompute_limit_, added_);
    st.offload_layers = std::min(offload_limit_, added_ - st.recompute_layers);
  }
  LayerSums sums = sums_;
  if (int64_t(stage_) + 1 == t_.pp)  // multi-token prediction layers run after the decoder on the last stage
    for (int64_t k = 0; k < m_.num_nextn_predict_layers; ++k) {
      const int64_t g = effective_layers(m_, t_) + k;
      LayerChoice c = mtp_layer_choice(plan_);
      sums.add(cache_.cost(m_, hw_, t_, shapes_.at(m_, g), c, g));
    }
  const StageTotals tot = stage_totals(base, sums);
  const StaticBytes& sb = base.static_bytes;
  st.memory_bytes = {sb.weights,
                     sb.gradients,
                     sb.optimizer,
                     tot.activations_bytes,
                     tot.transient_bytes,
                     base.runtime_bytes,
                     tot.optimizer_step_peak_bytes,
                     tot.peak_bytes,
                     t_.outside_allocator_bytes};
  st.microbatch_s = tot.microbatch_s;
  const double n = double(t_.microbatches());
  st.flops = {n * (sums.fwd_flops + base.fixed_fwd_flops), n * (sums.bwd_flops + base.fixed_bwd_flops),
              n * sums.recompute_flops};
  st.time_s = {n * tot.fwd_s, n * tot.bwd_s, n * tot.recompute_s, n * tot.exposed_offload_s, n * tot.microbatch_s};
  st.comm_s = n * tot.comm_s;
  return st;
}

StageEstimate stage_estimate(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, const Plan& plan,
                             const LayerShapes& shapes, const RankShape& r, size_t i, std::pair<int64_t, int64_t> range,
                             LayerCostCache& cache) {
  const int64_t n_layers = range.second - range.first;
  StageLayerWalk walk(m, hw, t, plan, shapes, i, range.first, n_layers, cache);
  std::vector<LayerChoice> per_layer;
  per_layer.reserve(size_t(n_layers));
  while (walk.added() < n_layers) per_layer.push_back(walk.add_next());
  StageEstimate st = walk.finish(stage_base(m, hw, t, r, int64_t(i), range));
  st.per_layer = std::move(per_layer);
  return st;
}

Estimate estimate(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t_in, const Plan& plan,
                  double budget_bytes) {
  const TrainingSpec t = costed_training(t_in, plan.strategy);
  const RankShape r = rank_shape(t);
  const LayerShapes shapes = build_shapes(m, r);
  const auto ranges = stage_layer_ranges(m, t);
  Estimate e;
  e.microbatches = t.microbatches();
  e.budget_bytes = budget_bytes;
  std::vector<StageRun> runs;
  double exec_flops = 0;
  LayerCostCache cache;
  for (size_t i = 0; i < ranges.size(); ++i) {
    StageEstimate st = stage_estimate(m, hw, t, plan, shapes, r, i, ranges[i], cache);
    st.fits = st.memory_bytes.peak <= budget_bytes;
    e.fits = e.fits && st.fits;
    e.peak_memory_bytes = std::max(e.peak_memory_bytes, st.memory_bytes.peak);
    const StageMemory& mem = st.memory_bytes;
    runs.push_back({st.microbatch_s, {mem.weights, mem.gradients, mem.optimizer}});
    exec_flops += st.flops.forward + st.flops.backward + st.flops.recompute;
    e.stages.push_back(std::move(st));
  }
  const double hardware_flops = exec_flops * double(t.dp) * double(t.tp);  // per-rank work over all ranks
  const double model_flops = iteration_model_flops(model_flops_per_microbatch(m, t, effective_layers(m, t), shapes), t);
  e.iteration = iteration_from_stages(runs, model_flops, hardware_flops, t, hw);
  return e;
}

}  // namespace remat
