// MLA as two recompute blocks (Appendix C). Block 1: RMSNorm and the fused down projection to
// [q latent | kv latent | k rope]. Block 2: the two latent RMSNorms, the up projections (q; k_nope
// and v as two GEMMs), the key assembly (k_nope per head + the shared rope part) and causal flash
// attention (qk head dim nope+rope, v head dim v). Wo is outside, its input o kept as in GQA.
// RoPE's rotation itself is not applied (an elementwise op outside the paper's FLOP counts).
#include <cmath>

#include "attention.hpp"
#include "blocks.hpp"
#include "gemm.hpp"
#include "kernels.hpp"
#include "ops.hpp"

namespace remat::cuda {

namespace {

enum MlaParam { kNorm, kDown, kQNorm, kKvNorm, kUq, kUk, kUv, kO };

class Mla : public Block {
 public:
  explicit Mla(const Dims& d) : Block(d) {
    H_ = d_.num_attention_heads;
    ql_ = d_.q_lora_rank;
    kvl_ = d_.kv_lora_rank;
    dn_ = d_.qk_nope_head_dim;
    dr_ = d_.qk_rope_head_dim;
    dv_ = d_.v_head_dim;
    C_ = ql_ + kvl_ + dr_;
    ad_.b = d_.b;
    ad_.hq = ad_.hk = H_;
    ad_.s = d_.s;
    ad_.dqk = dn_ + dr_;
    ad_.dv = dv_;
    ad_.q_stride = ad_.k_stride = bshd_strides(d_.s, dn_ + dr_, H_ * (dn_ + dr_));
    ad_.v_stride = ad_.o_stride = bshd_strides(d_.s, dv_, H_ * dv_);
    ad_.deterministic = d_.deterministic_attention;
  }
  std::string name() const override { return "mla"; }
  std::vector<std::string> sub_blocks() const override { return {"mla.up_attn", "mla.down"}; }

  void init(Ctx& c, uint64_t seed) override {
    const int64_t h = d_.hidden_size;
    auto sc = [](int64_t in) { return 1.f / std::sqrt(float(in)); };
    add_param(c, "norm.weight", h, seed + 1, 0.1f, 1.f);
    add_param(c, "down.weight", C_ * h, seed + 2, sc(h));
    add_param(c, "q_norm.weight", ql_, seed + 3, 0.1f, 1.f);
    add_param(c, "kv_norm.weight", kvl_, seed + 4, 0.1f, 1.f);
    add_param(c, "q_up.weight", H_ * (dn_ + dr_) * ql_, seed + 5, sc(ql_));
    add_param(c, "k_up.weight", H_ * dn_ * kvl_, seed + 6, sc(kvl_));
    add_param(c, "v_up.weight", H_ * dv_ * kvl_, seed + 7, sc(kvl_));
    add_param(c, "o.weight", h * H_ * dv_, seed + 8, sc(H_ * dv_));
  }

  void forward(Ctx& c, Strategy st, Buf& x, Buf& y) override {
    const int64_t T = d_.tokens(), h = d_.hidden_size;
    x_ = x;
    x = Buf{};
    c.keep(x_, "x");
    norm_x(c, "");
    lat_ = c.act("latent", bf16_bytes(T * C_));
    linear_fwd(c, "down", {T, h, C_}, xn_.ptr, P(kDown).w.ptr, lat_.ptr);
    keep_or_drop(c, st, xn_, "xn");
    c.keep(lat_, "latent");
    block2_forward(c, "");
    o_ = c.act("o", bf16_bytes(T * H_ * dv_));
    lse_ = c.act("lse", f32_bytes(T * H_));
    attention_fwd(c, "flash_attn.fwd", o_, lse_);
    keep_or_drop(c, st, cqn_, "q_latent_norm");
    keep_or_drop(c, st, ckvn_, "kv_latent_norm");
    keep_or_drop(c, st, q_, "q");
    keep_or_drop(c, st, k_, "k");
    keep_or_drop(c, st, v_, "v");
    if (st == Strategy::standard)
      c.drop(lse_);
    else
      c.keep(lse_, "lse");
    y = c.act("y", bf16_bytes(T * h));
    linear_fwd(c, "o_proj", {T, H_ * dv_, h}, o_.ptr, P(kO).w.ptr, y.ptr);
    c.keep(o_, "o");
  }

