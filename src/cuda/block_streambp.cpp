// StreamBP (Luo et al. 2025, arXiv 2506.03077) on the GPU: the LM head whose loss and gradient
// run over C sequence chunks (sec. 3.2.1), and a LLaMA decoder layer under layer checkpointing
// whose backward runs over D sequence chunks (sec. 3.2.2): K and V of the whole sequence are
// computed once, each chunk reforwards its own rows (its queries attend to the keys before it,
// a bottom-right causal mask) and backpropagates at once, accumulating dK, dV, the weight
// gradients and the layer input's gradient. Chunks = 1 is the unchunked baseline.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "attention.hpp"
#include "blocks.hpp"
#include "check.hpp"
#include "gemm.hpp"
#include "kernels.hpp"
#include "ops.hpp"

namespace remat::cuda {

namespace {

int64_t chunk_rows(const Dims& d) {
  const int64_t n = std::max<int64_t>(d.chunks, 1);
  if (d.tokens() % n != 0) throw std::runtime_error("streambp: chunks must divide b * s");
  return d.tokens() / n;
}

void copy_rows(Ctx& c, void* dst, const void* src, int64_t bytes) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(bytes), cudaMemcpyDeviceToDevice, c.stream()));
}

// RMSNorm, vocabulary projection and softmax cross-entropy. Forward computes the loss chunk by
// chunk and keeps x and the normed x; backward recomputes each chunk's logits, takes the loss's
// fp32 copy, its fp32 gradient (weighted per token by dy), casts it to bf16 and runs the two GEMMs.
class LmHead : public Block {
 public:
  explicit LmHead(const Dims& d) : Block(d) {}
  std::string name() const override { return "lm_head"; }
  int64_t output_elems() const override { return d_.tokens(); }  // the loss of each token

  void init(Ctx& c, uint64_t seed) override {
    const int64_t h = d_.hidden_size, v = d_.vocab_size;
    add_param(c, "norm.weight", h, seed + 1, 0.1f, 1.f);
    add_param(c, "lm_head.weight", v * h, seed + 2, 1.f / std::sqrt(float(h)));
    const int64_t T = d_.tokens();
    std::vector<int> labels(T);
    for (int64_t t = 0; t < T; ++t) labels[t] = int((uint64_t(t) * 2654435761ull + seed) % uint64_t(v));
    labels_ = c.arena().alloc("labels", 4 * T, MemClass::persistent);
    CUDA_CHECK(cudaMemcpy(labels_.ptr, labels.data(), size_t(4 * T), cudaMemcpyHostToDevice));
    ones_ = c.arena().alloc("loss.weights", bf16_bytes(T), MemClass::persistent);
    ops::fill(c, ones_, seed, 0.f, 1.f);
  }
  void release_params(Ctx& c) override {
    c.arena().release(labels_);
    c.arena().release(ones_);
    Block::release_params(c);
  }

  void forward(Ctx& c, Strategy, Buf& x, Buf& y) override {
    const int64_t T = d_.tokens(), h = d_.hidden_size, rows = chunk_rows(d_);
    x_ = x;
    x = Buf{};
    xn_ = c.act("xn", bf16_bytes(T * h));
    ops::rmsnorm_fwd(c, "norm", x_.ptr, h, params_[0].w.ptr, xn_.ptr, h, T, h);
    y = c.act("y", bf16_bytes(T));
    for (int64_t a = 0; a < T; a += rows)
      loss_chunk(c, a, rows, ones_.as<char>() + 2 * a, y.as<char>() + 2 * a, nullptr);
  }

  void backward(Ctx& c, Strategy, Buf& dy, Buf& dx) override {
    const int64_t T = d_.tokens(), h = d_.hidden_size, v = d_.vocab_size, rows = chunk_rows(d_);
    Buf dxn = c.act("dxn", bf16_bytes(T * h));
    for (int64_t a = 0; a < T; a += rows) {
      Buf grad16;
      loss_chunk(c, a, rows, dy.as<char>() + 2 * a, nullptr, &grad16);
      const LinearShape ls{rows, h, v};
      linear_bwd_data(c, "lm_head.dgrad", ls, grad16.ptr, params_[1].w.ptr, dxn.as<char>() + 2 * a * h);
      linear_bwd_weight(c, "lm_head.wgrad", ls, grad16.ptr, xn_.as<char>() + 2 * a * h, params_[1].g.ptr,
                        a == 0 ? 0.f : 1.f);
      c.drop(grad16);
    }
    c.drop(xn_);
    dx = c.act("dx", bf16_bytes(T * h));
    ops::rmsnorm_bwd(c, "norm.bwd", x_.ptr, h, params_[0].w.ptr, dxn.ptr, h, dx.ptr, h, params_[0].g.ptr, T, h);
    c.drop_all({&dxn, &x_});
  }

