// The event engine: runs every stage's schedule step by step, each step as
// per-layer events on the compute stream, offload copies on the host-link
// streams and sends on the p2p stream, allocating and freeing buffers.
#include "remat/sim/simulate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "chunks.hpp"
#include "remat/sim/schedule.hpp"
#include "timeline.hpp"

namespace remat {

using sim_detail::Chunk;
using sim_detail::ChunkSet;

namespace {

constexpr double kUnset = -1;
constexpr size_t kNoBuffer = size_t(-1);

std::string buffer_name(const char* what, int64_t mb, int64_t layer) {
  return layer < 0 ? fmt::format("{} mb{}", what, mb) : fmt::format("{} mb{} L{}", what, mb, layer);
}

class Engine {
 public:
  Engine(const ChunkSet& set, int64_t v, Simulation& sim)
      : set_(set), p_(set.training.pp), m_(set.training.microbatches()), sim_(sim) {
    const size_t n = set.chunks.size();
    clock_.resize(size_t(p_));
    sim_.stages.resize(size_t(p_));
    fwd_ready_.assign(n, std::vector<double>(size_t(m_), kUnset));
    bwd_ready_ = fwd_ready_;
    head_.assign(n, std::vector<size_t>(size_t(m_), kNoBuffer));
    output_ = head_cast_ = head_rest_ = head_;
    kept_.resize(n);
    for (size_t vs = 0; vs < n; ++vs)
      kept_[vs].assign(size_t(m_), std::vector<size_t>(set.chunks[vs].layers.size(), kNoBuffer));
    (void)v;
  }

  // Runs the schedules; returns the time the last stream of any stage ends.
  double run(const std::vector<std::vector<PipeStep>>& schedule) {
    std::vector<size_t> pos(schedule.size(), 0);
    for (bool progress = true; progress;) {
      progress = false;
      for (size_t i = 0; i < schedule.size(); ++i)
        for (; pos[i] < schedule[i].size() && ready(schedule[i][pos[i]], int64_t(i)); ++pos[i]) {
          const PipeStep& s = schedule[i][pos[i]];
          const Chunk& c = set_.chunks[size_t(s.chunk * p_) + i];
          s.forward ? forward(c, s.microbatch) : backward(c, s.microbatch);
          progress = true;
        }
    }
    for (size_t i = 0; i < schedule.size(); ++i)
      if (pos[i] < schedule[i].size()) throw std::logic_error("pipeline schedule deadlocked");
    double end = 0;
    for (const auto& ck : clock_) end = std::max({end, ck.compute, ck.out, ck.in});
    return end;
  }

  size_t alloc(int64_t stage, std::string name, MemCategory c, double bytes, double t) {
    if (bytes <= 0) return kNoBuffer;
    sim_.buffers.push_back({stage, std::move(name), c, bytes, t, kUnset});
    return sim_.buffers.size() - 1;
  }
  void release(size_t id, double t) {
    if (id != kNoBuffer) sim_.buffers[id].free_s = t;
  }
  // A p2p send of the stage's boundary tensor (its buffer alive while it runs); returns its end.
  double send(const Chunk& c, const char* what, int64_t mb, double start, double dur) {
    if (dur <= 0) return start;
    const size_t buf = alloc(c.stage, buffer_name(what, mb, -1), MemCategory::comm, c.p2p_bytes, start);
    const double end = emit(c, SimStream::p2p, SimOp::send, mb, -1, start, dur);
    release(buf, end);
    return end;
  }
  // Adds an event; returns its end.
  double emit(const Chunk& c, SimStream s, SimOp op, int64_t mb, int64_t layer, double start, double dur) {
    sim_.events.push_back({c.stage, s, op, mb, c.chunk, layer, start, start + dur});
    if (s == SimStream::compute) sim_.stages[size_t(c.stage)].compute_busy_s += dur;
    return start + dur;
  }

