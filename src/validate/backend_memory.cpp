// remat-bench's device memory per case, replayed from src/cuda/README.md
// ("Memory accounting"): each block's backward is the README's ordered list
// of allocations (+) and frees (-); kept is what is alive after forward, peak
// the largest running sum from dy's allocation to the end of backward.
// Activation sizes come from the exact blocks (src/cost/exact_blocks*.cpp);
// gradients, workspaces and the backend's own bookkeeping are added here.
//
// Where the backend and the exact blocks differ:
// - the backend's RMSNorm backward recomputes 1/rms from x, so the exact
//   blocks' fp32 `rstd` tensors are not kept (real code, e.g. Apex/TE, keeps
//   them: 4 bytes per row, under 0.1% of any block here);
// - the backend keeps five int32/fp32 routing arrays per routed copy where the
//   exact blocks keep two (routing_map, probs);
// - RoPE is not run by the backend (no extra buffers either way).
#include "remat/validate/backend_memory.hpp"

#include <algorithm>
#include <cmath>

#include "remat/cost/exact_blocks.hpp"
#include "remat/spec/problems.hpp"

namespace remat {

namespace {

constexpr double kBf16 = 2, kFp32 = 4;

// The backend's arena, counted as the README counts it: requested bytes of
// live activation buffers, peak tracked from begin_backward() on.
class ArenaTrace {
 public:
  void add(const std::string& name, double bytes) {
    live_.push_back({name, bytes});
    current_ += bytes;
    if (tracking_ && current_ > peak_) peak_ = current_, at_peak_ = live_;
  }
  void free(const std::string& name) {
    auto it = std::find_if(live_.begin(), live_.end(), [&](const NamedBytes& b) { return b.name == name; });
    if (it == live_.end()) return;  // a name the strategy never allocated (e.g. y.recompute under eagle)
    current_ -= it->bytes;
    live_.erase(it);
  }
  void free_all(const std::vector<std::string>& names) {
    for (const auto& n : names) free(n);
  }
  void begin_backward() { tracking_ = true, peak_ = current_, at_peak_ = live_; }
  const std::vector<NamedBytes>& live() const { return live_; }
  double current() const { return current_; }
  double peak() const { return peak_; }
  const std::vector<NamedBytes>& at_peak() const { return at_peak_; }