 private:
  // One chunk of rows [a, a + rows): logits, their fp32 copy, the loss (forward: into `loss`) or
  // the bf16 gradient of the logits (backward: into *grad16, allocated here).
  void loss_chunk(Ctx& c, int64_t a, int64_t rows, const void* weights, void* loss, Buf* grad16) {
    const int64_t h = d_.hidden_size, v = d_.vocab_size, n = rows * v;
    const std::string sfx = grad16 ? ".recompute" : "";
    if (grad16) c.phase(Phase::recompute);
    Buf logits = c.act("logits", bf16_bytes(n));
    linear_fwd(c, "lm_head" + sfx, {rows, h, v}, xn_.as<char>() + 2 * a * h, params_[1].w.ptr, logits.ptr);
    Buf logits32 = c.act("logits.fp32", f32_bytes(n));
    {
      OpScope op(c, {"logits.to_fp32" + sfx, "cast", rows, v, 0, double(n), 6.0 * double(n)});
      k::bf16_to_f32(logits.ptr, logits32.as<float>(), n, c.stream());
    }
    if (grad16) c.phase(Phase::backward);
    Buf grad32 = grad16 ? c.act("d_logits.fp32", f32_bytes(n)) : Buf{};
    {
      OpScope op(c, {grad16 ? "cross_entropy.bwd" : "cross_entropy", "cross_entropy", rows, v, 0, 5.0 * double(n),
                     (grad16 ? 8.0 : 4.0) * double(n)});
      k::cross_entropy(logits32.as<float>(), labels_.as<int>() + a, weights, loss, grad32.as<float>(), rows, v,
                       c.stream());
    }
    c.drop_all({&logits32, &logits});
    if (!grad16) return;
    *grad16 = c.act("d_logits", bf16_bytes(n));
    {
      OpScope op(c, {"d_logits.to_bf16", "cast", rows, v, 0, double(n), 6.0 * double(n)});
      k::f32_to_bf16(grad32.as<float>(), grad16->ptr, n, c.stream());
    }
    c.drop(grad32);
  }
  Buf x_, xn_, labels_, ones_;
};

// A LLaMA decoder layer: x + attn(norm1(x)) = h1, h1 + mlp(norm2(h1)) = y, GQA attention (RoPE not
// run, as in the gqa block), SwiGLU MLP. Forward keeps x only (layer checkpointing).
class StreambpLayer : public Block {
 public:
  explicit StreambpLayer(const Dims& d) : Block(d) {
    nq_ = d_.num_attention_heads * d_.head_dim;
    nkv_ = d_.num_key_value_heads * d_.head_dim;
  }
  std::string name() const override { return "streambp_layer"; }

  void init(Ctx& c, uint64_t seed) override {
    const int64_t h = d_.hidden_size, inter = d_.intermediate_size;
    add_param(c, "norm1.weight", h, seed + 1, 0.1f, 1.f);
    add_param(c, "qkv.weight", (nq_ + 2 * nkv_) * h, seed + 2, 1.f / std::sqrt(float(h)));
    add_param(c, "o.weight", h * nq_, seed + 3, 1.f / std::sqrt(float(nq_)));
    add_param(c, "norm2.weight", h, seed + 4, 0.1f, 1.f);
    add_param(c, "gate_up.weight", 2 * inter * h, seed + 5, 1.f / std::sqrt(float(h)));
    add_param(c, "down.weight", h * inter, seed + 6, 1.f / std::sqrt(float(inter)));
  }

