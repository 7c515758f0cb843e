#include "bench.hpp"

#include <algorithm>
#include <map>

#include "check.hpp"
#include "kernels.hpp"
#include "ops.hpp"

namespace remat::cuda {

using nlohmann::json;

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

json named_list(const std::vector<NamedBytes>& v) {
  json a = json::array();
  for (const auto& nb : v) a.push_back({{"name", nb.name}, {"bytes", nb.bytes}});
  return a;
}

// Gradients of one strategy, kept for comparison: dx and every weight gradient.
struct GradSet {
  std::vector<std::string> names;
  std::vector<Buf> bufs;
};

struct IterResult {
  double forward_s = 0, forward_with_offload_s = 0, prefetch_s = 0, backward_s = 0, recompute_s = 0;
  std::vector<double> recompute_segments_s;
  int64_t kept_bytes = 0, peak_bytes = 0, forward_peak_bytes = 0, leaked_bytes = 0;
  Ctx::OffloadTimes offload;
  std::vector<NamedBytes> kept_list, peak_list;
};

float elapsed_s(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  return ms * 1e-3f;
}

struct Events {
  cudaEvent_t e[5];
  Events() {
    for (auto& x : e) CUDA_CHECK(cudaEventCreate(&x));
  }
  ~Events() {
    for (auto& x : e) cudaEventDestroy(x);
  }
};

// One forward + backward. When `keep_dx` the caller gets dx (and frees it).
IterResult iterate(Ctx& c, Block& blk, Strategy st, uint64_t seed, Buf* keep_dx) {
  IterResult r;
  Events ev;
  Arena& a = c.arena();
  c.clear_ops();
  c.phase(Phase::forward);  // kernels recorded during forward are labelled forward (marks reset in backward)
  c.set_offload(st == Strategy::offload);
  Buf x = c.act("x", bf16_bytes(blk.input_elems()));
  ops::fill(c, x, seed, 1.f);
  CUDA_CHECK(cudaStreamSynchronize(c.stream()));
  a.reset_peak(MemClass::activation);
  Buf y;
  CUDA_CHECK(cudaEventRecord(ev.e[0], c.stream()));
  blk.forward(c, st, x, y);
  CUDA_CHECK(cudaEventRecord(ev.e[1], c.stream()));
  c.finish_offload();
  CUDA_CHECK(cudaEventRecord(ev.e[2], c.stream()));
  r.forward_peak_bytes = a.peak_bytes(MemClass::activation);
  c.drop(y);
  r.kept_bytes = a.live_bytes(MemClass::activation);
  r.kept_list = a.live_list(MemClass::activation);
  c.prefetch();
  CUDA_CHECK(cudaEventRecord(ev.e[3], c.stream()));
  Buf dy = c.act("dy", bf16_bytes(blk.output_elems()));
  ops::fill(c, dy, seed + 7, 1.f);
  a.reset_peak(MemClass::activation);
  Buf dx;
  c.begin_phases(Phase::backward);
  blk.backward(c, st, dy, dx);
  auto segs = c.end_phases();
  r.peak_bytes = a.peak_bytes(MemClass::activation);
  r.peak_list = a.peak_snapshot();
  r.forward_s = elapsed_s(ev.e[0], ev.e[1]);
  r.forward_with_offload_s = elapsed_s(ev.e[0], ev.e[2]);
  r.prefetch_s = elapsed_s(ev.e[2], ev.e[3]);
  for (auto& [ph, sec] : segs) {
    if (ph == Phase::recompute) {
      r.recompute_s += sec;
      r.recompute_segments_s.push_back(sec);
    } else {
      r.backward_s += sec;
    }
  }
  if (st == Strategy::offload) r.offload = c.offload_times();
  c.drop(dy);
  if (keep_dx)
    *keep_dx = dx;
  else
    c.drop(dx);
  r.leaked_bytes = a.live_bytes(MemClass::activation) - (keep_dx ? keep_dx->bytes : 0);
  c.clear_offload();
  return r;
}

GradSet snapshot_grads(Ctx& c, Block& blk, Buf& dx) {
  GradSet g;
  auto add = [&](const std::string& n, const Buf& src) {
    Buf b = c.arena().alloc("ref." + n, src.bytes, MemClass::check);
    CUDA_CHECK(cudaMemcpyAsync(b.ptr, src.ptr, size_t(src.bytes), cudaMemcpyDeviceToDevice, c.stream()));
    g.names.push_back(n);
    g.bufs.push_back(b);
  };
  add("dx", dx);
  for (auto& p : blk.params()) add(p.name, p.g);
  return g;
}

void release(Ctx& c, GradSet& g) {
  for (auto& b : g.bufs) c.arena().release(b);
  g.bufs.clear();
}

json compare_grads(Ctx& c, Block& blk, Buf& dx, const GradSet& ref) {
  Buf out = c.arena().alloc("compare.out", 4 * sizeof(double), MemClass::check);
  json rows = json::array();
  bool all_equal = true;
  for (size_t i = 0; i < ref.names.size(); ++i) {
    const Buf& test = i == 0 ? dx : blk.params()[i - 1].g;
    const int64_t n = test.bytes / 2;
    k::compare_bf16(test.ptr, ref.bufs[i].ptr, n, out.as<double>(), c.stream());
    double h[4];
    CUDA_CHECK(cudaMemcpyAsync(h, out.ptr, sizeof(h), cudaMemcpyDeviceToHost, c.stream()));
    CUDA_CHECK(cudaStreamSynchronize(c.stream()));
    const bool eq = h[3] == 0;
    all_equal = all_equal && eq;
    rows.push_back({{"tensor", ref.names[i]}, {"elements", n}, {"bit_equal", eq}, {"max_abs", h[0]},
                    {"mean_abs", h[1] / double(n)}, {"mean_rel", h[2] / double(n)},
                    {"mismatched_elements", int64_t(h[3])}});
  }
  c.arena().release(out);
  return {{"reference", "none"}, {"all_bit_equal", all_equal}, {"tensors", rows}};
}

// Per-op medians over the profiled reps, in op order.
json kernel_table(Ctx& c, Block& blk, Strategy st, const RunOpts& o) {
  std::vector<std::vector<double>> times;
  std::vector<OpRecord> first;
  for (int r = 0; r < o.profiled_reps; ++r) {
    c.set_profiling(true);
    iterate(c, blk, st, o.seed, nullptr);
    c.set_profiling(false);
    CUDA_CHECK(cudaDeviceSynchronize());
    auto& ops = c.ops();
    if (r == 0) {
      first = ops;
      times.assign(ops.size(), {});
    }
    for (size_t i = 0; i < ops.size() && i < times.size(); ++i) times[i].push_back(elapsed_s(ops[i].start, ops[i].stop));
  }
  json rows = json::array();
  for (size_t i = 0; i < first.size(); ++i) {
    const OpInfo& in = first[i].info;
    const double t = median(times[i]);
    rows.push_back({{"name", in.name}, {"kind", in.kind}, {"phase", phase_name(first[i].phase)}, {"m", in.m},
                    {"n", in.n}, {"k", in.k}, {"calls", in.calls}, {"flops", in.flops},
                    {"bytes_moved", in.bytes_moved}, {"time_s", t},
                    {"tflops", t > 0 ? in.flops / t * 1e-12 : 0.0}, {"gbps", t > 0 ? in.bytes_moved / t * 1e-9 : 0.0}});
  }
  return rows;
}

json timing_json(const std::vector<IterResult>& it, Strategy st, const std::vector<std::string>& subs) {
  std::vector<double> f, fo, b, r, pf, tot, d2h, h2d;
  std::vector<std::vector<double>> seg(subs.size());
  for (const auto& x : it) {
    f.push_back(x.forward_s);
    fo.push_back(x.forward_with_offload_s);
    b.push_back(x.backward_s);
    r.push_back(x.recompute_s);
    pf.push_back(x.prefetch_s);
    tot.push_back(x.forward_s + x.backward_s + x.recompute_s);
    d2h.push_back(x.offload.d2h_s);
    h2d.push_back(x.offload.h2d_s);
    for (size_t i = 0; i < subs.size() && i < x.recompute_segments_s.size(); ++i)
      seg[i].push_back(x.recompute_segments_s[i]);
  }
  json j = {{"forward_s", median(f)},   {"backward_s", median(b)},          {"recompute_s", median(r)},
            {"total_s", median(tot)},   {"forward_min_s", *std::min_element(f.begin(), f.end())},
            {"samples", int(it.size())}};
  json per = json::object();
  for (size_t i = 0; i < subs.size(); ++i) per[subs[i]] = median(seg[i]);
  j["recompute_per_block_s"] = per;
  if (st == Strategy::offload) {
    const double exposed = std::max(0.0, median(fo) - median(f));
    const double copy = median(d2h);
    j["offload"] = {{"d2h_s", copy},
                    {"h2d_s", median(h2d)},
                    {"bytes", it.back().offload.bytes},
                    {"forward_with_copies_s", median(fo)},
                    {"exposed_d2h_s", exposed},
                    {"overlap_fraction", copy > 0 ? std::clamp(1.0 - exposed / copy, 0.0, 1.0) : 0.0},
                    {"prefetch_s", median(pf)},
                    {"total_with_copies_s", median(fo) + median(pf) + median(b)}};
  }
  return j;
}

}  // namespace

