#include "ops.hpp"

#include "kernels.hpp"

namespace remat::cuda::ops {

void rmsnorm_fwd(Ctx& c, const std::string& name, const void* x, int64_t ldx, const void* g, void* y, int64_t ldy,
                 int64_t rows, int64_t h) {
  OpScope op(c, {name, "rmsnorm", rows, h, 0, 4.0 * rows * h, 4.0 * rows * h + 2.0 * h});
  k::rmsnorm_fwd(x, ldx, g, y, ldy, rows, h, kNormEps, c.stream());
}

void rmsnorm_bwd(Ctx& c, const std::string& name, const void* x, int64_t ldx, const void* g, const void* dy,
                 int64_t lddy, void* dx, int64_t lddx, void* dg, int64_t rows, int64_t h, bool accumulate_dg) {
  const int64_t floats = k::rmsnorm_bwd_partial_floats(rows, h);
  Buf ws = c.act(name + ".ws", floats * 4);
  {
    OpScope op(c, {name, "rmsnorm_bwd", rows, h, 0, 8.0 * rows * h, 6.0 * rows * h + 8.0 * floats});
    k::rmsnorm_bwd(x, ldx, g, dy, lddy, dx, lddx, dg, ws.as<float>(), rows, h, kNormEps, c.stream(), accumulate_dg);
  }
  c.drop(ws);
}

void swiglu_fwd(Ctx& c, const std::string& name, const void* gu, void* a, int64_t rows, int64_t inter,
                const float* scale, const int* scale_idx) {
  OpScope op(c, {name, "swiglu", rows, inter, 0, 5.0 * rows * inter, 6.0 * rows * inter});
  k::swiglu_fwd(gu, a, rows, inter, scale, scale_idx, c.stream());
}

void swiglu_bwd(Ctx& c, const std::string& name, const void* gu, const void* da, void* dgu, int64_t rows, int64_t inter,
                const float* scale, const int* scale_idx, float* dscale) {
  OpScope op(c, {name, "swiglu_bwd", rows, inter, 0, 12.0 * rows * inter, 10.0 * rows * inter});
  k::swiglu_bwd(gu, da, dgu, rows, inter, scale, scale_idx, dscale, c.stream());
}

void gather_rows(Ctx& c, const std::string& name, const void* src, int64_t ld_src, const int* src_row, void* dst,
                 int64_t rows, int64_t h) {
  OpScope op(c, {name, "gather", rows, h, 0, 0.0, 4.0 * rows * h + 4.0 * rows});
  k::gather_rows(src, ld_src, src_row, dst, rows, h, c.stream());
}

void combine_rows(Ctx& c, const std::string& name, const void* rows, const int* pos, const void* base, void* out,
                  int64_t tokens, int topk, int64_t h) {
  const double reads = double(topk + (base ? 1 : 0)) * tokens * h * 2;
  OpScope op(c, {name, "scatter", tokens, h, topk, double(topk) * tokens * h, reads + 2.0 * tokens * h});
  k::combine_rows(rows, pos, base, out, tokens, topk, h, c.stream());
}

void add(Ctx& c, const std::string& name, void* y, const void* x, int64_t n) {
  OpScope op(c, {name, "add", n, 0, 0, double(n), 6.0 * double(n)});
  k::add_bf16(y, x, n, c.stream());
}

void fill(Ctx& c, Buf& b, uint64_t seed, float scale, float offset) {
  k::fill_uniform(b.ptr, b.bytes / 2, seed, scale, offset, c.stream());
}

}  // namespace remat::cuda::ops