  void forward(Ctx& c, Strategy, Buf& x, Buf& y) override {
    const int64_t T = d_.tokens(), h = d_.hidden_size, ld = nq_ + 2 * nkv_;
    x_ = x;
    x = Buf{};
    Buf xn = c.act("xn1", bf16_bytes(T * h));
    ops::rmsnorm_fwd(c, "norm1", x_.ptr, h, w(kNorm1), xn.ptr, h, T, h);
    Buf qkv = c.act("qkv", bf16_bytes(T * ld));
    linear_fwd(c, "qkv", {T, h, ld}, xn.ptr, w(kQkv), qkv.ptr);
    c.drop(xn);
    Buf o = c.act("o", bf16_bytes(T * nq_)), lse = c.act("lse", f32_bytes(T * d_.num_attention_heads));
    const AttnDims ad = attn_dims(T, T, ld, ld);  // q, k, v interleaved in the qkv rows
    const char* q = qkv.as<char>();
    Buf ws = fwd_workspace(c, ad);
    attn_fwd(c, "flash_attn.fwd", ad, q, q + 2 * nq_, q + 2 * (nq_ + nkv_), o.ptr, lse.as<float>(), ws.ptr);
    c.drop_all({&ws, &qkv, &lse});
    Buf h1 = c.act("h1", bf16_bytes(T * h));
    copy_rows(c, h1.ptr, x_.ptr, bf16_bytes(T * h));
    linear_fwd(c, "o_proj", {T, nq_, h}, o.ptr, w(kO), h1.ptr, 1.f);
    c.drop(o);
    Buf act = mlp_forward(c, h1, T, "");
    y = c.act("y", bf16_bytes(T * h));
    copy_rows(c, y.ptr, h1.ptr, bf16_bytes(T * h));
    linear_fwd(c, "down", {T, d_.intermediate_size, h}, act.ptr, w(kDown), y.ptr, 1.f);
    c.drop_all({&act, &h1});
  }

  void backward(Ctx& c, Strategy, Buf& dy, Buf& dx) override {
    const int64_t T = d_.tokens(), h = d_.hidden_size, rows = chunk_rows(d_);
    // K and V of the whole sequence, chunk by chunk (sec. 3.2.2: computed once and cached)
    c.phase(Phase::recompute);
    kv_ = c.act("kv", bf16_bytes(T * 2 * nkv_));
    for (int64_t a = 0; a < T; a += rows) {
      Buf xn = norm1_rows(c, a, rows, ".kv");
      linear_fwd(c, "kv.recompute", {rows, h, 2 * nkv_}, xn.ptr, w(kQkv) + 2 * nq_ * h, kv_.as<char>() + 4 * a * nkv_);
      c.drop(xn);
    }
    c.phase(Phase::backward);
    dkv_ = c.act("d_kv", bf16_bytes(T * 2 * nkv_));
    dx = c.act("dx", bf16_bytes(T * h));
    // last chunk first: it sees every key, so its dK, dV initialise the accumulator
    for (int64_t a = T - rows; a >= 0; a -= rows) chunk_backward(c, dy, dx, a, rows, a + rows == T);
    // the keys' and values' gradient back through their projection and norm1, chunk by chunk
    for (int64_t a = 0; a < T; a += rows) {
      c.phase(Phase::recompute);
      Buf xn = norm1_rows(c, a, rows, ".kv");
      c.phase(Phase::backward);
      const LinearShape ls{rows, h, 2 * nkv_};
      const char* dkv = dkv_.as<char>() + 4 * a * nkv_;
      Buf dxn = c.act("dxn.kv", bf16_bytes(rows * h));
      linear_bwd_data(c, "kv.dgrad", ls, dkv, w(kQkv) + 2 * nq_ * h, dxn.ptr);
      linear_bwd_weight(c, "kv.wgrad", ls, dkv, xn.ptr, g(kQkv) + 2 * nq_ * h, a == 0 ? 0.f : 1.f);
      Buf part = c.act("dx.kv", bf16_bytes(rows * h));
      ops::rmsnorm_bwd(c, "norm1.bwd.kv", x_.as<char>() + 2 * a * h, h, w(kNorm1), dxn.ptr, h, part.ptr, h, g(kNorm1),
                       rows, h, true);
      ops::add(c, "dx.add_kv", dx.as<char>() + 2 * a * h, part.ptr, rows * h);
      c.drop_all({&part, &dxn, &xn});
    }
    c.drop_all({&dkv_, &kv_, &x_});
  }

 private:
  enum P { kNorm1, kQkv, kO, kNorm2, kGateUp, kDown };
  char* w(P p) { return params_[p].w.as<char>(); }
  char* g(P p) { return params_[p].g.as<char>(); }

