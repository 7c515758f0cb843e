// RMSNorm+Linear and the SwiGLU MLP (norm, gate/up, SiLU*up, down).
#include <cmath>

#include "blocks.hpp"
#include "gemm.hpp"
#include "ops.hpp"

namespace remat::cuda {

namespace {

float lin_scale(int64_t in) { return 1.f / std::sqrt(float(in)); }

class RmsNormLinear : public Block {
 public:
  explicit RmsNormLinear(const Dims& d) : Block(d) {}
  std::string name() const override { return "rmsnorm_linear"; }

  void init(Ctx& c, uint64_t seed) override {
    add_param(c, "norm.weight", d_.hidden_size, seed + 1, 0.1f, 1.f);
    add_param(c, "linear.weight", d_.out_features * d_.hidden_size, seed + 2, lin_scale(d_.hidden_size));
  }

  void forward(Ctx& c, Strategy st, Buf& x, Buf& y) override {
    const int64_t T = d_.tokens(), h = d_.hidden_size, n = d_.out_features;
    x_ = x;
    x = Buf{};
    c.keep(x_, "x");
    xn_ = c.act("xn", bf16_bytes(T * h));
    ops::rmsnorm_fwd(c, "norm", x_.ptr, h, params_[0].w.ptr, xn_.ptr, h, T, h);
    y = c.act("y", bf16_bytes(T * n));
    linear_fwd(c, "linear", {T, h, n}, xn_.ptr, params_[1].w.ptr, y.ptr);
    keep_or_drop(c, st, xn_, "xn");
  }

  void backward(Ctx& c, Strategy st, Buf& dy, Buf& dx) override {
    const int64_t T = d_.tokens(), h = d_.hidden_size, n = d_.out_features;
    Buf y_re;
    if (st == Strategy::standard || st == Strategy::eagle) {
      c.phase(Phase::recompute);
      xn_ = c.act("xn", bf16_bytes(T * h));
      ops::rmsnorm_fwd(c, "norm.recompute", x_.ptr, h, params_[0].w.ptr, xn_.ptr, h, T, h);
      if (st == Strategy::standard) {
        y_re = c.act("y.recompute", bf16_bytes(T * n));
        linear_fwd(c, "linear.recompute", {T, h, n}, xn_.ptr, params_[1].w.ptr, y_re.ptr);
      }
      c.phase(Phase::backward);
    }
    Buf dxn = c.act("dxn", bf16_bytes(T * h));
    linear_bwd_data(c, "linear.dgrad", {T, h, n}, dy.ptr, params_[1].w.ptr, dxn.ptr);
    linear_bwd_weight(c, "linear.wgrad", {T, h, n}, dy.ptr, xn_.ptr, params_[1].g.ptr);
    c.drop_all({&y_re, &xn_});
    dx = c.act("dx", bf16_bytes(T * h));
    ops::rmsnorm_bwd(c, "norm.bwd", x_.ptr, h, params_[0].w.ptr, dxn.ptr, h, dx.ptr, h, params_[0].g.ptr, T, h);
    c.drop_all({&dxn, &x_});
  }

  int64_t output_elems() const override { return d_.tokens() * d_.out_features; }

 private:
  Buf x_, xn_;
};

class Mlp : public Block {
 public:
  explicit Mlp(const Dims& d) : Block(d) {}
  std::string name() const override { return "mlp"; }

  void init(Ctx& c, uint64_t seed) override {
    const int64_t h = d_.hidden_size, I = d_.intermediate_size;
    add_param(c, "norm.weight", h, seed + 1, 0.1f, 1.f);
    add_param(c, "gate_up.weight", 2 * I * h, seed + 2, lin_scale(h));
    add_param(c, "down.weight", h * I, seed + 3, lin_scale(I));
  }

  void forward(Ctx& c, Strategy st, Buf& x, Buf& y) override {
    const int64_t T = d_.tokens(), h = d_.hidden_size, I = d_.intermediate_size;
    x_ = x;
    x = Buf{};
    c.keep(x_, "x");
    inner_forward(c, "");
    keep_or_drop(c, st, xn_, "xn");
    keep_or_drop(c, st, gu_, "gate_up");
    y = c.act("y", bf16_bytes(T * h));
    linear_fwd(c, "down", {T, I, h}, a_.ptr, params_[2].w.ptr, y.ptr);
    keep_or_drop(c, st, a_, "act");
  }

  void backward(Ctx& c, Strategy st, Buf& dy, Buf& dx) override {
    const int64_t T = d_.tokens(), h = d_.hidden_size, I = d_.intermediate_size;
    Buf y_re;
    if (st == Strategy::standard || st == Strategy::eagle) {
      c.phase(Phase::recompute);
      inner_forward(c, ".recompute");
      if (st == Strategy::standard) {
        y_re = c.act("y.recompute", bf16_bytes(T * h));
        linear_fwd(c, "down.recompute", {T, I, h}, a_.ptr, params_[2].w.ptr, y_re.ptr);
      }
      c.phase(Phase::backward);
    }
    Buf da = c.act("d_act", bf16_bytes(T * I));
    linear_bwd_data(c, "down.dgrad", {T, I, h}, dy.ptr, params_[2].w.ptr, da.ptr);
    linear_bwd_weight(c, "down.wgrad", {T, I, h}, dy.ptr, a_.ptr, params_[2].g.ptr);
    c.drop_all({&y_re, &a_});
    Buf dgu = c.act("d_gate_up", bf16_bytes(T * 2 * I));
    ops::swiglu_bwd(c, "swiglu.bwd", gu_.ptr, da.ptr, dgu.ptr, T, I);
    c.drop_all({&da, &gu_});
    Buf dxn = c.act("dxn", bf16_bytes(T * h));
    linear_bwd_data(c, "gate_up.dgrad", {T, h, 2 * I}, dgu.ptr, params_[1].w.ptr, dxn.ptr);
    linear_bwd_weight(c, "gate_up.wgrad", {T, h, 2 * I}, dgu.ptr, xn_.ptr, params_[1].g.ptr);
    c.drop_all({&dgu, &xn_});
    dx = c.act("dx", bf16_bytes(T * h));
    ops::rmsnorm_bwd(c, "norm.bwd", x_.ptr, h, params_[0].w.ptr, dxn.ptr, h, dx.ptr, h, params_[0].g.ptr, T, h);
    c.drop_all({&dxn, &x_});
  }

 private:
  // xn, gate_up and act from x (forward and recompute share it).
  void inner_forward(Ctx& c, const std::string& sfx) {
    const int64_t T = d_.tokens(), h = d_.hidden_size, I = d_.intermediate_size;
    xn_ = c.act("xn", bf16_bytes(T * h));
    ops::rmsnorm_fwd(c, "norm" + sfx, x_.ptr, h, params_[0].w.ptr, xn_.ptr, h, T, h);
    gu_ = c.act("gate_up", bf16_bytes(T * 2 * I));
    linear_fwd(c, "gate_up" + sfx, {T, h, 2 * I}, xn_.ptr, params_[1].w.ptr, gu_.ptr);
    a_ = c.act("act", bf16_bytes(T * I));
    ops::swiglu_fwd(c, "swiglu" + sfx, gu_.ptr, a_.ptr, T, I);
  }
  Buf x_, xn_, gu_, a_;
};

}  // namespace

std::unique_ptr<Block> make_rmsnorm_linear(const Dims& d) { return std::make_unique<RmsNormLinear>(d); }
std::unique_ptr<Block> make_mlp(const Dims& d) { return std::make_unique<Mlp>(d); }

}  // namespace remat::cuda