 private:
  std::vector<NamedBytes> live_;
  double current_ = 0, peak_ = 0;
  std::vector<NamedBytes> at_peak_;
  bool tracking_ = false;
};

struct Mode {
  bool all = false;        // none, and offload after its prefetch: every saved buffer is on the device
  bool recompute = false;  // standard or eagle
  bool standard = false;   // standard replays the final linear / the flash forward
  bool eagle = false;
  bool offload = false;
};

Mode mode_of(const std::string& s) {
  Mode m;
  m.all = s == "none" || s == "offload";
  m.recompute = s == "standard" || s == "eagle";
  m.standard = s == "standard";
  m.eagle = s == "eagle";
  m.offload = s == "offload";
  return m;
}

// RMSNorm backward partials: 4 * ceil(T/16) * width (README: ws_norm).
double ws_norm(double tokens, double width) { return 4 * std::ceil(tokens / 16) * width; }

double tensor(const Block& b, const std::string& name) { return b.tensor_bytes(name); }

RankShape shape_of(const BackendCase& c) {
  RankShape r;  // one GPU: tp 1, no sequence parallelism; causal flash attention, fused SwiGLU
  r.b = double(c.b), r.s = double(c.s);
  return r;
}

// A buffer saved from forward to backward; `device_when_offloaded`: the
// backend leaves it on the GPU under offload (MoE's routing metadata).
struct Saved {
  std::string name;
  double bytes = 0;
  bool device_when_offloaded = false;
};

// One block: what its forward leaves alive under a strategy (the README's
// "kept" line, `none`'s for offload) and its backward after dy.
struct BlockTrace {
  std::vector<Saved> saved;
  double dy_bytes = 0;
};

void keep(BlockTrace& t, const std::string& name, double bytes, bool when = true) {
  if (when) t.saved.push_back({name, bytes, false});
}

// README "rmsnorm_linear (n = out_features)".
// kept: none x 2Th, xn 2Th; standard, eagle x.
// backward: +dy(2Tn); [R] +xn, [R][std] +y.recompute(2Tn); +dxn 2Th;
// -y.recompute -xn; +dx 2Th +norm.bwd.ws ws_norm(h) -norm.bwd.ws -dxn -x.
BlockTrace rmsnorm_linear_trace(const BackendCase& c, const Mode& m) {
  const Block blk = rmsnorm_linear_block(shape_of(c), c.model.hidden_size, c.out_features, "rmsnorm_linear");
  BlockTrace t;
  keep(t, "x", tensor(blk, "x"));
  keep(t, "xn", tensor(blk, "x_norm"), m.all);
  t.dy_bytes = double(c.b * c.s) * double(c.out_features) * kBf16;  // y = xn W^T
  return t;
}

void rmsnorm_linear_backward(ArenaTrace& a, const BackendCase& c, const Mode& m) {
  const Block blk = rmsnorm_linear_block(shape_of(c), c.model.hidden_size, c.out_features, "rmsnorm_linear");
  const double T = double(c.b * c.s), x = tensor(blk, "x"), xn = tensor(blk, "x_norm");
  if (m.recompute) a.add("xn", xn);
  if (m.standard) a.add("y.recompute", T * double(c.out_features) * kBf16);
  a.add("dxn", xn);
  a.free_all({"y.recompute", "xn"});
  a.add("dx", x), a.add("norm.bwd.ws", ws_norm(T, double(c.model.hidden_size)));
  a.free_all({"norm.bwd.ws", "dxn", "x"});
}

// README "mlp (I = intermediate_size)".
// kept: none x, xn 2Th, gate_up 4TI, act 2TI; standard, eagle x.
BlockTrace mlp_trace(const BackendCase& c, const Mode& m) {
  const Block blk = mlp_block(shape_of(c), c.model.hidden_size, c.model.intermediate_size);
  BlockTrace t;
  keep(t, "x", tensor(blk, "x"));
  keep(t, "xn", tensor(blk, "x_norm"), m.all);
  keep(t, "gate_up", tensor(blk, "gate") + tensor(blk, "up"), m.all);  // one [gate | up] buffer
  keep(t, "act", tensor(blk, "act"), m.all);
  t.dy_bytes = tensor(blk, "x");  // y is T x h like x
  return t;
}

// backward: +dy; [R] +xn +gate_up +act, [R][std] +y.recompute 2Th; +d_act 2TI
// -y.recompute -act +d_gate_up 4TI -d_act -gate_up +dxn 2Th -d_gate_up -xn +dx
// 2Th +ws_norm(h) -ws -dxn -x.
void mlp_backward(ArenaTrace& a, const BackendCase& c, const Mode& m) {
  const Block blk = mlp_block(shape_of(c), c.model.hidden_size, c.model.intermediate_size);
  const double T = double(c.b * c.s), x = tensor(blk, "x"), xn = tensor(blk, "x_norm");
  const double gate_up = tensor(blk, "gate") + tensor(blk, "up"), act = tensor(blk, "act");
  if (m.recompute) a.add("xn", xn), a.add("gate_up", gate_up), a.add("act", act);
  if (m.standard) a.add("y.recompute", x);
  a.add("d_act", act);
  a.free_all({"y.recompute", "act"});
  a.add("d_gate_up", gate_up);
  a.free_all({"d_act", "gate_up"});
  a.add("dxn", xn);
  a.free_all({"d_gate_up", "xn"});
  a.add("dx", x), a.add("norm.bwd.ws", ws_norm(T, double(c.model.hidden_size)));
  a.free_all({"norm.bwd.ws", "dxn", "x"});
}

double attention_ws(const BackendCase& c, double d_qk, bool gqa) {
  return attention_bwd_workspace_bytes(double(c.b), double(c.model.num_attention_heads), double(c.s), d_qk, gqa,
                                       c.deterministic_attention);
}

// README "gqa (nq = heads d, L = nq + 2 kv_heads d, lse = 4 heads T)".
// kept: none x, xn 2Th, qkv 2TL, o 2T nq, lse; standard x, o; eagle x, o, lse.
BlockTrace gqa_trace(const BackendCase& c, const Mode& m) {
  const Block blk = gqa_block(shape_of(c), c.model);
  BlockTrace t;
  keep(t, "x", tensor(blk, "x"));
  keep(t, "xn", tensor(blk, "x_norm"), m.all);
  keep(t, "qkv", tensor(blk, "q") + tensor(blk, "k") + tensor(blk, "v"), m.all);  // one fused GEMM output
  keep(t, "o", tensor(blk, "o"));                                                 // Wo's input, outside the block
  keep(t, "lse", tensor(blk, "lse"), m.all || m.eagle);
  t.dy_bytes = tensor(blk, "x");
  return t;
}

// backward: +dy +d_o (Wo dgrad/wgrad), [std] -o; [R] +xn +qkv, [R][std]
// +o.recompute +lse.recompute; +d_qkv +attn_bwd.ws -ws -d_o -qkv -lse -o +dxn
// -d_qkv -xn +dx +ws_norm(h) -ws -dxn -x.
void gqa_backward(ArenaTrace& a, const BackendCase& c, const Mode& m) {
  const Block blk = gqa_block(shape_of(c), c.model);
  const double T = double(c.b * c.s), x = tensor(blk, "x"), xn = tensor(blk, "x_norm");
  const double qkv = tensor(blk, "q") + tensor(blk, "k") + tensor(blk, "v"), o = tensor(blk, "o");
  const double d = double(gqa_head_dim(c.model));
  a.add("d_o", o);
  if (m.standard) a.free("o");
  if (m.recompute) a.add("xn", xn), a.add("qkv", qkv);
  if (m.standard) a.add("o.recompute", o), a.add("lse.recompute", tensor(blk, "lse"));
  a.add("d_qkv", qkv);
  a.add("attn_bwd.ws", attention_ws(c, d, c.model.num_key_value_heads < c.model.num_attention_heads));
  a.free_all({"attn_bwd.ws", "d_o", "qkv", "lse", "lse.recompute", "o", "o.recompute"});
  a.add("dxn", xn);
  a.free_all({"d_qkv", "xn"});
  a.add("dx", x), a.add("norm.bwd.ws", ws_norm(T, double(c.model.hidden_size)));
  a.free_all({"norm.bwd.ws", "dxn", "x"});
}

// MLA's buffers from the two exact blocks (H heads, dqk = nope + rope,
// C = q_lora + kv_lora + rope: the fused down projection's output).
struct MlaSizes {
  double T = 0, x = 0, xn = 0, latent = 0, q_latent_norm = 0, kv_latent_norm = 0;
  double q = 0, k = 0, k_nope = 0, v = 0, o = 0, lse = 0, d_qk = 0;
};

MlaSizes mla_sizes(const BackendCase& c) {
  const RankShape r = shape_of(c);
  const Block down = mla_down_block(r, c.model), up = mla_up_attn_block(r, c.model);
  MlaSizes z;
  z.T = double(c.b * c.s);
  z.x = tensor(down, "x"), z.xn = tensor(down, "x_norm");
  z.latent = tensor(up, "q_latent") + tensor(up, "kv_latent") + tensor(up, "k_rope");
  z.q_latent_norm = tensor(up, "q_latent_norm"), z.kv_latent_norm = tensor(up, "kv_latent_norm");
  z.q = tensor(up, "q"), z.k = tensor(up, "k"), z.v = tensor(up, "v"), z.o = tensor(up, "o");
  z.lse = tensor(up, "lse");
  z.d_qk = double(c.model.qk_head_dim());
  z.k_nope = z.k * double(c.model.qk_nope_head_dim) / z.d_qk;  // kv_up's key half, before the rope part is appended
  return z;
}

// README "mla". kept: none x, xn, latent, q/kv_latent_norm, q, k, v, o, lse;
// standard x, latent, o; eagle x, latent, o, lse.
BlockTrace mla_trace(const BackendCase& c, const Mode& m) {
  const MlaSizes z = mla_sizes(c);
  BlockTrace t;
  keep(t, "x", z.x);
  keep(t, "xn", z.xn, m.all);
  keep(t, "latent", z.latent);  // mla.up_attn's block input
  keep(t, "q_latent_norm", z.q_latent_norm, m.all), keep(t, "kv_latent_norm", z.kv_latent_norm, m.all);
  keep(t, "q", z.q, m.all), keep(t, "k", z.k, m.all), keep(t, "v", z.v, m.all);
  keep(t, "o", z.o);
  keep(t, "lse", z.lse, m.all || m.eagle);
  t.dy_bytes = z.x;
  return t;
}

// backward, mla.up_attn: +dy +d_o, [std] -o; [R] +q_latent_norm +kv_latent_norm
// +q +k_nope +v +k -k_nope, [R][std] +o.recompute +lse.recompute; +d_q +d_k
// +d_v +attn_bwd.ws -ws -d_o -q -k -v -lse -o +d_latent +d_k_nope -d_k
// +d_q_latent_norm -d_q -q_latent_norm +d_kv_latent_norm -d_k_nope -d_v
// -kv_latent_norm +ws_norm(q_lora) - +ws_norm(kv_lora) - -d_q_latent_norm
// -d_kv_latent_norm -latent.
void mla_up_backward(ArenaTrace& a, const BackendCase& c, const Mode& m, const MlaSizes& z) {
  a.add("d_o", z.o);
  if (m.standard) a.free("o");
  if (m.recompute) {
    a.add("q_latent_norm", z.q_latent_norm), a.add("kv_latent_norm", z.kv_latent_norm);
    a.add("q", z.q), a.add("k_nope", z.k_nope), a.add("v", z.v), a.add("k", z.k), a.free("k_nope");
  }
  if (m.standard) a.add("o.recompute", z.o), a.add("lse.recompute", z.lse);
  a.add("d_q", z.q), a.add("d_k", z.k), a.add("d_v", z.v), a.add("attn_bwd.ws", attention_ws(c, z.d_qk, false));
  a.free_all({"attn_bwd.ws", "d_o", "q", "k", "v", "lse", "lse.recompute", "o", "o.recompute"});
  a.add("d_latent", z.latent), a.add("d_k_nope", z.k_nope), a.free("d_k");
  a.add("d_q_latent_norm", z.q_latent_norm), a.free_all({"d_q", "q_latent_norm"});
  a.add("d_kv_latent_norm", z.kv_latent_norm), a.free_all({"d_k_nope", "d_v", "kv_latent_norm"});
  a.add("q_norm.bwd.ws", ws_norm(z.T, double(c.model.q_lora_rank))), a.free("q_norm.bwd.ws");
  a.add("kv_norm.bwd.ws", ws_norm(z.T, double(c.model.kv_lora_rank))), a.free("kv_norm.bwd.ws");
  a.free_all({"d_q_latent_norm", "d_kv_latent_norm", "latent"});
}

// backward, mla.down: [R] +xn, [R][std] +latent.recompute; +dxn
// -latent.recompute -d_latent -xn +dx +ws_norm(h) - -dxn -x.
void mla_backward(ArenaTrace& a, const BackendCase& c, const Mode& m) {
  const MlaSizes z = mla_sizes(c);
  mla_up_backward(a, c, m, z);
  if (m.recompute) a.add("xn", z.xn);
  if (m.standard) a.add("latent.recompute", z.latent);
  a.add("dxn", z.xn);
  a.free_all({"latent.recompute", "d_latent", "xn"});
  a.add("dx", z.x), a.add("norm.bwd.ws", ws_norm(z.T, double(c.model.hidden_size)));
  a.free_all({"norm.bwd.ws", "dxn", "x"});
}

// MoE's buffers from the exact blocks (E experts, K per token, TK = T K).
struct MoeSizes {
  double T = 0, x = 0, xn = 0, router_probs = 0, router_logits = 0, shared_gate_up = 0, shared_act = 0;
  double x_permuted = 0, experts_gate_up = 0, experts_act = 0, route = 0;
};

MoeSizes moe_sizes(const BackendCase& c) {
  const RankShape r = shape_of(c);
  const Block shared = moe_shared_block(r, c.model), routed = moe_routed_block(r, c.model);
  const Block dispatch = moe_dispatch_glue(r, c.model);
  MoeSizes z;
  z.T = double(c.b * c.s);
  z.x = tensor(shared, "x"), z.xn = tensor(shared, "x_norm");
  z.router_probs = tensor(shared, "router_scores");  // fp32 softmax over the experts, 4TE
  z.router_logits = z.router_probs / kFp32 * kBf16;  // the router GEMM's bf16 output, 2TE
  z.shared_gate_up = tensor(shared, "shared_gate") + tensor(shared, "shared_up");
  z.shared_act = tensor(shared, "shared_act");
  z.x_permuted = tensor(routed, "x_permuted");
  z.experts_gate_up = tensor(routed, "experts_gate") + tensor(routed, "experts_up");
  z.experts_act = tensor(routed, "experts_act");
  z.route = tensor(dispatch, "routing_map");  // one int32 per routed copy, 4TK
  return z;
}

const std::vector<std::string> kRouting = {"route_idx", "route_prob", "route_pos", "route_row_token", "route_row_slot"};

// README "moe". Routing metadata (4TK each) kept by every strategy, offload
// included. kept: none x, xn, router_probs, shared_gate_up, shared_act,
// x_permuted, experts_gate_up, experts_act + routing; standard, eagle x,
// x_permuted + routing; offload routing only.
BlockTrace moe_trace(const BackendCase& c, const Mode& m) {
  const MoeSizes z = moe_sizes(c);
  BlockTrace t;
  keep(t, "x", z.x);
  keep(t, "xn", z.xn, m.all), keep(t, "router_probs", z.router_probs, m.all);
  keep(t, "shared_gate_up", z.shared_gate_up, m.all), keep(t, "shared_act", z.shared_act, m.all);
  for (const auto& n : kRouting) t.saved.push_back({n, z.route, true});
  keep(t, "x_permuted", z.x_permuted);
  keep(t, "experts_gate_up", z.experts_gate_up, m.all), keep(t, "experts_act", z.experts_act, m.all);
  t.dy_bytes = z.x;
  return t;
}

// backward, moe.routed: +dy +d_experts_out 2TKh; [R] +experts_gate_up
// +experts_act, [R][std] +experts_out.recompute 2TKh; +d_route_prob 4TK
// +d_experts_act -experts_out.recompute -experts_act -d_experts_out
// +d_experts_gate_up -d_experts_act -experts_gate_up +d_x_permuted
// -d_experts_gate_up -x_permuted +dxn -d_x_permuted.
void moe_routed_backward(ArenaTrace& a, const Mode& m, const MoeSizes& z) {
  a.add("d_experts_out", z.x_permuted);  // K copies of T x h
  if (m.recompute) a.add("experts_gate_up", z.experts_gate_up), a.add("experts_act", z.experts_act);
  if (m.standard) a.add("experts_out.recompute", z.x_permuted);
  a.add("d_route_prob", z.route), a.add("d_experts_act", z.experts_act);
  a.free_all({"experts_out.recompute", "experts_act", "d_experts_out"});
  a.add("d_experts_gate_up", z.experts_gate_up), a.free_all({"d_experts_act", "experts_gate_up"});
  a.add("d_x_permuted", z.x_permuted), a.free_all({"d_experts_gate_up", "x_permuted"});
  a.add("dxn", z.xn), a.free("d_x_permuted");
}

// backward, moe.shared: [R] +xn +router_logits +router_probs +route_idx'
// +route_prob' -router_logits -route_idx' -route_prob' +shared_gate_up
// +shared_act, [R][std] +shared_out.recompute; +d_router_logits -router_probs
// -d_route_prob -d_router_logits +d_shared_act -shared_out.recompute
// -shared_act +d_shared_gate_up -d_shared_act -shared_gate_up
// -d_shared_gate_up -xn +dx +ws_norm(h) - -dxn -x -routing.
void moe_backward(ArenaTrace& a, const BackendCase& c, const Mode& m) {
  const MoeSizes z = moe_sizes(c);
  moe_routed_backward(a, m, z);
  if (m.recompute) {
    a.add("xn", z.xn), a.add("router_logits", z.router_logits), a.add("router_probs", z.router_probs);
    a.add("route_idx.recompute", z.route), a.add("route_prob.recompute", z.route);
    a.free_all({"router_logits", "route_idx.recompute", "route_prob.recompute"});
    a.add("shared_gate_up", z.shared_gate_up), a.add("shared_act", z.shared_act);
  }
  if (m.standard) a.add("shared_out.recompute", z.x);
  a.add("d_router_logits", z.router_logits), a.free_all({"router_probs", "d_route_prob", "d_router_logits"});
  a.add("d_shared_act", z.shared_act), a.free_all({"shared_out.recompute", "shared_act"});
  a.add("d_shared_gate_up", z.shared_gate_up), a.free_all({"d_shared_act", "shared_gate_up"});
  a.free_all({"d_shared_gate_up", "xn"});
  a.add("dx", z.x), a.add("norm.bwd.ws", ws_norm(z.T, double(c.model.hidden_size)));
  a.free_all({"norm.bwd.ws", "dxn", "x"});
  a.free_all(kRouting);
}

BlockTrace trace_of(const BackendCase& c, const Mode& m) {
  if (c.block == "rmsnorm_linear") return rmsnorm_linear_trace(c, m);
  if (c.block == "mlp") return mlp_trace(c, m);
  if (c.block == "gqa") return gqa_trace(c, m);
  if (c.block == "mla") return mla_trace(c, m);
  return moe_trace(c, m);
}

void backward_of(ArenaTrace& a, const BackendCase& c, const Mode& m) {
  if (c.block == "rmsnorm_linear") return rmsnorm_linear_backward(a, c, m);
  if (c.block == "mlp") return mlp_backward(a, c, m);
  if (c.block == "gqa") return gqa_backward(a, c, m);
  if (c.block == "mla") return mla_backward(a, c, m);
  return moe_backward(a, c, m);
}

}  // namespace

BackendMemory backend_memory(const BackendCase& c) {
  const Mode m = mode_of(c.strategy);
  const BlockTrace t = trace_of(c, m);
  BackendMemory out;
  // kept_bytes: after forward, y freed; offload has moved its device copies to
  // the host, all but the buffers the backend leaves on the GPU.
  for (const Saved& s : t.saved) {
    if (m.offload && !s.device_when_offloaded) continue;
    out.kept_buffers.push_back({s.name, s.bytes});
    out.kept_bytes += s.bytes;
  }
  // peak_bytes: from dy's allocation; offload has prefetched everything back.
  ArenaTrace a;
  for (const Saved& s : t.saved) a.add(s.name, s.bytes);
  a.add("dy", t.dy_bytes);
  a.begin_backward();
  backward_of(a, c, m);
  out.peak_bytes = a.peak();
  out.peak_buffers = a.at_peak();
  return out;
}

double attention_bwd_workspace_bytes(double b, double heads, double s, double d_qk, bool gqa, bool deterministic) {
  // README: ws_attn = align256(plan) + align256(4 b hq s d_qk) (fp32 dQ
  // accumulator) + align256(4 b hq s) (softmax_sum); the plan's own workspace
  // is 4 b hq s d_qk + c for GQA (hk < hq: per-query-head dK/dV before their
  // reduction) and c for MHA/MLA, c <= 256 (measured with cuDNN 9.14: 256 in all).
  // Deterministic backward: cuDNN's dP workspace, 2 b hq s^2, replaces the dQ
  // accumulator (the committed deterministic run: exact to the byte).
  auto align256 = [](double v) { return std::ceil(v / 256) * 256; };
  const double plan = align256((gqa ? 4 * b * heads * s * d_qk : 0) + 256);
  const double dq_or_dp = deterministic ? 2 * b * heads * s * s : 4 * b * heads * s * d_qk;
  return plan + align256(dq_or_dp) + align256(4 * b * heads * s);
}

}  // namespace remat
