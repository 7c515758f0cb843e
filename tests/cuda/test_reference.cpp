// Host-side checks of the fp32 CPU reference against hand-computed values and finite differences.
#include <gtest/gtest.h>

#include <cmath>

#include "reference.hpp"

using namespace remat::cuda::ref;

TEST(Reference, LinearHandValues) {
  // x = [[1, 2]], W = [[1, 0], [0, 1], [1, 1]] -> y = [[1, 2, 3]]
  Vec y = linear({1, 2}, {1, 0, 0, 1, 1, 1}, 1, 2, 3);
  EXPECT_FLOAT_EQ(y[0], 1);
  EXPECT_FLOAT_EQ(y[1], 2);
  EXPECT_FLOAT_EQ(y[2], 3);
  Vec dx, dw;
  linear_bwd({1, 1, 1}, {1, 2}, {1, 0, 0, 1, 1, 1}, 1, 2, 3, dx, dw);
  EXPECT_FLOAT_EQ(dx[0], 2);  // W^T dy
  EXPECT_FLOAT_EQ(dx[1], 2);
  EXPECT_FLOAT_EQ(dw[4], 1);  // dy^T x, row 2
  EXPECT_FLOAT_EQ(dw[5], 2);
}

TEST(Reference, RmsNormHandValues) {
  // x = [3, 4]: mean square 12.5, rstd = 1/sqrt(12.5)
  Vec y = rmsnorm({3, 4}, {1, 2}, 1, 2, 0.f);
  EXPECT_NEAR(y[0], 3 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(y[1], 8 / std::sqrt(12.5), 1e-6);
}

TEST(Reference, SwigluHandValues) {
  // gate 0 -> silu 0; gate 1 -> silu(1) = 1 * sigmoid(1)
  Vec a = swiglu({0, 1, 5, 2}, 1, 2);
  EXPECT_FLOAT_EQ(a[0], 0.f);
  EXPECT_NEAR(a[1], 2.0 / (1 + std::exp(-1.0)), 1e-6);
}

TEST(Reference, CausalAttentionFirstRowCopiesV) {
  // The first query sees only the first key: o[0] = v[0], lse[0] = q0.k0 * scale.
  Vec q = {1, 0, 0, 1}, k = {2, 0, 0, 2}, v = {5, 6, 7, 8}, o, lse;
  attention(q, k, v, 1, 2, 1, 1, 2, 2, o, lse);
  EXPECT_FLOAT_EQ(o[0], 5);
  EXPECT_FLOAT_EQ(o[1], 6);
  EXPECT_NEAR(lse[0], 2 / std::sqrt(2.0), 1e-6);
  // Second row: scores [0, 2]/sqrt2 -> weights softmax
  const double w1 = 1 / (1 + std::exp(std::sqrt(2.0)));
  EXPECT_NEAR(o[2], w1 * 5 + (1 - w1) * 7, 1e-5);
}

// Finite-difference check of a block's dx: loss = sum(y * dy).
double loss(const std::string& b, const RefDims& d, const Vec& x, const Vec& dy, const std::map<std::string, Vec>& w) {
  Grads g = block_grads(b, d, x, dy, w);
  double l = 0;
  for (size_t i = 0; i < g.y.size(); ++i) l += double(g.y[i]) * dy[i];
  return l;
}

Vec pseudo(int64_t n, int seed, float scale, float offset = 0) {
  Vec v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = offset + scale * std::sin(0.7f * float(i) + 1.3f * float(seed));
  return v;
}

void fd_check(const std::string& b, const RefDims& d, std::map<std::string, Vec> w, int64_t in, int64_t out) {
  Vec x = pseudo(in, 1, 1.f), dy = pseudo(out, 2, 1.f);
  Grads g = block_grads(b, d, x, dy, w);
  const float eps = 1e-2f;
  for (int64_t i : {int64_t(0), in / 3, in - 1}) {
    Vec xp = x, xm = x;
    xp[i] += eps;
    xm[i] -= eps;
    const double num = (loss(b, d, xp, dy, w) - loss(b, d, xm, dy, w)) / (2 * eps);
    EXPECT_NEAR(g.dx[i], num, 2e-2 * std::max(1.0, std::fabs(num))) << b << " dx[" << i << "]";
  }
  for (auto& [name, wv] : w) {
    const int64_t i = int64_t(wv.size()) / 2;
    auto wp = w, wm = w;
    wp[name][i] += eps;
    wm[name][i] -= eps;
    const double num = (loss(b, d, x, dy, wp) - loss(b, d, x, dy, wm)) / (2 * eps);
    EXPECT_NEAR(g.dw.at(name)[i], num, 2e-2 * std::max(1.0, std::fabs(num))) << b << " " << name;
  }
}

TEST(Reference, MlpGradientsMatchFiniteDifferences) {
  RefDims d;
  d.s = 3, d.h = 8, d.inter = 6;
  fd_check("mlp", d,
           {{"norm.weight", pseudo(8, 3, 0.1f, 1)},
            {"gate_up.weight", pseudo(96, 4, 0.3f)},
            {"down.weight", pseudo(48, 5, 0.3f)}},
           24, 24);
}

TEST(Reference, GqaGradientsMatchFiniteDifferences) {
  RefDims d;
  d.s = 4, d.h = 8, d.heads = 2, d.kv_heads = 1, d.head_dim = 4;
  fd_check("gqa", d,
           {{"norm.weight", pseudo(8, 3, 0.1f, 1)},
            {"qkv.weight", pseudo(16 * 8, 4, 0.3f)},
            {"o.weight", pseudo(8 * 8, 5, 0.3f)}},
           32, 32);
}

TEST(Reference, MlaGradientsMatchFiniteDifferences) {
  RefDims d;
  d.s = 3, d.h = 8, d.heads = 2, d.q_lora = 4, d.kv_lora = 4, d.nope = 2, d.rope = 2, d.v_dim = 2;
  const int64_t C = 4 + 4 + 2;
  fd_check("mla", d,
           {{"norm.weight", pseudo(8, 3, 0.1f, 1)},
            {"down.weight", pseudo(C * 8, 4, 0.3f)},
            {"q_norm.weight", pseudo(4, 5, 0.1f, 1)},
            {"kv_norm.weight", pseudo(4, 6, 0.1f, 1)},
            {"q_up.weight", pseudo(2 * 4 * 4, 7, 0.3f)},
            {"k_up.weight", pseudo(2 * 2 * 4, 8, 0.3f)},
            {"v_up.weight", pseudo(2 * 2 * 4, 9, 0.3f)},
            {"o.weight", pseudo(8 * 4, 10, 0.3f)}},
           24, 24);
}

TEST(Reference, MoeGradientsMatchFiniteDifferences) {
  RefDims d;
  d.s = 3, d.h = 8, d.moe_inter = 4, d.experts = 4, d.topk = 2, d.shared = 1;
  fd_check("moe", d,
           {{"norm.weight", pseudo(8, 3, 0.1f, 1)},
            {"router.weight", pseudo(4 * 8, 4, 0.3f)},
            {"shared.gate_up.weight", pseudo(8 * 8, 5, 0.3f)},
            {"shared.down.weight", pseudo(8 * 4, 6, 0.3f)},
            {"experts.gate_up.weight", pseudo(4 * 8 * 8, 7, 0.3f)},
            {"experts.down.weight", pseudo(4 * 8 * 4, 8, 0.3f)}},
           24, 24);
}

TEST(Reference, MetricsAreTable8s) {
  Metrics m = metrics({1, 2.5}, {1, 2});
  EXPECT_DOUBLE_EQ(m.max_abs, 0.5);
  EXPECT_DOUBLE_EQ(m.mean_abs, 0.25);
  EXPECT_DOUBLE_EQ(m.mean_rel, 0.125);
}