json dims_json(const Dims& d) {
  return {{"model", d.model},
          {"hidden_size", d.hidden_size},
          {"intermediate_size", d.intermediate_size},
          {"num_attention_heads", d.num_attention_heads},
          {"num_key_value_heads", d.num_key_value_heads},
          {"head_dim", d.head_dim},
          {"moe_intermediate_size", d.moe_intermediate_size},
          {"n_routed_experts", d.n_routed_experts},
          {"num_experts_per_tok", d.num_experts_per_tok},
          {"n_shared_experts", d.n_shared_experts},
          {"q_lora_rank", d.q_lora_rank},
          {"kv_lora_rank", d.kv_lora_rank},
          {"qk_nope_head_dim", d.qk_nope_head_dim},
          {"qk_rope_head_dim", d.qk_rope_head_dim},
          {"v_head_dim", d.v_head_dim},
          {"out_features", d.out_features},
          {"vocab_size", d.vocab_size},
          {"chunks", d.chunks},
          {"b", d.b},
          {"s", d.s}};
}

json run_block(Ctx& c, const std::string& block, const Dims& d, const std::vector<Strategy>& strategies,
               const RunOpts& o) {
  auto blk = make_block(block, d);
  blk->init(c, o.seed);
  const int64_t wbytes = c.arena().live_bytes(MemClass::weight);
  const int64_t gbytes = c.arena().live_bytes(MemClass::weight_grad);
  json out = json::array();
  GradSet ref;
  json none_rerun;
  for (Strategy st : strategies) {
    std::vector<IterResult> its;
    Buf dx;
    c.arena().set_snapshot(true);
    for (int i = 0; i < o.warmup; ++i) its.push_back(iterate(c, *blk, st, o.seed, nullptr));
    const IterResult mem = its.back();
    c.arena().set_snapshot(false);
    its.clear();
    json grads;
    for (int i = 0; i < o.reps; ++i) {
      const bool last = i + 1 == o.reps;
      its.push_back(iterate(c, *blk, st, o.seed, last ? &dx : nullptr));
    }
    if (st == Strategy::none && ref.bufs.empty()) {
      ref = snapshot_grads(c, *blk, dx);
      c.drop(dx);
      Buf dx2;
      iterate(c, *blk, st, o.seed, &dx2);
      none_rerun = compare_grads(c, *blk, dx2, ref);
      c.drop(dx2);
    } else if (!ref.bufs.empty()) {
      grads = compare_grads(c, *blk, dx, ref);
      c.drop(dx);
    } else {
      c.drop(dx);
    }
    json row = {{"block", block}, {"strategy", strategy_name(st)}, {"dims", dims_json(d)},
                {"sub_blocks", blk->sub_blocks()}};
    row.update(timing_json(its, st, blk->sub_blocks()));
    row["kept_bytes"] = mem.kept_bytes;
    row["peak_bytes"] = mem.peak_bytes;
    row["forward_peak_bytes"] = mem.forward_peak_bytes;
    row["weight_bytes"] = wbytes;
    row["weight_grad_bytes"] = gbytes;
    row["leaked_bytes"] = mem.leaked_bytes;
    row["kept_buffers"] = named_list(mem.kept_list);
    row["peak_buffers"] = named_list(mem.peak_list);
    row["kernels"] = kernel_table(c, *blk, st, o);
    if (st == Strategy::none)
      row["gradients"] = {{"reference", "none (itself, rerun)"}, {"rerun", none_rerun}};
    else if (!grads.is_null())
      row["gradients"] = grads;
    out.push_back(row);
  }
  release(c, ref);
  blk->release_params(c);
  return out;
}

}  // namespace remat::cuda

namespace remat::cuda {
Buf run_once(Ctx& c, Block& blk, Strategy st, uint64_t seed) {
  Buf dx;
  iterate(c, blk, st, seed, &dx);
  return dx;
}
}  // namespace remat::cuda
