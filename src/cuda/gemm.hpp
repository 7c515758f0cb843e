// bf16 GEMMs with fp32 accumulation through cuBLASLt, in the row-major terms of a linear layer:
// a weight W is [out, in] (PyTorch's nn.Linear layout), activations are [tokens, features].
#pragma once
#include <cstdint>
#include <string>

#include "ctx.hpp"

namespace remat::cuda {

struct LinearShape {
  int64_t tokens = 0, in = 0, out = 0;
  int64_t ld_x = 0, ld_y = 0;  // row strides in elements (0: dense)
};

// Y[T,out] = X[T,in] W[out,in]^T (+ beta Y)
void linear_fwd(Ctx& c, const std::string& name, const LinearShape& s, const void* x, const void* w, void* y,
                float beta = 0.f);
// dX[T,in] = dY[T,out] W[out,in] (+ beta dX)
void linear_bwd_data(Ctx& c, const std::string& name, const LinearShape& s, const void* dy, const void* w, void* dx,
                     float beta = 0.f);
// dW[out,in] = dY^T X (+ beta dW)
void linear_bwd_weight(Ctx& c, const std::string& name, const LinearShape& s, const void* dy, const void* x,
                       void* dw, float beta = 0.f);

// An empty name skips the op log (loops log themselves as one op).
// Column-major cuBLASLt call: C[m,n] = op(A) op(B) + beta C, all bf16, fp32 compute. No logging.
void gemm_cm(Ctx& c, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
             const void* b, int64_t ldb, void* cmat, int64_t ldc, float beta);

double gemm_flops(int64_t m, int64_t n, int64_t k);
double gemm_bytes(int64_t m, int64_t n, int64_t k, bool reads_c);

}  // namespace remat::cuda