  void backward(Ctx& c, Strategy st, Buf& dy, Buf& dx) override {
    const int64_t T = d_.tokens(), h = d_.hidden_size;
    const bool re = st == Strategy::standard || st == Strategy::eagle;
    Buf d_o = c.act("d_o", bf16_bytes(T * H_ * dv_));
    linear_bwd_data(c, "o_proj.dgrad", {T, H_ * dv_, h}, dy.ptr, P(kO).w.ptr, d_o.ptr);
    linear_bwd_weight(c, "o_proj.wgrad", {T, H_ * dv_, h}, dy.ptr, o_.ptr, P(kO).g.ptr);
    if (re) {
      if (st == Strategy::standard) c.drop(o_);
      c.phase(Phase::recompute);
      block2_forward(c, ".recompute");
      if (st == Strategy::standard) {
        o_ = c.act("o.recompute", bf16_bytes(T * H_ * dv_));
        lse_ = c.act("lse.recompute", f32_bytes(T * H_));
        attention_fwd(c, "flash_attn.fwd.recompute", o_, lse_);
      }
      c.phase(Phase::backward);
    }
    Buf dlat = block2_backward(c, d_o);
    Buf lat_re;
    if (re) {
      c.phase(Phase::recompute);
      norm_x(c, ".recompute");
      if (st == Strategy::standard) {
        lat_re = c.act("latent.recompute", bf16_bytes(T * C_));
        linear_fwd(c, "down.recompute", {T, h, C_}, xn_.ptr, P(kDown).w.ptr, lat_re.ptr);
      }
      c.phase(Phase::backward);
    }
    Buf dxn = c.act("dxn", bf16_bytes(T * h));
    linear_bwd_data(c, "down.dgrad", {T, h, C_}, dlat.ptr, P(kDown).w.ptr, dxn.ptr);
    linear_bwd_weight(c, "down.wgrad", {T, h, C_}, dlat.ptr, xn_.ptr, P(kDown).g.ptr);
    c.drop_all({&lat_re, &dlat, &xn_});
    dx = c.act("dx", bf16_bytes(T * h));
    ops::rmsnorm_bwd(c, "norm.bwd", x_.ptr, h, P(kNorm).w.ptr, dxn.ptr, h, dx.ptr, h, P(kNorm).g.ptr, T, h);
    c.drop_all({&dxn, &x_});
  }

 private:
  Param& P(MlaParam i) { return params_[i]; }

  void norm_x(Ctx& c, const std::string& sfx) {
    const int64_t T = d_.tokens(), h = d_.hidden_size;
    xn_ = c.act("xn", bf16_bytes(T * h));
    ops::rmsnorm_fwd(c, "norm" + sfx, x_.ptr, h, P(kNorm).w.ptr, xn_.ptr, h, T, h);
  }

  // Latent norms, up projections and the key assembly (everything of block 2 but attention).
  void block2_forward(Ctx& c, const std::string& sfx) {
    const int64_t T = d_.tokens();
    const char* lat = lat_.as<char>();
    cqn_ = c.act("q_latent_norm", bf16_bytes(T * ql_));
    ops::rmsnorm_fwd(c, "q_norm" + sfx, lat, C_, P(kQNorm).w.ptr, cqn_.ptr, ql_, T, ql_);
    ckvn_ = c.act("kv_latent_norm", bf16_bytes(T * kvl_));
    ops::rmsnorm_fwd(c, "kv_norm" + sfx, lat + 2 * ql_, C_, P(kKvNorm).w.ptr, ckvn_.ptr, kvl_, T, kvl_);
    q_ = c.act("q", bf16_bytes(T * H_ * (dn_ + dr_)));
    linear_fwd(c, "q_up" + sfx, {T, ql_, H_ * (dn_ + dr_)}, cqn_.ptr, P(kUq).w.ptr, q_.ptr);
    Buf k_nope = c.act("k_nope", bf16_bytes(T * H_ * dn_));
    linear_fwd(c, "k_up" + sfx, {T, kvl_, H_ * dn_}, ckvn_.ptr, P(kUk).w.ptr, k_nope.ptr);
    v_ = c.act("v", bf16_bytes(T * H_ * dv_));
    linear_fwd(c, "v_up" + sfx, {T, kvl_, H_ * dv_}, ckvn_.ptr, P(kUv).w.ptr, v_.ptr);
    k_ = c.act("k", bf16_bytes(T * H_ * (dn_ + dr_)));
    {
      OpScope op(c, {"k_assemble" + sfx, "gather", T, H_ * (dn_ + dr_), 0, 0.0,
                     2.0 * T * (H_ * dn_ + dr_) + 2.0 * T * H_ * (dn_ + dr_)});
      k::mla_k_assemble(k_nope.ptr, lat + 2 * (ql_ + kvl_), C_, k_.ptr, T, int(H_), int(dn_), int(dr_), c.stream());
    }
    c.drop(k_nope);
  }

