// MoE as two recompute blocks (Appendix C). Block 1: RMSNorm, router (softmax, top-K or the
// balanced assignment) and the shared experts (one SwiGLU MLP of n_shared * moe_intermediate).
// The token permutation (gather of the normed tokens into expert order) is outside both blocks.
// Block 2: the routed experts (a loop of cuBLASLt GEMMs, one per expert) on the permuted rows,
// with the routing probability applied to the SwiGLU output so the down projection is the
// block's final linear. The unpermutation sums each token's K rows and the shared output.
#include <cmath>
#include <vector>

#include "blocks.hpp"
#include "check.hpp"
#include "gemm.hpp"
#include "kernels.hpp"
#include "ops.hpp"

namespace remat::cuda {

namespace {

enum MoeParam { kNorm, kRouter, kSharedGu, kSharedDown, kExpGu, kExpDown };
enum class ExpOp { fwd, dgrad, wgrad };

class Moe : public Block {
 public:
  explicit Moe(const Dims& d) : Block(d) {
    E_ = d_.n_routed_experts;
    K_ = d_.num_experts_per_tok;
    I_ = d_.moe_intermediate_size;
    Is_ = d_.n_shared_experts * I_;
    TK_ = d_.tokens() * K_;
  }
  std::string name() const override { return "moe"; }
  std::vector<std::string> sub_blocks() const override { return {"moe.routed", "moe.shared"}; }

  void init(Ctx& c, uint64_t seed) override {
    const int64_t h = d_.hidden_size;
    const float sh = 1.f / std::sqrt(float(h));
    add_param(c, "norm.weight", h, seed + 1, 0.1f, 1.f);
    add_param(c, "router.weight", E_ * h, seed + 2, sh);
    add_param(c, "shared.gate_up.weight", 2 * Is_ * h, seed + 3, sh);
    add_param(c, "shared.down.weight", h * Is_, seed + 4, 1.f / std::sqrt(float(Is_)));
    add_param(c, "experts.gate_up.weight", E_ * 2 * I_ * h, seed + 5, sh);
    add_param(c, "experts.down.weight", E_ * h * I_, seed + 6, 1.f / std::sqrt(float(I_)));
  }

  void forward(Ctx& c, Strategy st, Buf& x, Buf& y) override {
    const int64_t T = d_.tokens(), h = d_.hidden_size;
    x_ = x;
    x = Buf{};
    c.keep(x_, "x");
    block1_forward(c, "", true);
    route(c);
    Buf y_s = c.act("shared_out", bf16_bytes(T * h));
    linear_fwd(c, "shared.down", {T, Is_, h}, as_.ptr, P(kSharedDown).w.ptr, y_s.ptr);
    xp_ = c.act("x_permuted", bf16_bytes(TK_ * h));
    ops::gather_rows(c, "permute", xn_.ptr, h, row_token_.as<int>(), xp_.ptr, TK_, h);
    c.keep(xp_, "x_permuted");
    keep_or_drop(c, st, xn_, "xn");
    keep_or_drop(c, st, gus_, "shared_gate_up");
    keep_or_drop(c, st, as_, "shared_act");
    if (st == Strategy::standard || st == Strategy::eagle) c.drop(probs_);
    else c.keep(probs_, "router_probs");
    Buf out = block2_forward(c, "", true);
    keep_or_drop(c, st, gue_, "experts_gate_up");
    keep_or_drop(c, st, ae_, "experts_act");
    y = c.act("y", bf16_bytes(T * h));
    ops::combine_rows(c, "unpermute", out.ptr, pos_.as<int>(), y_s.ptr, y.ptr, T, int(K_), h);
    c.drop_all({&out, &y_s});
  }