  // Attention of `queries` rows against the first `keys` rows (bottom-right causal when fewer
  // queries); q rows are q_row elements apart, k and v rows kv_row apart.
  AttnDims attn_dims(int64_t queries, int64_t keys, int64_t q_row, int64_t kv_row) const {
    AttnDims ad;
    ad.b = 1;
    ad.hq = d_.num_attention_heads;
    ad.hk = d_.num_key_value_heads;
    ad.s = queries;
    ad.skv = keys;
    ad.dqk = ad.dv = d_.head_dim;
    ad.q_stride = bshd_strides(queries, d_.head_dim, q_row);
    ad.k_stride = ad.v_stride = bshd_strides(keys, d_.head_dim, kv_row);
    ad.o_stride = bshd_strides(queries, d_.head_dim, nq_);
    ad.deterministic = d_.deterministic_attention;
    return ad;
  }

  static Buf fwd_workspace(Ctx& c, const AttnDims& ad) {
    const int64_t bytes = attn_fwd_workspace_bytes(c, ad);
    return bytes > 0 ? c.act("attn_fwd.ws", bytes) : Buf{};
  }

  Buf norm1_rows(Ctx& c, int64_t a, int64_t rows, const std::string& sfx) {
    const int64_t h = d_.hidden_size;
    Buf xn = c.act("xn1" + sfx, bf16_bytes(rows * h));
    ops::rmsnorm_fwd(c, "norm1" + sfx, x_.as<char>() + 2 * a * h, h, w(kNorm1), xn.ptr, h, rows, h);
    return xn;
  }

  // norm2, gate_up and SwiGLU of the `rows` rows of h1; returns act. The reforward (a suffix) keeps
  // xn2 and gate_up in members for the chunk's backward; the forward frees them.
  Buf mlp_forward(Ctx& c, const Buf& h1, int64_t rows, const std::string& sfx) {
    const int64_t h = d_.hidden_size, inter = d_.intermediate_size;
    xn2_ = c.act("xn2", bf16_bytes(rows * h));
    ops::rmsnorm_fwd(c, "norm2" + sfx, h1.ptr, h, w(kNorm2), xn2_.ptr, h, rows, h);
    gu_ = c.act("gate_up", bf16_bytes(rows * 2 * inter));
    linear_fwd(c, "gate_up" + sfx, {rows, h, 2 * inter}, xn2_.ptr, w(kGateUp), gu_.ptr);
    Buf act = c.act("act", bf16_bytes(rows * inter));
    ops::swiglu_fwd(c, "swiglu" + sfx, gu_.ptr, act.ptr, rows, inter);
    if (sfx.empty()) c.drop_all({&xn2_, &gu_});  // the forward keeps nothing
    return act;
  }

