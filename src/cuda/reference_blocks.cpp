// fp32 CPU reference of each block's forward and backward (same math as the GPU blocks).
#include <cmath>
#include <stdexcept>

#include "reference.hpp"

namespace remat::cuda::ref {

namespace {

using W = std::map<std::string, Vec>;

void add_into(Vec& a, const Vec& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
}

Grads rmsnorm_linear(const RefDims& d, const Vec& x, const Vec& dy, const W& w) {
  const int64_t T = d.tokens();
  Grads g;
  Vec xn = rmsnorm(x, w.at("norm.weight"), T, d.h);
  g.y = linear(xn, w.at("linear.weight"), T, d.h, d.out);
  Vec dxn;
  linear_bwd(dy, xn, w.at("linear.weight"), T, d.h, d.out, dxn, g.dw["linear.weight"]);
  rmsnorm_bwd(x, w.at("norm.weight"), dxn, T, d.h, g.dx, g.dw["norm.weight"]);
  return g;
}

// SwiGLU MLP body on normed input xn: returns output, fills grads of the two weights and dxn.
Vec mlp_body(const Vec& xn, const Vec& dy, const Vec& wgu, const Vec& wd, int64_t T, int64_t h, int64_t I, Vec& dxn,
             Vec& dwgu, Vec& dwd) {
  Vec gu = linear(xn, wgu, T, h, 2 * I), a = swiglu(gu, T, I);
  Vec y = linear(a, wd, T, I, h), da, dgu;
  linear_bwd(dy, a, wd, T, I, h, da, dwd);
  swiglu_bwd(gu, da, T, I, {}, dgu, nullptr);
  linear_bwd(dgu, xn, wgu, T, h, 2 * I, dxn, dwgu);
  return y;
}

Grads mlp(const RefDims& d, const Vec& x, const Vec& dy, const W& w) {
  const int64_t T = d.tokens();
  Grads g;
  Vec xn = rmsnorm(x, w.at("norm.weight"), T, d.h), dxn;
  g.y = mlp_body(xn, dy, w.at("gate_up.weight"), w.at("down.weight"), T, d.h, d.inter, dxn, g.dw["gate_up.weight"],
                 g.dw["down.weight"]);
  rmsnorm_bwd(x, w.at("norm.weight"), dxn, T, d.h, g.dx, g.dw["norm.weight"]);
  return g;
}

Grads gqa(const RefDims& d, const Vec& x, const Vec& dy, const W& w) {
  const int64_t T = d.tokens(), nq = d.heads * d.head_dim, nkv = d.kv_heads * d.head_dim, L = nq + 2 * nkv;
  Grads g;
  Vec xn = rmsnorm(x, w.at("norm.weight"), T, d.h);
  Vec qkv = linear(xn, w.at("qkv.weight"), T, d.h, L);
  Vec q(T * nq), k(T * nkv), v(T * nkv);
  for (int64_t t = 0; t < T; ++t) {
    std::copy(qkv.begin() + t * L, qkv.begin() + t * L + nq, q.begin() + t * nq);
    std::copy(qkv.begin() + t * L + nq, qkv.begin() + t * L + nq + nkv, k.begin() + t * nkv);
    std::copy(qkv.begin() + t * L + nq + nkv, qkv.begin() + (t + 1) * L, v.begin() + t * nkv);
  }
  Vec o, lse, d_o, dq, dk, dv, dxn;
  attention(q, k, v, d.b, d.s, d.heads, d.kv_heads, d.head_dim, d.head_dim, o, lse);
  g.y = linear(o, w.at("o.weight"), T, nq, d.h);
  linear_bwd(dy, o, w.at("o.weight"), T, nq, d.h, d_o, g.dw["o.weight"]);
  attention_bwd(q, k, v, d_o, d.b, d.s, d.heads, d.kv_heads, d.head_dim, d.head_dim, dq, dk, dv);
  Vec dqkv(T * L);
  for (int64_t t = 0; t < T; ++t) {
    std::copy(dq.begin() + t * nq, dq.begin() + (t + 1) * nq, dqkv.begin() + t * L);
    std::copy(dk.begin() + t * nkv, dk.begin() + (t + 1) * nkv, dqkv.begin() + t * L + nq);
    std::copy(dv.begin() + t * nkv, dv.begin() + (t + 1) * nkv, dqkv.begin() + t * L + nq + nkv);
  }
  linear_bwd(dqkv, xn, w.at("qkv.weight"), T, d.h, L, dxn, g.dw["qkv.weight"]);
  rmsnorm_bwd(x, w.at("norm.weight"), dxn, T, d.h, g.dx, g.dw["norm.weight"]);
  return g;
}

Vec cols(const Vec& m, int64_t rows, int64_t ld, int64_t c0, int64_t n) {
  Vec out(rows * n);
  for (int64_t r = 0; r < rows; ++r) std::copy(m.begin() + r * ld + c0, m.begin() + r * ld + c0 + n, out.begin() + r * n);
  return out;
}

void put_cols(Vec& m, int64_t rows, int64_t ld, int64_t c0, int64_t n, const Vec& src) {
  for (int64_t r = 0; r < rows; ++r) std::copy(src.begin() + r * n, src.begin() + (r + 1) * n, m.begin() + r * ld + c0);
}

Grads mla(const RefDims& d, const Vec& x, const Vec& dy, const W& w) {
  const int64_t T = d.tokens(), H = d.heads, dn = d.nope, dr = d.rope, dvd = d.v_dim, ql = d.q_lora, kvl = d.kv_lora;
  const int64_t C = ql + kvl + dr, dqk = dn + dr;
  Grads g;
  Vec xn = rmsnorm(x, w.at("norm.weight"), T, d.h);
  Vec lat = linear(xn, w.at("down.weight"), T, d.h, C);
  Vec cq = cols(lat, T, C, 0, ql), ckv = cols(lat, T, C, ql, kvl), kr = cols(lat, T, C, ql + kvl, dr);
  Vec cqn = rmsnorm(cq, w.at("q_norm.weight"), T, ql), ckvn = rmsnorm(ckv, w.at("kv_norm.weight"), T, kvl);
  Vec q = linear(cqn, w.at("q_up.weight"), T, ql, H * dqk);
  Vec kn = linear(ckvn, w.at("k_up.weight"), T, kvl, H * dn), v = linear(ckvn, w.at("v_up.weight"), T, kvl, H * dvd);
  Vec k(T * H * dqk);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t hh = 0; hh < H; ++hh) {
      std::copy(kn.begin() + t * H * dn + hh * dn, kn.begin() + t * H * dn + (hh + 1) * dn, k.begin() + (t * H + hh) * dqk);
      std::copy(kr.begin() + t * dr, kr.begin() + (t + 1) * dr, k.begin() + (t * H + hh) * dqk + dn);
    }
  Vec o, lse, d_o, dq, dk, dv;
  attention(q, k, v, d.b, d.s, H, H, dqk, dvd, o, lse);
  g.y = linear(o, w.at("o.weight"), T, H * dvd, d.h);
  linear_bwd(dy, o, w.at("o.weight"), T, H * dvd, d.h, d_o, g.dw["o.weight"]);
  attention_bwd(q, k, v, d_o, d.b, d.s, H, H, dqk, dvd, dq, dk, dv);
  Vec dkn(T * H * dn), dkr(T * dr, 0.f);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t hh = 0; hh < H; ++hh)
      for (int64_t c = 0; c < dqk; ++c) {
        const float val = dk[(t * H + hh) * dqk + c];
        if (c < dn) dkn[t * H * dn + hh * dn + c] = val;
        else dkr[t * dr + c - dn] += val;
      }
  Vec dcqn, dckvn, dckvn2, dcq, dckv, dlat(T * C), dxn;
  linear_bwd(dq, cqn, w.at("q_up.weight"), T, ql, H * dqk, dcqn, g.dw["q_up.weight"]);
  linear_bwd(dkn, ckvn, w.at("k_up.weight"), T, kvl, H * dn, dckvn, g.dw["k_up.weight"]);
  linear_bwd(dv, ckvn, w.at("v_up.weight"), T, kvl, H * dvd, dckvn2, g.dw["v_up.weight"]);
  add_into(dckvn, dckvn2);
  rmsnorm_bwd(cq, w.at("q_norm.weight"), dcqn, T, ql, dcq, g.dw["q_norm.weight"]);
  rmsnorm_bwd(ckv, w.at("kv_norm.weight"), dckvn, T, kvl, dckv, g.dw["kv_norm.weight"]);
  put_cols(dlat, T, C, 0, ql, dcq);
  put_cols(dlat, T, C, ql, kvl, dckv);
  put_cols(dlat, T, C, ql + kvl, dr, dkr);
  linear_bwd(dlat, xn, w.at("down.weight"), T, d.h, C, dxn, g.dw["down.weight"]);
  rmsnorm_bwd(x, w.at("norm.weight"), dxn, T, d.h, g.dx, g.dw["norm.weight"]);
  return g;
}