  void backward(Ctx& c, Strategy st, Buf& dy, Buf& dx) override {
    const int64_t T = d_.tokens(), h = d_.hidden_size;
    const bool re = st == Strategy::standard || st == Strategy::eagle;
    Buf dout = c.act("d_experts_out", bf16_bytes(TK_ * h));
    ops::gather_rows(c, "unpermute.bwd", dy.ptr, h, row_token_.as<int>(), dout.ptr, TK_, h);
    Buf out_re;
    if (re) {
      c.phase(Phase::recompute);
      out_re = block2_forward(c, ".recompute", st == Strategy::standard);
      c.phase(Phase::backward);
    }
    Buf dp = c.act("d_route_prob", f32_bytes(TK_));
    Buf dxn = block2_backward(c, dout, out_re, dp);
    Buf ys_re;
    if (re) {
      c.phase(Phase::recompute);
      block1_forward(c, ".recompute", false);
      if (st == Strategy::standard) {
        ys_re = c.act("shared_out.recompute", bf16_bytes(T * h));
        linear_fwd(c, "shared.down.recompute", {T, Is_, h}, as_.ptr, P(kSharedDown).w.ptr, ys_re.ptr);
      }
      c.phase(Phase::backward);
    }
    block1_backward(c, dy, dp, dxn, ys_re);
    dx = c.act("dx", bf16_bytes(T * h));
    ops::rmsnorm_bwd(c, "norm.bwd", x_.ptr, h, P(kNorm).w.ptr, dxn.ptr, h, dx.ptr, h, P(kNorm).g.ptr, T, h);
    c.drop_all({&dxn, &x_, &idx_, &p_, &pos_, &row_token_, &row_slot_});
  }

 private:
  Param& P(MoeParam i) { return params_[i]; }

  // Norm, router (softmax; top-K only when `select`) and the shared experts' gate/up and act.
  void block1_forward(Ctx& c, const std::string& sfx, bool select) {
    const int64_t T = d_.tokens(), h = d_.hidden_size;
    xn_ = c.act("xn", bf16_bytes(T * h));
    ops::rmsnorm_fwd(c, "norm" + sfx, x_.ptr, h, P(kNorm).w.ptr, xn_.ptr, h, T, h);
    Buf logits = c.act("router_logits", bf16_bytes(T * E_));
    linear_fwd(c, "router" + sfx, {T, h, E_}, xn_.ptr, P(kRouter).w.ptr, logits.ptr);
    probs_ = c.act("router_probs", f32_bytes(T * E_));
    Buf idx = c.act("route_idx", 4 * TK_), p = c.act("route_prob", f32_bytes(TK_));
    {
      OpScope op(c, {"router.select" + sfx, "router", T, E_, K_, 5.0 * T * E_, 2.0 * T * E_ + 4.0 * T * E_});
      k::router_select(logits.ptr, probs_.as<float>(), idx.as<int>(), p.as<float>(), T, int(E_), int(K_),
                       d_.routing == "router" ? 0 : 1, c.stream());
    }
    c.drop(logits);
    if (select) {
      idx_ = idx;
      p_ = p;
    } else {
      c.drop_all({&idx, &p});
    }
    gus_ = c.act("shared_gate_up", bf16_bytes(T * 2 * Is_));
    linear_fwd(c, "shared.gate_up" + sfx, {T, h, 2 * Is_}, xn_.ptr, P(kSharedGu).w.ptr, gus_.ptr);
    as_ = c.act("shared_act", bf16_bytes(T * Is_));
    ops::swiglu_fwd(c, "shared.swiglu" + sfx, gus_.ptr, as_.ptr, T, Is_);
  }

  // Host-side stable counting sort of the (token, k) slots by expert (the permutation).
  void route(Ctx& c) {
    std::vector<int> idx(TK_);
    CUDA_CHECK(cudaMemcpyAsync(idx.data(), idx_.ptr, 4 * TK_, cudaMemcpyDeviceToHost, c.stream()));
    CUDA_CHECK(cudaStreamSynchronize(c.stream()));
    counts_.assign(E_, 0);
    for (int e : idx) counts_[e]++;
    offsets_.assign(E_ + 1, 0);
    for (int64_t e = 0; e < E_; ++e) offsets_[e + 1] = offsets_[e] + counts_[e];
    std::vector<int> fill(offsets_.begin(), offsets_.end() - 1), pos(TK_), row_token(TK_), row_slot(TK_);
    for (int64_t slot = 0; slot < TK_; ++slot) {
      const int r = int(fill[idx[slot]]++);
      pos[slot] = r;
      row_token[r] = int(slot / K_);
      row_slot[r] = int(slot);
    }
    pos_ = c.act("route_pos", 4 * TK_);
    row_token_ = c.act("route_row_token", 4 * TK_);
    row_slot_ = c.act("route_row_slot", 4 * TK_);
    CUDA_CHECK(cudaMemcpyAsync(pos_.ptr, pos.data(), 4 * TK_, cudaMemcpyHostToDevice, c.stream()));
    CUDA_CHECK(cudaMemcpyAsync(row_token_.ptr, row_token.data(), 4 * TK_, cudaMemcpyHostToDevice, c.stream()));
    CUDA_CHECK(cudaMemcpyAsync(row_slot_.ptr, row_slot.data(), 4 * TK_, cudaMemcpyHostToDevice, c.stream()));
    CUDA_CHECK(cudaStreamSynchronize(c.stream()));
  }