  // Block 2 backward from dO: returns d(latent) [T, C].
  Buf block2_backward(Ctx& c, Buf& d_o) {
    const int64_t T = d_.tokens();
    Buf dq = c.act("d_q", bf16_bytes(T * H_ * (dn_ + dr_)));
    Buf dk = c.act("d_k", bf16_bytes(T * H_ * (dn_ + dr_)));
    Buf dv = c.act("d_v", bf16_bytes(T * H_ * dv_));
    Buf ws = c.act("attn_bwd.ws", attn_bwd_workspace_bytes(c, ad_));
    attn_bwd(c, "flash_attn.bwd", ad_, q_.ptr, k_.ptr, v_.ptr, o_.ptr, d_o.ptr, lse_.as<float>(), dq.ptr, dk.ptr,
             dv.ptr, ws.ptr);
    c.drop_all({&ws, &d_o, &q_, &k_, &v_, &lse_, &o_});
    Buf dlat = c.act("d_latent", bf16_bytes(T * C_));
    char* dl = dlat.as<char>();
    Buf dk_nope = c.act("d_k_nope", bf16_bytes(T * H_ * dn_));
    {
      OpScope op(c, {"k_split", "scatter", T, H_ * (dn_ + dr_), 0, double(T) * H_ * dr_,
                     2.0 * T * H_ * (dn_ + dr_) + 2.0 * T * (H_ * dn_ + dr_)});
      k::mla_k_split(dk.ptr, dk_nope.ptr, dl + 2 * (ql_ + kvl_), C_, T, int(H_), int(dn_), int(dr_), c.stream());
    }
    c.drop(dk);
    Buf dcq = c.act("d_q_latent_norm", bf16_bytes(T * ql_));
    linear_bwd_data(c, "q_up.dgrad", {T, ql_, H_ * (dn_ + dr_)}, dq.ptr, P(kUq).w.ptr, dcq.ptr);
    linear_bwd_weight(c, "q_up.wgrad", {T, ql_, H_ * (dn_ + dr_)}, dq.ptr, cqn_.ptr, P(kUq).g.ptr);
    c.drop_all({&dq, &cqn_});
    Buf dckv = c.act("d_kv_latent_norm", bf16_bytes(T * kvl_));
    linear_bwd_data(c, "k_up.dgrad", {T, kvl_, H_ * dn_}, dk_nope.ptr, P(kUk).w.ptr, dckv.ptr);
    linear_bwd_weight(c, "k_up.wgrad", {T, kvl_, H_ * dn_}, dk_nope.ptr, ckvn_.ptr, P(kUk).g.ptr);
    linear_bwd_data(c, "v_up.dgrad", {T, kvl_, H_ * dv_}, dv.ptr, P(kUv).w.ptr, dckv.ptr, 1.f);
    linear_bwd_weight(c, "v_up.wgrad", {T, kvl_, H_ * dv_}, dv.ptr, ckvn_.ptr, P(kUv).g.ptr);
    c.drop_all({&dk_nope, &dv, &ckvn_});
    const char* lat = lat_.as<char>();
    ops::rmsnorm_bwd(c, "q_norm.bwd", lat, C_, P(kQNorm).w.ptr, dcq.ptr, ql_, dl, C_, P(kQNorm).g.ptr, T, ql_);
    ops::rmsnorm_bwd(c, "kv_norm.bwd", lat + 2 * ql_, C_, P(kKvNorm).w.ptr, dckv.ptr, kvl_, dl + 2 * ql_, C_,
                     P(kKvNorm).g.ptr, T, kvl_);
    c.drop_all({&dcq, &dckv, &lat_});
    return dlat;
  }

  void attention_fwd(Ctx& c, const std::string& name, Buf& o, Buf& lse) {
    Buf ws;
    const int64_t ws_bytes = attn_fwd_workspace_bytes(c, ad_);
    if (ws_bytes > 0) ws = c.act("attn_fwd.ws", ws_bytes);
    attn_fwd(c, name, ad_, q_.ptr, k_.ptr, v_.ptr, o.ptr, lse.as<float>(), ws.ptr);
    c.drop(ws);
  }

  int64_t H_ = 0, ql_ = 0, kvl_ = 0, dn_ = 0, dr_ = 0, dv_ = 0, C_ = 0;
  AttnDims ad_;
  Buf x_, xn_, lat_, cqn_, ckvn_, q_, k_, v_, o_, lse_;
};

}  // namespace

std::unique_ptr<Block> make_mla(const Dims& d) { return std::make_unique<Mla>(d); }

}  // namespace remat::cuda
