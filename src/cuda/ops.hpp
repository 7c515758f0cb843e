// Logged wrappers of our kernels: each call is one entry of the per-op log with its bytes moved.
#pragma once
#include <cstdint>
#include <string>

#include "ctx.hpp"

namespace remat::cuda::ops {

constexpr float kNormEps = 1e-6f;

void rmsnorm_fwd(Ctx& c, const std::string& name, const void* x, int64_t ldx, const void* g, void* y, int64_t ldy,
                 int64_t rows, int64_t h);
// Allocates its fp32 partial-sum workspace ("<name>.ws") from the arena for the call.
// accumulate_dg adds the weight gradient into dg (a norm run over sequence chunks).
void rmsnorm_bwd(Ctx& c, const std::string& name, const void* x, int64_t ldx, const void* g, const void* dy,
                 int64_t lddy, void* dx, int64_t lddx, void* dg, int64_t rows, int64_t h, bool accumulate_dg = false);
// y += x (n bf16 values), logged as a memory-bound op.
void add(Ctx& c, const std::string& name, void* y, const void* x, int64_t n);
void swiglu_fwd(Ctx& c, const std::string& name, const void* gu, void* a, int64_t rows, int64_t inter,
                const float* scale = nullptr, const int* scale_idx = nullptr);
void swiglu_bwd(Ctx& c, const std::string& name, const void* gu, const void* da, void* dgu, int64_t rows, int64_t inter,
                const float* scale = nullptr, const int* scale_idx = nullptr, float* dscale = nullptr);
void gather_rows(Ctx& c, const std::string& name, const void* src, int64_t ld_src, const int* src_row, void* dst,
                 int64_t rows, int64_t h);
void combine_rows(Ctx& c, const std::string& name, const void* rows, const int* pos, const void* base, void* out,
                  int64_t tokens, int topk, int64_t h);
void fill(Ctx& c, Buf& b, uint64_t seed, float scale, float offset = 0.f);

}  // namespace remat::cuda::ops
