#pragma once
// Small constructors for the ops of the exact blocks (private to src/cost).
#include <string>
#include <vector>

#include "remat/cost/block.hpp"

namespace remat::ops {

constexpr double kBf16 = 2;  // bytes per element
constexpr double kFp32 = 4;

// y = x W for `rows` rows, W of in x out, split into `count` equal GEMM calls
// (experts). Forward 2 rows in out; backward computes dX and dW, twice that.
inline OpDef gemm(std::string name, double rows, double in, double out, std::vector<std::string> saves,
                  double count = 1) {
  OpDef op;
  op.name = std::move(name);
  op.kind = OpKind::gemm;
  op.fwd_flops = 2 * rows * in * out;
  op.bwd_flops = 2 * op.fwd_flops;
  op.bwd_exec_flops = op.bwd_flops;
  op.gemm_flops_each = op.fwd_flops / count;
  op.weight_elems = in * out * count;
  op.saves = std::move(saves);
  return op;
}

// A streaming op: bytes read plus written in forward and in backward.
inline OpDef streaming(std::string name, double fwd_bytes, double bwd_bytes, std::vector<std::string> saves) {
  OpDef op;
  op.name = std::move(name);
  op.kind = OpKind::memory_bound;
  op.fwd_bytes = fwd_bytes;
  op.bwd_bytes = bwd_bytes;
  op.saves = std::move(saves);
  return op;
}

// RMSNorm over rows x width (bf16): forward reads x, writes y; backward reads
// x and dy, writes dx. Saves x and the fp32 reciprocal RMS per row.
inline OpDef rmsnorm(std::string name, double rows, double width, std::string x, std::string rstd) {
  return streaming(std::move(name), 2 * rows * width * kBf16, 3 * rows * width * kBf16,
                   {std::move(x), std::move(rstd)});
}

// A collective with the bytes one rank sends in forward and backward.
inline OpDef collective(std::string name, double fwd_wire_bytes, double bwd_wire_bytes, int64_t ranks) {
  OpDef op;
  op.name = std::move(name);
  op.kind = OpKind::collective;
  op.fwd_bytes = fwd_wire_bytes;
  op.bwd_bytes = bwd_wire_bytes;
  op.link_ranks = ranks;
  return op;
}

// Flash attention over sequences of `seq` tokens with the given model FLOPs
// of its forward. The backward counts twice the forward as model FLOPs; the
// kernel executes 2.5x, since it recomputes the scores from q, k and the
// softmax statistics.
inline OpDef attention(std::string name, double fwd_flops, double seq, double head_dim,
                       std::vector<std::string> saves) {
  OpDef op;
  op.name = std::move(name);
  op.kind = OpKind::attention;
  op.fwd_flops = fwd_flops;
  op.attention_seq = seq;
  op.attention_head_dim = head_dim;
  op.bwd_flops = 2 * fwd_flops;
  op.bwd_exec_flops = 2.5 * fwd_flops;
  op.saves = std::move(saves);
  return op;
}

}  // namespace remat::ops
