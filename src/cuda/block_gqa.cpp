// GQA as one recompute block: RMSNorm, fused q/k/v projection and causal flash attention.
// The output projection Wo is outside the block; its saved input o is kept by every strategy
// (Table 1 counts it), and EAGLE runs the flash backward straight from o and the kept LSE.
#include <cmath>

#include "attention.hpp"
#include "blocks.hpp"
#include "gemm.hpp"
#include "ops.hpp"

namespace remat::cuda {

namespace {

class Gqa : public Block {
 public:
  explicit Gqa(const Dims& d) : Block(d) {
    nq_ = d_.num_attention_heads * d_.head_dim;
    nkv_ = d_.num_key_value_heads * d_.head_dim;
    ld_ = nq_ + 2 * nkv_;
    ad_.b = d_.b;
    ad_.hq = d_.num_attention_heads;
    ad_.hk = d_.num_key_value_heads;
    ad_.s = d_.s;
    ad_.dqk = ad_.dv = d_.head_dim;
    ad_.q_stride = ad_.k_stride = ad_.v_stride = bshd_strides(d_.s, d_.head_dim, ld_);
    ad_.o_stride = bshd_strides(d_.s, d_.head_dim, nq_);
    ad_.deterministic = d_.deterministic_attention;
  }
  std::string name() const override { return "gqa"; }

  void init(Ctx& c, uint64_t seed) override {
    const int64_t h = d_.hidden_size;
    add_param(c, "norm.weight", h, seed + 1, 0.1f, 1.f);
    add_param(c, "qkv.weight", ld_ * h, seed + 2, 1.f / std::sqrt(float(h)));
    add_param(c, "o.weight", h * nq_, seed + 3, 1.f / std::sqrt(float(nq_)));
  }

  void forward(Ctx& c, Strategy st, Buf& x, Buf& y) override {
    const int64_t T = d_.tokens(), h = d_.hidden_size;
    x_ = x;
    x = Buf{};
    c.keep(x_, "x");
    inner_forward(c, "");
    keep_or_drop(c, st, xn_, "xn");
    o_ = c.act("o", bf16_bytes(T * nq_));
    lse_ = c.act("lse", f32_bytes(T * ad_.hq));
    attention_fwd(c, "flash_attn.fwd", o_, lse_);
    keep_or_drop(c, st, qkv_, "qkv");
    if (st == Strategy::standard)
      c.drop(lse_);
    else
      c.keep(lse_, "lse");
    y = c.act("y", bf16_bytes(T * h));
    linear_fwd(c, "o_proj", {T, nq_, h}, o_.ptr, params_[2].w.ptr, y.ptr);
    c.keep(o_, "o");
  }

  void backward(Ctx& c, Strategy st, Buf& dy, Buf& dx) override {
    const int64_t T = d_.tokens(), h = d_.hidden_size;
    Buf d_o = c.act("d_o", bf16_bytes(T * nq_));
    linear_bwd_data(c, "o_proj.dgrad", {T, nq_, h}, dy.ptr, params_[2].w.ptr, d_o.ptr);
    linear_bwd_weight(c, "o_proj.wgrad", {T, nq_, h}, dy.ptr, o_.ptr, params_[2].g.ptr);
    if (st == Strategy::standard || st == Strategy::eagle) {
      if (st == Strategy::standard) c.drop(o_);
      c.phase(Phase::recompute);
      inner_forward(c, ".recompute");
      if (st == Strategy::standard) {
        o_ = c.act("o.recompute", bf16_bytes(T * nq_));
        lse_ = c.act("lse.recompute", f32_bytes(T * ad_.hq));
        attention_fwd(c, "flash_attn.fwd.recompute", o_, lse_);
      }
      c.phase(Phase::backward);
    }
    Buf dqkv = c.act("d_qkv", bf16_bytes(T * ld_));
    Buf ws = c.act("attn_bwd.ws", attn_bwd_workspace_bytes(c, ad_));
    const char* q = qkv_.as<char>();
    char* dq = dqkv.as<char>();
    attn_bwd(c, "flash_attn.bwd", ad_, q, q + 2 * nq_, q + 2 * (nq_ + nkv_), o_.ptr, d_o.ptr, lse_.as<float>(), dq,
             dq + 2 * nq_, dq + 2 * (nq_ + nkv_), ws.ptr);
    c.drop_all({&ws, &d_o, &qkv_, &lse_, &o_});
    Buf dxn = c.act("dxn", bf16_bytes(T * h));
    linear_bwd_data(c, "qkv.dgrad", {T, h, ld_}, dqkv.ptr, params_[1].w.ptr, dxn.ptr);
    linear_bwd_weight(c, "qkv.wgrad", {T, h, ld_}, dqkv.ptr, xn_.ptr, params_[1].g.ptr);
    c.drop_all({&dqkv, &xn_});
    dx = c.act("dx", bf16_bytes(T * h));
    ops::rmsnorm_bwd(c, "norm.bwd", x_.ptr, h, params_[0].w.ptr, dxn.ptr, h, dx.ptr, h, params_[0].g.ptr, T, h);
    c.drop_all({&dxn, &x_});
  }

 private:
  void inner_forward(Ctx& c, const std::string& sfx) {
    const int64_t T = d_.tokens(), h = d_.hidden_size;
    xn_ = c.act("xn", bf16_bytes(T * h));
    ops::rmsnorm_fwd(c, "norm" + sfx, x_.ptr, h, params_[0].w.ptr, xn_.ptr, h, T, h);
    qkv_ = c.act("qkv", bf16_bytes(T * ld_));
    linear_fwd(c, "qkv" + sfx, {T, h, ld_}, xn_.ptr, params_[1].w.ptr, qkv_.ptr);
  }
  void attention_fwd(Ctx& c, const std::string& name, Buf& o, Buf& lse) {
    Buf ws;
    const int64_t ws_bytes = attn_fwd_workspace_bytes(c, ad_);
    if (ws_bytes > 0) ws = c.act("attn_fwd.ws", ws_bytes);
    const char* q = qkv_.as<char>();
    attn_fwd(c, name, ad_, q, q + 2 * nq_, q + 2 * (nq_ + nkv_), o.ptr, lse.as<float>(), ws.ptr);
    c.drop(ws);
  }
  int64_t nq_ = 0, nkv_ = 0, ld_ = 0;
  AttnDims ad_;
  Buf x_, xn_, qkv_, o_, lse_;
};

}  // namespace

std::unique_ptr<Block> make_gqa(const Dims& d) { return std::make_unique<Gqa>(d); }

}  // namespace remat::cuda
