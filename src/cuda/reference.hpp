// Plain fp32 CPU reference of the five blocks (forward and backward), for the correctness
// checks at small dims and the host-side tests. No CUDA here.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace remat::cuda::ref {

using Vec = std::vector<float>;

struct RefDims {
  int64_t b = 1, s = 0, h = 0, inter = 0, heads = 0, kv_heads = 0, head_dim = 0, out = 0;
  int64_t moe_inter = 0, experts = 0, topk = 0, shared = 0;
  int64_t q_lora = 0, kv_lora = 0, nope = 0, rope = 0, v_dim = 0;
  int64_t tokens() const { return b * s; }
};

struct Grads {
  Vec y, dx;
  std::map<std::string, Vec> dw;  // by the backend's parameter names
};

// The block's output and gradients for input x, upstream gradient dy and weights w (MoE routing:
// the balanced assignment idx = (t*K + k) % E with the router's softmax probabilities).
Grads block_grads(const std::string& block, const RefDims& d, const Vec& x, const Vec& dy,
                  const std::map<std::string, Vec>& w);

// Primitives (row-major; a weight is [out, in]).
Vec linear(const Vec& x, const Vec& w, int64_t rows, int64_t in, int64_t out);
void linear_bwd(const Vec& dy, const Vec& x, const Vec& w, int64_t rows, int64_t in, int64_t out, Vec& dx, Vec& dw);
Vec rmsnorm(const Vec& x, const Vec& g, int64_t rows, int64_t h, float eps = 1e-6f);
void rmsnorm_bwd(const Vec& x, const Vec& g, const Vec& dy, int64_t rows, int64_t h, Vec& dx, Vec& dg,
                 float eps = 1e-6f);
// gu rows are [gate | up]; scale (optional) multiplies each output row.
Vec swiglu(const Vec& gu, int64_t rows, int64_t inter, const Vec& scale = {});
void swiglu_bwd(const Vec& gu, const Vec& da, int64_t rows, int64_t inter, const Vec& scale, Vec& dgu, Vec* dscale);
// Causal attention per batch; q [T, hq*dqk], k [T, hk*dqk], v [T, hk*dv], o [T, hq*dv]; lse [hq, T].
void attention(const Vec& q, const Vec& k, const Vec& v, int64_t b, int64_t s, int64_t hq, int64_t hk, int64_t dqk,
               int64_t dv, Vec& o, Vec& lse);
void attention_bwd(const Vec& q, const Vec& k, const Vec& v, const Vec& dout, int64_t b, int64_t s, int64_t hq,
                   int64_t hk, int64_t dqk, int64_t dv, Vec& dq, Vec& dk, Vec& dv_out);

// Table 8 metrics of test against ref.
struct Metrics {
  double max_abs = 0, mean_abs = 0, mean_rel = 0, ref_max_abs = 0, ref_mean_abs = 0;
};
Metrics metrics(const Vec& test, const Vec& ref);

}  // namespace remat::cuda::ref
