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
// StreamBP (block_streambp.cpp): the LM head with its loss over C chunks, and a decoder layer whose
// backward runs over D chunks.
std::unique_ptr<Block> make_lm_head(const Dims& d);
std::unique_ptr<Block> make_streambp_layer(const Dims& d);
// Whether a block runs under the streambp strategy (with Dims::chunks) instead of the four.
inline bool is_streambp_block(const std::string& name) { return name == "lm_head" || name == "streambp_layer"; }

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