Grads moe(const RefDims& d, const Vec& x, const Vec& dy, const W& w) {
  const int64_t T = d.tokens(), h = d.h, E = d.experts, K = d.topk, I = d.moe_inter, Is = d.shared * d.moe_inter;
  Grads g;
  Vec xn = rmsnorm(x, w.at("norm.weight"), T, h);
  Vec logits = linear(xn, w.at("router.weight"), T, h, E), probs(T * E);
  for (int64_t t = 0; t < T; ++t) {
    double mx = -1e300, z = 0;
    for (int64_t e = 0; e < E; ++e) mx = std::max(mx, double(logits[t * E + e]));
    for (int64_t e = 0; e < E; ++e) z += std::exp(logits[t * E + e] - mx);
    for (int64_t e = 0; e < E; ++e) probs[t * E + e] = float(std::exp(logits[t * E + e] - mx) / z);
  }
  Vec dxn;
  Vec& dwgu = g.dw["experts.gate_up.weight"];
  Vec& dwd = g.dw["experts.down.weight"];
  g.y = mlp_body(xn, dy, w.at("shared.gate_up.weight"), w.at("shared.down.weight"), T, h, Is, dxn,
                 g.dw["shared.gate_up.weight"], g.dw["shared.down.weight"]);
  dwgu.assign(E * 2 * I * h, 0.f);
  dwd.assign(E * h * I, 0.f);
  Vec dprobs(T * E, 0.f);
  const Vec& wgu = w.at("experts.gate_up.weight");
  const Vec& wd = w.at("experts.down.weight");
  for (int64_t t = 0; t < T; ++t)
    for (int64_t kk = 0; kk < K; ++kk) {
      const int64_t e = (t * K + kk) % E;
      const Vec xr(xn.begin() + t * h, xn.begin() + (t + 1) * h), dyr(dy.begin() + t * h, dy.begin() + (t + 1) * h);
      const Vec we_gu(wgu.begin() + e * 2 * I * h, wgu.begin() + (e + 1) * 2 * I * h);
      const Vec we_d(wd.begin() + e * h * I, wd.begin() + (e + 1) * h * I);
      const Vec p{probs[t * E + e]};
      Vec gu = linear(xr, we_gu, 1, h, 2 * I), a = swiglu(gu, 1, I, p), out = linear(a, we_d, 1, I, h);
      for (int64_t c = 0; c < h; ++c) g.y[t * h + c] += out[c];
      Vec da, dwd_e, dgu, dscale, dxr, dwgu_e;
      linear_bwd(dyr, a, we_d, 1, I, h, da, dwd_e);
      swiglu_bwd(gu, da, 1, I, p, dgu, &dscale);
      linear_bwd(dgu, xr, we_gu, 1, h, 2 * I, dxr, dwgu_e);
      for (int64_t i = 0; i < h * I; ++i) dwd[e * h * I + i] += dwd_e[i];
      for (int64_t i = 0; i < 2 * I * h; ++i) dwgu[e * 2 * I * h + i] += dwgu_e[i];
      for (int64_t c = 0; c < h; ++c) dxn[t * h + c] += dxr[c];
      dprobs[t * E + e] += dscale[0];
    }
  Vec dlogits(T * E), dxr2;
  for (int64_t t = 0; t < T; ++t) {
    double dot = 0;
    for (int64_t e = 0; e < E; ++e) dot += double(dprobs[t * E + e]) * probs[t * E + e];
    for (int64_t e = 0; e < E; ++e) dlogits[t * E + e] = float(probs[t * E + e] * (dprobs[t * E + e] - dot));
  }
  linear_bwd(dlogits, xn, w.at("router.weight"), T, h, E, dxr2, g.dw["router.weight"]);
  add_into(dxn, dxr2);
  rmsnorm_bwd(x, w.at("norm.weight"), dxn, T, h, g.dx, g.dw["norm.weight"]);
  return g;
}

}  // namespace

Grads block_grads(const std::string& block, const RefDims& d, const Vec& x, const Vec& dy, const W& w) {
  if (block == "rmsnorm_linear") return rmsnorm_linear(d, x, dy, w);
  if (block == "mlp") return mlp(d, x, dy, w);
  if (block == "gqa") return gqa(d, x, dy, w);
  if (block == "mla") return mla(d, x, dy, w);
  if (block == "moe") return moe(d, x, dy, w);
  throw std::runtime_error("reference: unknown block " + block);
}

}  // namespace remat::cuda::ref
