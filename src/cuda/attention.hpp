// Causal flash attention forward and backward through cuDNN 9's fused SDPA, built with the
// cuDNN backend (graph) API: the operation graph the cuDNN frontend builds for SDPA, written
// against cudnn.h descriptors. Forward writes O and the softmax statistics (LSE, fp32);
// backward reads O, dO and LSE, so it can run straight from a kept output (EAGLE).
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "ctx.hpp"

namespace remat::cuda {

struct AttnDims {
  int64_t b = 1, hq = 1, hk = 1, s = 0, dqk = 0, dv = 0;
  // Keys and values: skv > s puts the s queries at the end of the skv keys (the causal mask is
  // aligned bottom-right: query i sees keys 0 .. skv - s + i), as a StreamBP chunk sees the
  // sequence before it. 0 means skv = s.
  int64_t skv = 0;
  int64_t kv_len() const { return skv > 0 ? skv : s; }
  // Element strides in (batch, head, seq, dim) order for each tensor; gradients share their input's layout.
  std::array<int64_t, 4> q_stride{}, k_stride{}, v_stride{}, o_stride{};
  bool deterministic = false;  // backward without the fp32 dQ accumulator (no atomics)
  float scale() const;
};

// Strides of a [tokens, heads * d] row-major buffer whose rows are `row_elems` long.
std::array<int64_t, 4> bshd_strides(int64_t s, int64_t d, int64_t row_elems);

int64_t attn_fwd_workspace_bytes(Ctx& c, const AttnDims& d);
int64_t attn_bwd_workspace_bytes(Ctx& c, const AttnDims& d);
// Which graph variant (mask data types) the backend accepted, for the report.
std::string attn_variant_used();
// REMAT_ATTN_TUNE=1: at the first call of each shape, every engine config of heuristics A, B and
// fallback and every engine with each single knob value is timed on the call's buffers and the
// fastest kept (stderr lists them). Off by default: on the H200 heuristics A's first config was
// the fastest for every gqa/mla shape (reports/gpu/attention-tune-h200.txt).
// The plan kept per attention shape ("fwd b1 hq128 ... s4096 ...: A:eng2; ..."); empty untuned.
std::string attn_engines_used();

// FLOPs as the FlashAttention papers count them: 4 s^2 d heads forward, halved when causal
// (d = mean of qk and v head dims); backward 2.5x forward. With skv > s: 4 d heads times the
// visible (query, key) pairs, s (skv - s) + s^2 / 2.
double attn_fwd_flops(const AttnDims& d);
double attn_bwd_flops(const AttnDims& d);

void attn_fwd(Ctx& c, const std::string& name, const AttnDims& d, const void* q, const void* k, const void* v, void* o,
              float* stats, void* workspace);
void attn_bwd(Ctx& c, const std::string& name, const AttnDims& d, const void* q, const void* k, const void* v,
              const void* o, const void* dout, const float* stats, void* dq, void* dk, void* dv, void* workspace);

}  // namespace remat::cuda