  // Reforward of one chunk's rows and its backward (sec. 3.2.2, Fig. 2).
  void chunk_backward(Ctx& c, Buf& dy, Buf& dx, int64_t a, int64_t rows, bool first) {
    const int64_t h = d_.hidden_size, inter = d_.intermediate_size, e = a + rows;
    const float beta = first ? 0.f : 1.f;
    const char* x_rows = x_.as<char>() + 2 * a * h;
    const char* dy_rows = dy.as<char>() + 2 * a * h;
    // reforward: queries of the chunk, attention over keys [0, e), o_proj + residual, norm2, MLP up
    c.phase(Phase::recompute);
    Buf xn1 = norm1_rows(c, a, rows, "");
    Buf q = c.act("q", bf16_bytes(rows * nq_));
    linear_fwd(c, "q.recompute", {rows, h, nq_}, xn1.ptr, w(kQkv), q.ptr);
    Buf o = c.act("o", bf16_bytes(rows * nq_)), lse = c.act("lse", f32_bytes(rows * d_.num_attention_heads));
    const AttnDims ad = attn_dims(rows, e, nq_, 2 * nkv_);  // q of the chunk; k, v rows of kv_
    const char* k = kv_.as<char>();
    Buf fws = fwd_workspace(c, ad);
    attn_fwd(c, "flash_attn.fwd.recompute", ad, q.ptr, k, k + 2 * nkv_, o.ptr, lse.as<float>(), fws.ptr);
    c.drop(fws);
    Buf h1 = c.act("h1", bf16_bytes(rows * h));
    copy_rows(c, h1.ptr, x_rows, bf16_bytes(rows * h));
    linear_fwd(c, "o_proj.recompute", {rows, nq_, h}, o.ptr, w(kO), h1.ptr, 1.f);
    Buf act = mlp_forward(c, h1, rows, ".recompute");
    // backward of the chunk
    c.phase(Phase::backward);
    Buf d_act = c.act("d_act", bf16_bytes(rows * inter));
    linear_bwd_data(c, "down.dgrad", {rows, inter, h}, dy_rows, w(kDown), d_act.ptr);
    linear_bwd_weight(c, "down.wgrad", {rows, inter, h}, dy_rows, act.ptr, g(kDown), beta);
    c.drop(act);
    Buf d_gu = c.act("d_gate_up", bf16_bytes(rows * 2 * inter));
    ops::swiglu_bwd(c, "swiglu.bwd", gu_.ptr, d_act.ptr, d_gu.ptr, rows, inter);
    c.drop_all({&d_act, &gu_});
    Buf dxn2 = c.act("dxn2", bf16_bytes(rows * h));
    linear_bwd_data(c, "gate_up.dgrad", {rows, h, 2 * inter}, d_gu.ptr, w(kGateUp), dxn2.ptr);
    linear_bwd_weight(c, "gate_up.wgrad", {rows, h, 2 * inter}, d_gu.ptr, xn2_.ptr, g(kGateUp), beta);
    c.drop_all({&d_gu, &xn2_});
    Buf dh1 = c.act("dh1", bf16_bytes(rows * h));
    ops::rmsnorm_bwd(c, "norm2.bwd", h1.ptr, h, w(kNorm2), dxn2.ptr, h, dh1.ptr, h, g(kNorm2), rows, h, !first);
    ops::add(c, "dh1.add_residual", dh1.ptr, dy_rows, rows * h);
    c.drop_all({&dxn2, &h1});
    Buf d_o = c.act("d_o", bf16_bytes(rows * nq_));
    linear_bwd_data(c, "o_proj.dgrad", {rows, nq_, h}, dh1.ptr, w(kO), d_o.ptr);
    linear_bwd_weight(c, "o_proj.wgrad", {rows, nq_, h}, dh1.ptr, o.ptr, g(kO), beta);
    // attention backward: dQ of the chunk; dK, dV of keys [0, e) into the accumulator (first
    // chunk) or a buffer added into it
    Buf dq = c.act("dq", bf16_bytes(rows * nq_));
    Buf dkv_part = first ? Buf{} : c.act("d_kv.chunk", bf16_bytes(e * 2 * nkv_));
    char* dk = first ? dkv_.as<char>() : dkv_part.as<char>();
    Buf ws = c.act("attn_bwd.ws", attn_bwd_workspace_bytes(c, ad));
    attn_bwd(c, "flash_attn.bwd", ad, q.ptr, k, k + 2 * nkv_, o.ptr, d_o.ptr, lse.as<float>(), dq.ptr, dk,
             dk + 2 * nkv_, ws.ptr);
    c.drop_all({&ws, &d_o, &o, &lse, &q});
    if (!first) ops::add(c, "d_kv.accumulate", dkv_.ptr, dkv_part.ptr, e * 2 * nkv_);
    c.drop(dkv_part);
    Buf dxn1 = c.act("dxn1", bf16_bytes(rows * h));
    linear_bwd_data(c, "q.dgrad", {rows, h, nq_}, dq.ptr, w(kQkv), dxn1.ptr);
    linear_bwd_weight(c, "q.wgrad", {rows, h, nq_}, dq.ptr, xn1.ptr, g(kQkv), beta);
    c.drop_all({&dq, &xn1});
    char* dx_rows = dx.as<char>() + 2 * a * h;
    ops::rmsnorm_bwd(c, "norm1.bwd", x_rows, h, w(kNorm1), dxn1.ptr, h, dx_rows, h, g(kNorm1), rows, h, !first);
    ops::add(c, "dx.add_residual", dx_rows, dh1.ptr, rows * h);
    c.drop_all({&dxn1, &dh1});
  }

  int64_t nq_ = 0, nkv_ = 0;
  Buf x_, kv_, dkv_, xn2_, gu_;
};

}  // namespace

std::unique_ptr<Block> make_lm_head(const Dims& d) { return std::make_unique<LmHead>(d); }
std::unique_ptr<Block> make_streambp_layer(const Dims& d) { return std::make_unique<StreambpLayer>(d); }

}  // namespace remat::cuda
