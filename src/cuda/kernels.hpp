// Our own kernels (bf16 storage, fp32 math): RMSNorm, SwiGLU, MoE routing/permutation, MLA key
// assembly, random fill and gradient comparison. Host launchers; the kernels live in kernels_norm.cu
// (RMSNorm) and kernels.cu (the rest).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace remat::cuda::k {

// y[t, :] = x[t, :] * rsqrt(mean(x^2) + eps) * g   (row strides in elements; h % 8 == 0)
void rmsnorm_fwd(const void* x, int64_t ldx, const void* g, void* y, int64_t ldy, int64_t rows, int64_t h, float eps,
                 cudaStream_t s);
// Rows per block of the backward, and the fp32 workspace it needs for the weight gradient.
int64_t rmsnorm_bwd_partial_floats(int64_t rows, int64_t h);
// dx = RMSNorm'(x)^T dy (rstd recomputed from x); dg (+)= sum_t dy * x * rstd, reduced in a fixed order.
void rmsnorm_bwd(const void* x, int64_t ldx, const void* g, const void* dy, int64_t lddy, void* dx, int64_t lddx,
                 void* dg, float* partial_ws, int64_t rows, int64_t h, float eps, cudaStream_t s,
                 bool accumulate_dg = false);

// a[r, :] = silu(gu[r, 0:I]) * gu[r, I:2I] * (scale ? scale[idx[r]] : 1)
void swiglu_fwd(const void* gu, void* a, int64_t rows, int64_t inter, const float* scale, const int* scale_idx,
                cudaStream_t s);
// dgu from da; if dscale: dscale[idx[r]] = sum_j da[r,j] * silu(g)*u (the gradient of the row scale)
void swiglu_bwd(const void* gu, const void* da, void* dgu, int64_t rows, int64_t inter, const float* scale,
                const int* scale_idx, float* dscale, cudaStream_t s);

// Router: probs = softmax(logits) per token (fp32); idx/p = top-K (mode 0) or the balanced
// assignment idx = (t*K + k) % E with p = probs[idx] (mode 1).
void router_select(const void* logits, float* probs, int* idx, float* p, int64_t tokens, int experts, int topk,
                   int mode, cudaStream_t s);
// dlogits = softmax'(probs)^T dprobs where dprobs is dp scattered to the selected experts.
void router_bwd(const float* probs, const int* idx, const float* dp, void* dlogits, int64_t tokens, int experts,
                int topk, cudaStream_t s);

// dst[r, :] = src[src_row[r], :]
void gather_rows(const void* src, int64_t ld_src, const int* src_row, void* dst, int64_t rows, int64_t h,
                 cudaStream_t s);
// out[t, :] = (base ? base[t, :] : 0) + sum_k rows[pos[t*K + k], :]   (base may equal out)
void combine_rows(const void* rows, const int* pos, const void* base, void* out, int64_t tokens, int topk, int64_t h,
                  cudaStream_t s);

// k[t, h, :] = [k_nope[t, h*dn : (h+1)*dn], k_rope[t, 0:dr]]   (k_rope row stride ld_rope)
void mla_k_assemble(const void* k_nope, const void* k_rope, int64_t ld_rope, void* k, int64_t tokens, int heads, int dn,
                    int dr, cudaStream_t s);
// dk_nope[t, h*dn + j] = dk[t, h, j];  dk_rope[t, j] = sum_h dk[t, h, dn + j]
void mla_k_split(const void* dk, void* dk_nope, void* dk_rope, int64_t ld_rope, int64_t tokens, int heads, int dn,
                 int dr, cudaStream_t s);

// StreamBP (kernels_stream.cu): y += x over n bf16 values (fp32 sum).
void add_bf16(void* y, const void* x, int64_t n, cudaStream_t s);
// y = float(x) and y = bf16(x) over n values.
void bf16_to_f32(const void* x, float* y, int64_t n, cudaStream_t s);
void f32_to_bf16(const float* x, void* y, int64_t n, cudaStream_t s);
// Softmax cross-entropy per row of fp32 logits [rows, vocab]: loss[r] = w[r] * (logsumexp(z_r) - z_r[label_r])
// (bf16 out); when grad != nullptr also grad[r, j] = w[r] * (softmax(z_r)_j - [j == label_r]) (fp32).
void cross_entropy(const float* logits, const int* labels, const void* w, void* loss, float* grad, int64_t rows,
                   int64_t vocab, cudaStream_t s);

// Deterministic uniform values in [offset - scale, offset + scale].
void fill_uniform(void* x, int64_t n, uint64_t seed, float scale, float offset, cudaStream_t s);

// Table 8 metrics of a against the reference b (both bf16): written to out[0..3] =
// {max |a-b|, sum |a-b|, sum |a-b| / max(|b|, 1e-10), count of elements whose bits differ}.
void compare_bf16(const void* a, const void* b, int64_t n, double* out, cudaStream_t s);

}  // namespace remat::cuda::k