  // One GEMM per expert over its rows; logged as one op.
  void experts(Ctx& c, const std::string& name, ExpOp op, int64_t in, int64_t out, const void* wbase, void* gbase,
               const char* a, char* b) {
    double flops = 0, bytes = 0;
    for (int64_t e = 0; e < E_; ++e) {
      flops += gemm_flops(counts_[e], in, out);
      bytes += gemm_bytes(counts_[e], in, out, false);
    }
    OpScope scope(c, {name, "gemm_grouped", TK_, op == ExpOp::dgrad ? in : out, op == ExpOp::dgrad ? out : in,
                      flops, bytes, E_});
    for (int64_t e = 0; e < E_; ++e) {
      const int64_t n = counts_[e], r0 = offsets_[e];
      const LinearShape s{n, in, out};
      const char* w = static_cast<const char*>(wbase) + 2 * e * in * out;
      if (op == ExpOp::fwd) {
        if (n > 0) linear_fwd(c, "", s, a + 2 * r0 * in, w, b + 2 * r0 * out);
      } else if (op == ExpOp::dgrad) {
        if (n > 0) linear_bwd_data(c, "", s, a + 2 * r0 * out, w, b + 2 * r0 * in);
      } else {
        char* g = static_cast<char*>(gbase) + 2 * e * in * out;
        if (n > 0)
          linear_bwd_weight(c, "", s, a + 2 * r0 * out, b + 2 * r0 * in, g);
        else
          CUDA_CHECK(cudaMemsetAsync(g, 0, size_t(2 * in * out), c.stream()));
      }
    }
  }

  // Experts' gate/up and act on the permuted rows; the down projection when `down`.
  Buf block2_forward(Ctx& c, const std::string& sfx, bool down) {
    const int64_t h = d_.hidden_size;
    gue_ = c.act("experts_gate_up", bf16_bytes(TK_ * 2 * I_));
    experts(c, "experts.gate_up" + sfx, ExpOp::fwd, h, 2 * I_, P(kExpGu).w.ptr, nullptr, xp_.as<char>(),
            gue_.as<char>());
    ae_ = c.act("experts_act", bf16_bytes(TK_ * I_));
    ops::swiglu_fwd(c, "experts.swiglu" + sfx, gue_.ptr, ae_.ptr, TK_, I_, p_.as<float>(), row_slot_.as<int>());
    Buf out;
    if (down) {
      out = c.act(sfx.empty() ? "experts_out" : "experts_out.recompute", bf16_bytes(TK_ * h));
      experts(c, "experts.down" + sfx, ExpOp::fwd, I_, h, P(kExpDown).w.ptr, nullptr, ae_.as<char>(),
              out.as<char>());
    }
    return out;
  }

