#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace remat::cuda::ref {

Vec linear(const Vec& x, const Vec& w, int64_t rows, int64_t in, int64_t out) {
  Vec y(rows * out, 0.f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = 0;
      for (int64_t i = 0; i < in; ++i) acc += double(x[r * in + i]) * w[o * in + i];
      y[r * out + o] = float(acc);
    }
  return y;
}

void linear_bwd(const Vec& dy, const Vec& x, const Vec& w, int64_t rows, int64_t in, int64_t out, Vec& dx, Vec& dw) {
  dx.assign(rows * in, 0.f);
  dw.assign(out * in, 0.f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      const float g = dy[r * out + o];
      if (g == 0.f) continue;
      for (int64_t i = 0; i < in; ++i) {
        dx[r * in + i] += g * w[o * in + i];
        dw[o * in + i] += g * x[r * in + i];
      }
    }
}

Vec rmsnorm(const Vec& x, const Vec& g, int64_t rows, int64_t h, float eps) {
  Vec y(rows * h);
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < h; ++i) ss += double(x[r * h + i]) * x[r * h + i];
    const double rstd = 1.0 / std::sqrt(ss / h + eps);
    for (int64_t i = 0; i < h; ++i) y[r * h + i] = float(x[r * h + i] * rstd * g[i]);
  }
  return y;
}

void rmsnorm_bwd(const Vec& x, const Vec& g, const Vec& dy, int64_t rows, int64_t h, Vec& dx, Vec& dg, float eps) {
  dx.assign(rows * h, 0.f);
  dg.assign(h, 0.f);
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0, dot = 0;
    for (int64_t i = 0; i < h; ++i) {
      ss += double(x[r * h + i]) * x[r * h + i];
      dot += double(dy[r * h + i]) * g[i] * x[r * h + i];
    }
    const double rstd = 1.0 / std::sqrt(ss / h + eps);
    const double coef = dot * rstd * rstd * rstd / h;
    for (int64_t i = 0; i < h; ++i) {
      dx[r * h + i] = float(dy[r * h + i] * g[i] * rstd - x[r * h + i] * coef);
      dg[i] += float(dy[r * h + i] * x[r * h + i] * rstd);
    }
  }
}

namespace {
double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }
}  // namespace

Vec swiglu(const Vec& gu, int64_t rows, int64_t inter, const Vec& scale) {
  Vec a(rows * inter);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < inter; ++j) {
      const double g = gu[r * 2 * inter + j], u = gu[r * 2 * inter + inter + j];
      a[r * inter + j] = float(g * sigmoid(g) * u * (scale.empty() ? 1.0 : scale[r]));
    }
  return a;
}

void swiglu_bwd(const Vec& gu, const Vec& da, int64_t rows, int64_t inter, const Vec& scale, Vec& dgu, Vec* dscale) {
  dgu.assign(rows * 2 * inter, 0.f);
  if (dscale) dscale->assign(rows, 0.f);
  for (int64_t r = 0; r < rows; ++r) {
    const double sc = scale.empty() ? 1.0 : scale[r];
    double ds = 0;
    for (int64_t j = 0; j < inter; ++j) {
      const double g = gu[r * 2 * inter + j], u = gu[r * 2 * inter + inter + j], sg = sigmoid(g);
      const double d = da[r * inter + j] * sc;
      dgu[r * 2 * inter + j] = float(d * u * sg * (1 + g * (1 - sg)));
      dgu[r * 2 * inter + inter + j] = float(d * g * sg);
      ds += double(da[r * inter + j]) * g * sg * u;
    }
    if (dscale) (*dscale)[r] = float(ds);
  }
}

