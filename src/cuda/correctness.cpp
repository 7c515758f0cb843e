#include "correctness.hpp"

#include <cstring>

#include "check.hpp"
#include "ops.hpp"
#include "presets.hpp"
#include "reference.hpp"

namespace remat::cuda {

using nlohmann::json;

namespace {

ref::Vec to_host(Ctx& c, const void* p, int64_t elems) {
  std::vector<uint16_t> raw(elems);
  CUDA_CHECK(cudaMemcpyAsync(raw.data(), p, size_t(2 * elems), cudaMemcpyDeviceToHost, c.stream()));
  CUDA_CHECK(cudaStreamSynchronize(c.stream()));
  ref::Vec v(elems);
  for (int64_t i = 0; i < elems; ++i) {
    const uint32_t bits = uint32_t(raw[i]) << 16;
    std::memcpy(&v[i], &bits, 4);
  }
  return v;
}

ref::Vec filled(Ctx& c, int64_t elems, uint64_t seed) {
  Buf b = c.act("check.fill", bf16_bytes(elems));
  ops::fill(c, b, seed, 1.f);
  ref::Vec v = to_host(c, b.ptr, elems);
  c.drop(b);
  return v;
}

ref::RefDims ref_dims(const Dims& d) {
  ref::RefDims r;
  r.b = d.b;
  r.s = d.s;
  r.h = d.hidden_size;
  r.inter = d.intermediate_size;
  r.heads = d.num_attention_heads;
  r.kv_heads = d.num_key_value_heads;
  r.head_dim = d.head_dim;
  r.out = d.out_features ? d.out_features : d.hidden_size;
  r.moe_inter = d.moe_intermediate_size;
  r.experts = d.n_routed_experts;
  r.topk = d.num_experts_per_tok;
  r.shared = d.n_shared_experts;
  r.q_lora = d.q_lora_rank;
  r.kv_lora = d.kv_lora_rank;
  r.nope = d.qk_nope_head_dim;
  r.rope = d.qk_rope_head_dim;
  r.v_dim = d.v_head_dim;
  return r;
}

json metrics_row(const std::string& name, const ref::Vec& test, const ref::Vec& want, bool& pass) {
  const ref::Metrics m = ref::metrics(test, want);
  const bool ok = m.max_abs <= kMaxTol * m.ref_max_abs && m.mean_abs <= kMeanTol * m.ref_mean_abs;
  pass = pass && ok;
  return {{"tensor", name},
          {"max_abs", m.max_abs},
          {"mean_abs", m.mean_abs},
          {"mean_rel", m.mean_rel},
          {"ref_max_abs", m.ref_max_abs},
          {"ref_mean_abs", m.ref_mean_abs},
          {"pass", ok}};
}

json reference_check(Ctx& c, const std::string& b, const Dims& d, const RunOpts& o) {
  auto blk = make_block(b, d);
  blk->init(c, o.seed);
  Buf dx = run_once(c, *blk, Strategy::none, o.seed);
  std::map<std::string, ref::Vec> w;
  for (auto& p : blk->params()) w[p.name] = to_host(c, p.w.ptr, p.elems);
  const ref::Vec x = filled(c, blk->input_elems(), o.seed), dy = filled(c, blk->output_elems(), o.seed + 7);
  const ref::Grads want = ref::block_grads(b, ref_dims(d), x, dy, w);
  bool pass = true;
  json rows = json::array();
  rows.push_back(metrics_row("dx", to_host(c, dx.ptr, blk->input_elems()), want.dx, pass));
  for (auto& p : blk->params())
    rows.push_back(metrics_row(p.name, to_host(c, p.g.ptr, p.elems), want.dw.at(p.name), pass));
  c.drop(dx);
  blk->release_params(c);
  return {{"pass", pass},
          {"tolerance", {{"max_abs_over_ref_max", kMaxTol}, {"mean_abs_over_ref_mean", kMeanTol}}},
          {"tensors", rows}};
}

// Gradients (dx and every weight gradient, on the host) of one forward + backward.
std::vector<std::pair<std::string, ref::Vec>> host_grads(Ctx& c, const std::string& b, const Dims& d, uint64_t seed) {
  auto blk = make_block(b, d);
  blk->init(c, seed);
  Buf dx = run_once(c, *blk, Strategy::streambp, seed);
  std::vector<std::pair<std::string, ref::Vec>> out{{"dx", to_host(c, dx.ptr, blk->input_elems())}};
  for (auto& p : blk->params()) out.push_back({p.name, to_host(c, p.g.ptr, p.elems)});
  c.drop(dx);
  blk->release_params(c);
  return out;
}

}  // namespace

json streambp_check(Ctx& c, const RunOpts& o, int64_t chunks) {
  json out = json::array();
  for (const std::string b : {"lm_head", "streambp_layer"}) {
    Dims d = small_dims(b);
    json row = {{"block", b}, {"dims", dims_json(d)}, {"chunks", chunks}, {"reference", "chunks = 1"}};
    try {
      const auto want = host_grads(c, b, d, o.seed);
      d.chunks = chunks;
      const auto got = host_grads(c, b, d, o.seed);
      bool pass = true;
      json rows = json::array();
      for (size_t i = 0; i < want.size(); ++i)
        rows.push_back(metrics_row(want[i].first, got[i].second, want[i].second, pass));
      row["pass"] = pass;
      row["tolerance"] = {{"max_abs_over_ref_max", kMaxTol}, {"mean_abs_over_ref_mean", kMeanTol}};
      row["tensors"] = rows;
    } catch (const std::exception& e) {
      row["error"] = e.what();
      row["pass"] = false;
    }
    std::fprintf(stderr, "check streambp %s: %s\n", b.c_str(), row.dump().substr(0, 300).c_str());
    out.push_back(row);
  }
  return out;
}

json run_correctness(Ctx& c, const RunOpts& o) {
  json out = json::array();
  RunOpts small = o;
  small.warmup = 1;
  small.reps = 2;
  small.profiled_reps = 1;
  const std::vector<Strategy> all = {Strategy::none, Strategy::standard, Strategy::eagle, Strategy::offload};
  for (const auto& b : block_names()) {
    Dims d = small_dims(b);
    json row = {{"block", b}, {"dims", dims_json(d)}, {"routing", b == "moe" ? "balanced" : "n/a"}};
    try {
      json cases = run_block(c, b, d, all, small);
      json bits = json::object();
      for (auto& cs : cases) {
        const std::string st = cs["strategy"];
        if (st == "none")
          bits["none_rerun"] = cs["gradients"]["rerun"]["all_bit_equal"];
        else
          bits[st] = cs["gradients"]["all_bit_equal"];
      }
      row["bit_equal_vs_none"] = bits;
      row["fp32_reference"] = reference_check(c, b, d, o);
    } catch (const std::exception& e) {
      row["error"] = e.what();
    }
    std::fprintf(stderr, "check %s: %s\n", b.c_str(), row.dump().substr(0, 300).c_str());
    out.push_back(row);
  }
  return out;
}

}  // namespace remat::cuda
