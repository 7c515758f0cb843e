#include "remat/cost/paper_formulas.hpp"

namespace remat::paper {

// RMSNorm followed by one linear h -> h1.
Cell rmsnorm_linear(const Dims& x, Method m) {
  const double bs = x.b * x.s;
  switch (m) {
    case Method::none:
      // input x and normalized x, 2 bytes each; linear forward 2bsh h1 + backward 4bsh h1
      return {4 * bs * x.h, 6 * bs * x.h * x.h1};
    case Method::standard:
      // input only; backward replays the linear forward (+2bsh h1)
      return {2 * bs * x.h, 8 * bs * x.h * x.h1};
    case Method::eagle:
      // input only; the linear's gradients come analytically, no forward replay
      return {2 * bs * x.h, 6 * bs * x.h * x.h1};
  }
  return {};
}

// Norm, gate/up (h -> h1), SiLU, down (h1 -> h): three h x h1 matrices.
Cell mlp(const Dims& x, Method m) {
  const double bs = x.b * x.s;
  switch (m) {
    case Method::none:
      // x, norm(x): 4bsh; gate, up, silu(gate)*up: 6bsh1; 3 matrices x 6bshh1
      return {4 * bs * x.h + 6 * bs * x.h1, 18 * bs * x.h * x.h1};
    case Method::standard:
      // input only; replay all three matrices (+6bshh1)
      return {2 * bs * x.h, 24 * bs * x.h * x.h1};
    case Method::eagle:
      // input only; replay gate and up, not down (+4bshh1)
      return {2 * bs * x.h, 22 * bs * x.h * x.h1};
  }
  return {};
}

// One shared expert plus K routed experts, each an MLP of size h1.
Cell moe(const Dims& x, Method m) {
  const double bs = x.b * x.s;
  const double K = x.K;
  switch (m) {
    case Method::none:
      // 2bs(2h + 3h1 + K h1 + 3K h1), printed so in Table 1 (the K h1 term
      // stands where the K permuted h-wide token copies are kept)
      return {2 * bs * (2 * x.h + 3 * x.h1 + K * x.h1 + 3 * K * x.h1), 18 * bs * x.h * x.h1 * (1 + K)};
    case Method::standard:
      // block inputs: x and K permuted copies; replay every expert matrix
      return {2 * bs * x.h * (1 + K), 24 * bs * x.h * x.h1 * (1 + K)};
    case Method::eagle:
      // same inputs; no replay of each expert's down projection
      return {2 * bs * x.h * (1 + K), 22 * bs * x.h * x.h1 * (1 + K)};
  }
  return {};
}

// Norm, q/k/v projections, flash attention (non-causal as printed), output kept for Wo.
Cell gqa(const Dims& x, Method m) {
  const double bs = x.b * x.s;
  const double h = x.h;
  switch (m) {
    case Method::none:
      // x, norm(x), q, o: 8bsh; k, v: 4bsgd; projections 24bsh^2, attention 12bs^2h
      return {8 * bs * h + 4 * bs * x.g * x.d, 24 * bs * h * h + 12 * bs * x.s * h};
    case Method::standard:
      // x and o kept; replay projections (+6bsh^2) and flash forward (+4bs^2h)
      return {4 * bs * h, 30 * bs * h * h + 16 * bs * x.s * h};
    case Method::eagle:
      // x and o kept; replay projections only, flash backward from the kept o
      return {4 * bs * h, 30 * bs * h * h + 12 * bs * x.s * h};
  }
  return {};
}

// Multi-head latent attention, two recompute blocks.
Cell mla(const Dims& x, Method m) {
  const double bs = x.b * x.s;
  const double h = x.h, ht = x.h_tilde(), a = x.a, d = x.d, r = x.r, s = x.s;
  switch (m) {
    case Method::none:
      // x, norm(x): 2h; latents h~; q, k, v, o: 4ad; rope parts of q, k: 2ar
      return {2 * bs * (2 * h + ht + 4 * a * d + 2 * a * r),
              6 * bs * (h * ht + a * (d + r) * (x.h_q + s) + a * d * (2 * x.h_kv + s + h))};
    case Method::standard:
      // x, latents, o kept; replay everything but the output projection
      return {2 * bs * (h + ht + a * d),
              2 * bs * (4 * h * ht + a * (d + r) * (4 * x.h_q + 4 * s) + a * d * (8 * x.h_kv + 4 * s + 3 * h))};
    case Method::eagle:
      // as standard, minus the down projections' and flash attention's forward replay
      return {2 * bs * (h + ht + a * d),
              2 * bs * (3 * h * ht + a * (d + r) * (4 * x.h_q + 3 * s) + a * d * (8 * x.h_kv + 3 * s + 3 * h))};
  }
  return {};
}

Cell table1(Module module, const Dims& x, Method m) {
  switch (module) {
    case Module::rmsnorm_linear:
      return rmsnorm_linear(x, m);
    case Module::mlp:
      return mlp(x, m);
    case Module::moe:
      return moe(x, m);
    case Module::gqa:
      return gqa(x, m);
    case Module::mla:
      return mla(x, m);
  }
  return {};
}

}  // namespace remat::paper