namespace {

// Probabilities P[i][j] (j <= i) of one (batch, head); returns the row's lse.
double attn_row(const Vec& q, const Vec& k, int64_t qoff, int64_t base, int64_t i, int64_t hk_off, int64_t ldk,
                int64_t dqk, double scale, std::vector<double>& p) {
  p.assign(i + 1, 0.0);
  double mx = -1e300;
  for (int64_t j = 0; j <= i; ++j) {
    double sdot = 0;
    for (int64_t c = 0; c < dqk; ++c) sdot += double(q[qoff + c]) * k[(base + j) * ldk + hk_off + c];
    p[j] = sdot * scale;
    mx = std::max(mx, p[j]);
  }
  double z = 0;
  for (int64_t j = 0; j <= i; ++j) z += std::exp(p[j] - mx);
  for (int64_t j = 0; j <= i; ++j) p[j] = std::exp(p[j] - mx) / z;
  return mx + std::log(z);
}

}  // namespace

void attention(const Vec& q, const Vec& k, const Vec& v, int64_t b, int64_t s, int64_t hq, int64_t hk, int64_t dqk,
               int64_t dv, Vec& o, Vec& lse) {
  const double scale = 1.0 / std::sqrt(double(dqk));
  o.assign(b * s * hq * dv, 0.f);
  lse.assign(hq * b * s, 0.f);
  std::vector<double> p;
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t g = h / (hq / hk);
      for (int64_t i = 0; i < s; ++i) {
        const int64_t base = bi * s, t = base + i;
        lse[h * b * s + t] = float(attn_row(q, k, t * hq * dqk + h * dqk, base, i, g * dqk, hk * dqk, dqk, scale, p));
        for (int64_t c = 0; c < dv; ++c) {
          double acc = 0;
          for (int64_t j = 0; j <= i; ++j) acc += p[j] * v[(base + j) * hk * dv + g * dv + c];
          o[t * hq * dv + h * dv + c] = float(acc);
        }
      }
    }
}

void attention_bwd(const Vec& q, const Vec& k, const Vec& v, const Vec& dout, int64_t b, int64_t s, int64_t hq,
                   int64_t hk, int64_t dqk, int64_t dv, Vec& dq, Vec& dk, Vec& dv_out) {
  const double scale = 1.0 / std::sqrt(double(dqk));
  dq.assign(q.size(), 0.f);
  dk.assign(k.size(), 0.f);
  dv_out.assign(v.size(), 0.f);
  std::vector<double> p, dp;
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t g = h / (hq / hk);
      for (int64_t i = 0; i < s; ++i) {
        const int64_t base = bi * s, t = base + i, qoff = t * hq * dqk + h * dqk, ooff = t * hq * dv + h * dv;
        attn_row(q, k, qoff, base, i, g * dqk, hk * dqk, dqk, scale, p);
        dp.assign(i + 1, 0.0);
        double dsum = 0;
        for (int64_t j = 0; j <= i; ++j) {
          const int64_t voff = (base + j) * hk * dv + g * dv;
          for (int64_t c = 0; c < dv; ++c) {
            dp[j] += double(dout[ooff + c]) * v[voff + c];
            dv_out[voff + c] += float(p[j] * dout[ooff + c]);
          }
          dsum += p[j] * dp[j];
        }
        for (int64_t j = 0; j <= i; ++j) {
          const double ds = p[j] * (dp[j] - dsum) * scale;
          const int64_t koff = (base + j) * hk * dqk + g * dqk;
          for (int64_t c = 0; c < dqk; ++c) {
            dq[qoff + c] += float(ds * k[koff + c]);
            dk[koff + c] += float(ds * q[qoff + c]);
          }
        }
      }
    }
}

Metrics metrics(const Vec& test, const Vec& ref) {
  if (test.size() != ref.size()) throw std::runtime_error("metrics: size mismatch");
  Metrics m;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = std::fabs(double(test[i]) - ref[i]);
    m.max_abs = std::max(m.max_abs, d);
    m.mean_abs += d;
    m.mean_rel += d / std::max(std::fabs(double(ref[i])), 1e-10);
    m.ref_max_abs = std::max(m.ref_max_abs, std::fabs(double(ref[i])));
    m.ref_mean_abs += std::fabs(double(ref[i]));
  }
  const double n = ref.empty() ? 1.0 : double(ref.size());
  m.mean_abs /= n;
  m.mean_rel /= n;
  m.ref_mean_abs /= n;
  return m;
}

}  // namespace remat::cuda::ref