 private:
  struct Clock {
    double compute = 0, out = 0, in = 0;  // when each stream is next free
    double out_prev_end = 0;              // end of the device-to-host copy before the last one
  };

  bool ready(const PipeStep& s, int64_t stage) const {
    const size_t vs = size_t(s.chunk * p_ + stage);
    if (s.forward) return vs == 0 || fwd_ready_[vs - 1][size_t(s.microbatch)] != kUnset;
    return vs + 1 == set_.chunks.size() || bwd_ready_[vs + 1][size_t(s.microbatch)] != kUnset;
  }

  // Waits on the compute stream until `until`; the wait counts as exposed copy time.
  void wait_link(const Chunk& c, double& t, double until) {
    if (until <= t) return;
    sim_.stages[size_t(c.stage)].exposed_copy_s += until - t;
    t = until;
  }

  void forward(const Chunk& c, int64_t mb);
  void backward(const Chunk& c, int64_t mb);
  double prefetch(const Chunk& c, int64_t mb, size_t i, double at, size_t& buffer);
  void replay_chunk(const Chunk& c, int64_t mb, size_t i, double t, std::vector<size_t>& replay);

  const ChunkSet& set_;
  int64_t p_, m_;
  Simulation& sim_;
  std::vector<Clock> clock_;
  std::vector<std::vector<double>> fwd_ready_, bwd_ready_;  // [virtual stage][microbatch]: output arrived
  std::vector<std::vector<size_t>> head_;                   // logits buffer per microbatch
  std::vector<std::vector<size_t>> head_cast_;              // the head's autocast weight copy per microbatch
  std::vector<std::vector<size_t>> head_rest_;  // the loss's backward bytes beyond its forward's (head_forward_bytes)
  std::vector<std::vector<size_t>> output_;     // stage output held for the backward (--framework)
  std::vector<std::vector<std::vector<size_t>>> kept_;  // [virtual stage][microbatch][layer]
};

// One forward step: per layer its forward; an offloaded layer's activations
// are staged on the GPU and copied out on the device-to-host stream while the
// next layer runs. Double buffering: a layer that offloads starts only when at
// most one earlier copy is still in flight. Then the LM head on the last
// stage and the send to the next stage (synchronous, as Megatron's 1F1B).
void Engine::forward(const Chunk& c, int64_t mb) {
  Clock& ck = clock_[size_t(c.stage)];
  const size_t vs = size_t(c.virtual_index);
  double t = std::max(ck.compute, vs > 0 ? fwd_ready_[vs - 1][size_t(mb)] : 0.0);
  wait_link(c, t, ck.out);           // copies out of the previous step finish first
  std::vector<size_t> cached_casts;  // autocast's, until the forward leaves it after the loss's forward
  for (size_t i = 0; i < c.layers.size(); ++i) {
    const int64_t g = c.layers[i].layer;
    const LayerCost& lc = c.layers[i].cost;
    size_t staging = kNoBuffer;
    if (lc.offload_bytes > 0) {
      wait_link(c, t, ck.out_prev_end);
      staging = alloc(c.stage, buffer_name("offload out", mb, g), MemCategory::offload, lc.offload_bytes, t);
    }
    kept_[vs][size_t(mb)][i] = alloc(c.stage, buffer_name("kept", mb, g), MemCategory::activations, lc.kept_bytes, t);
    if (c.head_forward_bytes > 0)
      cached_casts.push_back(
          alloc(c.stage, buffer_name("autocast cache", mb, g), MemCategory::weights, lc.forward_held_bytes, t));
    // a kept layer's forward holds more than it keeps while it runs (LayerCost::forward_peak_bytes)
    const double forward_extra = lc.forward_peak_bytes - lc.kept_bytes;
    const size_t working = forward_extra > 0 ? alloc(c.stage, buffer_name("forward working", mb, g),
                                                     MemCategory::working, forward_extra, t)
                                             : kNoBuffer;
    t = emit(c, SimStream::compute, SimOp::forward, mb, g, t, lc.fwd_s * c.forward_passes);
    if (working != kNoBuffer) release(working, t);
    if (staging != kNoBuffer) {
      const double start = std::max(t, ck.out);
      const double end =
          emit(c, SimStream::offload_out, SimOp::copy_out, mb, g, start, lc.offload_bytes / c.copy_bytes_per_s);
      ck.out_prev_end = ck.out;
      ck.out = end;
      release(staging, end);
    }
  }
  if (c.has_head) {
    wait_link(c, t, ck.out_prev_end);  // at most one copy out in flight under the head
    const double forward_bytes = c.head_forward_bytes > 0 ? c.head_forward_bytes : c.head_bytes;
    head_[vs][size_t(mb)] = alloc(c.stage, buffer_name("logits+loss", mb, -1), MemCategory::logits, forward_bytes, t);
    if (c.head_cast_bytes > 0)
      head_cast_[vs][size_t(mb)] =
          alloc(c.stage, buffer_name("head weight cast", mb, -1), MemCategory::weights, c.head_cast_bytes, t);
    t = emit(c, SimStream::compute, SimOp::head_forward, mb, -1, t, c.head_fwd_s);
    for (size_t id : cached_casts) release(id, t);
    head_rest_[vs][size_t(mb)] =
        alloc(c.stage, buffer_name("loss backward", mb, -1), MemCategory::logits, c.head_bytes - forward_bytes, t);
  }
  output_[vs][size_t(mb)] =
      alloc(c.stage, buffer_name("stage output", mb, -1), MemCategory::activations, c.stage_output_bytes, t);
  t = send(c, "send act", mb, t, c.send_fwd_s);
  fwd_ready_[vs][size_t(mb)] = t;
  ck.compute = t;
}

// Host-to-device copy of layer i's offloaded activations, issued at `at`.
double Engine::prefetch(const Chunk& c, int64_t mb, size_t i, double at, size_t& buffer) {
  Clock& ck = clock_[size_t(c.stage)];
  const LayerCost& lc = c.layers[i].cost;
  const double start = std::max(at, ck.in);
  buffer =
      alloc(c.stage, buffer_name("offload in", mb, c.layers[i].layer), MemCategory::offload, lc.offload_bytes, start);
  ck.in = emit(c, SimStream::offload_in, SimOp::copy_in, mb, c.layers[i].layer, start,
               lc.offload_bytes / c.copy_bytes_per_s);
  return ck.in;
}

// Full recompute in chunks (Megatron's uniform method): when layer i ends a
// chunk, its backward starts by replaying the whole chunk; the earlier
// layers' replayed tensors wait for their own backward (LayerSums::add).
void Engine::replay_chunk(const Chunk& c, int64_t mb, size_t i, double t, std::vector<size_t>& replay) {
  const auto in_chunk = [&](size_t j) { return c.layers[j].cost.chunk_replay_bytes > 0; };
  if (!in_chunk(i) || c.layers[i].cost.chunk_start) return;
  if (i + 1 < c.layers.size() && in_chunk(i + 1) && !c.layers[i + 1].cost.chunk_start) return;  // not its last
  for (size_t j = i; j-- > 0 && in_chunk(j);) {
    const LayerCost& lc = c.layers[j].cost;
    replay[j] =
        alloc(c.stage, buffer_name("replayed", mb, c.layers[j].layer), MemCategory::working, lc.chunk_replay_bytes, t);
    if (lc.chunk_start) break;
  }
}

// One backward step: the LM head's backward on the last stage, then per layer
// from the last: wait for its offloaded activations (fetched one layer
// ahead), allocate its working set (recomputed tensors and gradients,
// layer_cost's transient), recompute, backward, free its kept activations
// (under ordered backward; otherwise the step frees them all at its end, as
// estimate puts the largest working set on top of every kept activation).
// The stage output the framework holds goes at the end of the step.
void Engine::backward(const Chunk& c, int64_t mb) {
  Clock& ck = clock_[size_t(c.stage)];
  const size_t vs = size_t(c.virtual_index);
  double t = std::max(ck.compute, vs + 1 < set_.chunks.size() ? bwd_ready_[vs + 1][size_t(mb)] : 0.0);
  wait_link(c, t, ck.out);  // staged copies out of earlier forwards finish first
  // gradients allocated in backward (hf, one microbatch): the head's and each layer's stay from
  // its backward to the step (finish releases them)
  const bool late_grads = c.grads_absent_bytes > 0 && mb == 0;
  if (c.has_head) {
    t = emit(c, SimStream::compute, SimOp::head_backward, mb, -1, t, c.head_bwd_s);
    release(head_[vs][size_t(mb)], t);
    release(head_rest_[vs][size_t(mb)], t);
    release(head_cast_[vs][size_t(mb)], t);
    if (late_grads) alloc(c.stage, buffer_name("gradients", mb, -1), MemCategory::gradients, c.head_grads_bytes, t);
  }
  const size_t n = c.layers.size();
  std::vector<size_t> in_buf(n, kNoBuffer), replay(n, kNoBuffer);
  std::vector<double> in_ready(n, 0);
  const auto next_offloaded = [&](size_t below) {  // highest offloaded layer index < below, or n
    for (size_t j = below; j-- > 0;)
      if (c.layers[j].cost.offload_bytes > 0) return j;
    return n;
  };
  size_t next = next_offloaded(n);
  if (next < n) in_ready[next] = prefetch(c, mb, next, t, in_buf[next]);
  for (size_t i = n; i-- > 0;) {
    const int64_t g = c.layers[i].layer;
    const LayerCost& lc = c.layers[i].cost;
    if (lc.offload_bytes > 0) wait_link(c, t, in_ready[i]);
    if (next >= i && next < n) {  // fetch the next offloaded layer below while this one runs
      next = next_offloaded(i);
      if (next < n) in_ready[next] = prefetch(c, mb, next, t, in_buf[next]);
    }
    replay_chunk(c, mb, i, t, replay);
    release(replay[i], t);  // now in the layer's working set
    const size_t work =
        alloc(c.stage, buffer_name("working", mb, g), MemCategory::working, lc.transient_bytes - lc.offload_bytes, t);
    if (lc.recompute_s > 0) t = emit(c, SimStream::compute, SimOp::recompute, mb, g, t, lc.recompute_s);
    t = emit(c, SimStream::compute, SimOp::backward, mb, g, t, lc.bwd_s);
    release(work, t);
    if (late_grads) alloc(c.stage, buffer_name("gradients", mb, g), MemCategory::gradients, lc.grads_bytes, t);
    if (c.ordered_backward) release(kept_[vs][size_t(mb)][i], t);
    release(in_buf[i], t);
  }
  if (!c.ordered_backward)
    for (size_t id : kept_[vs][size_t(mb)]) release(id, t);
  release(output_[vs][size_t(mb)], t);
  t = send(c, "send grad", mb, t, c.send_bwd_s);
  bwd_ready_[vs][size_t(mb)] = t;
  ck.compute = t;
}

// Weights, gradients (Megatron's contiguous grad buffer), optimizer state and
// the framework's runtime buffers live the whole iteration; the optimizer step
// runs on every stage after the model-parallel gradient-norm reduction, i.e.
// once all backwards are done, with its temporary (--framework) alive while it runs.
void finish(Simulation& sim, Engine& engine, const ChunkSet& set, const HardwareSpec& hw, double backward_end) {
  const int64_t p = set.training.pp;
  auto stage_static = std::vector<StaticBytes>(size_t(p));
  std::vector<double> runtime(size_t(p), 0.0), step_temp(size_t(p), 0.0), late_grads(size_t(p), 0.0),
      casts(size_t(p), 0.0);
  for (const Chunk& c : set.chunks) {
    late_grads[size_t(c.stage)] += c.grads_absent_bytes;
    casts[size_t(c.stage)] += c.autocast_cast_bytes - c.head_cast_bytes;
    StaticBytes& s = stage_static[size_t(c.stage)];
    s.weights += c.static_bytes.weights, s.gradients += c.static_bytes.gradients;
    s.optimizer += c.static_bytes.optimizer;
    runtime[size_t(c.stage)] = std::max(runtime[size_t(c.stage)], c.runtime_bytes);  // one set per GPU
    step_temp[size_t(c.stage)] += c.optimizer_step_bytes;
  }
  double end = backward_end;
  for (int64_t i = 0; i < p; ++i) {
    const StaticBytes& s = stage_static[size_t(i)];
    StageMemory mem;
    mem.weights = s.weights, mem.gradients = s.gradients, mem.optimizer = s.optimizer;
    const double opt_s = optimizer_step_s(mem, set.training, hw);
    const Chunk& c = set.chunks[size_t(i)];
    const double step_end = engine.emit(c, SimStream::compute, SimOp::optimizer, -1, -1, backward_end, opt_s);
    if (step_temp[size_t(i)] > 0)
      engine.release(
          engine.alloc(i, "optimizer step temporary", MemCategory::optimizer, step_temp[size_t(i)], backward_end),
          step_end);
    end = std::max(end, step_end);
  }
  sim.iteration_s = end;
  // the head's and the layers' gradients allocated in backward (Engine::backward) stay to the end
  std::vector<double> layer_grads(size_t(p), 0.0);
  for (SimBuffer& b : sim.buffers)
    if (b.category == MemCategory::gradients && b.free_s == kUnset) {
      b.free_s = end;
      layer_grads[size_t(b.stage)] += b.bytes;
    }
  for (int64_t i = 0; i < p; ++i) {
    const StaticBytes& s = stage_static[size_t(i)];
    engine.release(engine.alloc(i, "weights", MemCategory::weights, s.weights, 0), end);
    // gradients allocated in backward (hf): the rest (the embedding's) when the stage's backward ends
    double rest_from = 0;
    if (late_grads[size_t(i)] > 0) {
      for (const SimEvent& ev : sim.events)
        if (ev.stage == i && ev.op == SimOp::backward) rest_from = std::max(rest_from, ev.end_s);
    }
    engine.release(
        engine.alloc(i, "gradients", MemCategory::gradients, s.gradients - layer_grads[size_t(i)], rest_from), end);
    if (casts[size_t(i)] > 0)
      engine.release(engine.alloc(i, "autocast weight casts", MemCategory::weights, casts[size_t(i)], 0), backward_end);
    engine.release(engine.alloc(i, "optimizer state", MemCategory::optimizer, s.optimizer, 0), end);
    if (runtime[size_t(i)] > 0)
      engine.release(engine.alloc(i, "runtime buffers", MemCategory::runtime, runtime[size_t(i)], 0), end);
  }
}

}  // namespace

Simulation simulate(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, const Plan& plan,
                    const SimOptions& opts) {
  const ChunkSet set = sim_detail::build_chunks(m, hw, t, plan, opts.virtual_stages);
  Simulation sim;
  sim.microbatches = set.training.microbatches();
  sim.virtual_stages = opts.virtual_stages;
  sim.estimate = set.estimate;
  Engine engine(set, opts.virtual_stages, sim);
  const double backward_end = engine.run(pipeline_schedule(set.training.pp, sim.microbatches, opts.virtual_stages));
  finish(sim, engine, set, hw, backward_end);
  for (size_t i = 0; i < sim.stages.size(); ++i)
    sim_detail::build_timeline(sim.stages[i], int64_t(i), sim.buffers, opts.top_buffers);
  return sim;
}

bool fits_budget(const Simulation& sim) {
  return std::all_of(sim.stages.begin(), sim.stages.end(),
                     [&](const StageTimeline& st) { return st.peak.bytes <= sim.estimate.budget_bytes; });
}

}  // namespace remat