  // Routed experts backward from d(out); fills dp (d route prob per slot); returns d(xn), routed part.
  Buf block2_backward(Ctx& c, Buf& dout, Buf& out_re, Buf& dp) {
    const int64_t T = d_.tokens(), h = d_.hidden_size;
    Buf da = c.act("d_experts_act", bf16_bytes(TK_ * I_));
    experts(c, "experts.down.dgrad", ExpOp::dgrad, I_, h, P(kExpDown).w.ptr, nullptr, dout.as<char>(), da.as<char>());
    experts(c, "experts.down.wgrad", ExpOp::wgrad, I_, h, nullptr, P(kExpDown).g.ptr, dout.as<char>(),
            ae_.as<char>());
    c.drop_all({&out_re, &ae_, &dout});
    Buf dgu = c.act("d_experts_gate_up", bf16_bytes(TK_ * 2 * I_));
    ops::swiglu_bwd(c, "experts.swiglu.bwd", gue_.ptr, da.ptr, dgu.ptr, TK_, I_, p_.as<float>(), row_slot_.as<int>(),
                    dp.as<float>());
    c.drop_all({&da, &gue_});
    Buf dxp = c.act("d_x_permuted", bf16_bytes(TK_ * h));
    experts(c, "experts.gate_up.dgrad", ExpOp::dgrad, h, 2 * I_, P(kExpGu).w.ptr, nullptr, dgu.as<char>(),
            dxp.as<char>());
    experts(c, "experts.gate_up.wgrad", ExpOp::wgrad, h, 2 * I_, nullptr, P(kExpGu).g.ptr, dgu.as<char>(),
            xp_.as<char>());
    c.drop_all({&dgu, &xp_});
    Buf dxn = c.act("dxn", bf16_bytes(T * h));
    ops::combine_rows(c, "permute.bwd", dxp.ptr, pos_.as<int>(), nullptr, dxn.ptr, T, int(K_), h);
    c.drop(dxp);
    return dxn;
  }

  // Router and shared experts backward; accumulates into dxn.
  void block1_backward(Ctx& c, Buf& dy, Buf& dp, Buf& dxn, Buf& ys_re) {
    const int64_t T = d_.tokens(), h = d_.hidden_size;
    Buf dlogits = c.act("d_router_logits", bf16_bytes(T * E_));
    {
      OpScope op(c, {"router.bwd", "router", T, E_, K_, 4.0 * T * E_, 4.0 * T * E_ + 2.0 * T * E_});
      k::router_bwd(probs_.as<float>(), idx_.as<int>(), dp.as<float>(), dlogits.ptr, T, int(E_), int(K_), c.stream());
    }
    c.drop_all({&probs_, &dp});
    linear_bwd_data(c, "router.dgrad", {T, h, E_}, dlogits.ptr, P(kRouter).w.ptr, dxn.ptr, 1.f);
    linear_bwd_weight(c, "router.wgrad", {T, h, E_}, dlogits.ptr, xn_.ptr, P(kRouter).g.ptr);
    c.drop(dlogits);
    Buf das = c.act("d_shared_act", bf16_bytes(T * Is_));
    linear_bwd_data(c, "shared.down.dgrad", {T, Is_, h}, dy.ptr, P(kSharedDown).w.ptr, das.ptr);
    linear_bwd_weight(c, "shared.down.wgrad", {T, Is_, h}, dy.ptr, as_.ptr, P(kSharedDown).g.ptr);
    c.drop_all({&ys_re, &as_});
    Buf dgus = c.act("d_shared_gate_up", bf16_bytes(T * 2 * Is_));
    ops::swiglu_bwd(c, "shared.swiglu.bwd", gus_.ptr, das.ptr, dgus.ptr, T, Is_);
    c.drop_all({&das, &gus_});
    linear_bwd_data(c, "shared.gate_up.dgrad", {T, h, 2 * Is_}, dgus.ptr, P(kSharedGu).w.ptr, dxn.ptr, 1.f);
    linear_bwd_weight(c, "shared.gate_up.wgrad", {T, h, 2 * Is_}, dgus.ptr, xn_.ptr, P(kSharedGu).g.ptr);
    c.drop_all({&dgus, &xn_});
  }

  int64_t E_ = 0, K_ = 0, I_ = 0, Is_ = 0, TK_ = 0;
  std::vector<int64_t> counts_, offsets_;
  Buf x_, xn_, probs_, idx_, p_, pos_, row_token_, row_slot_, gus_, as_, xp_, gue_, ae_;
};

}  // namespace

std::unique_ptr<Block> make_moe(const Dims& d) { return std::make_unique<Moe>(d); }

}  // namespace remat::cuda
