// Factories of the five blocks (one source file each) and helpers they share.
#pragma once
#include <memory>

#include "block.hpp"

namespace remat::cuda {

std::unique_ptr<Block> make_rmsnorm_linear(const Dims& d);
std::unique_ptr<Block> make_mlp(const Dims& d);
std::unique_ptr<Block> make_moe(const Dims& d);
std::unique_ptr<Block> make_gqa(const Dims& d);
std::unique_ptr<Block> make_mla(const Dims& d);

// Whether a strategy keeps the block's inner activations from forward to backward.
inline bool keeps_inner(Strategy st) { return st == Strategy::none || st == Strategy::offload; }
// After its last forward use: keep (and offload) the buffer, or free it.
inline void keep_or_drop(Ctx& c, Strategy st, Buf& b, const std::string& name) {
  if (keeps_inner(st))
    c.keep(b, name);
  else
    c.drop(b);
}

}  // namespace remat::cuda
