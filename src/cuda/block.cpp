#include "block.hpp"

#include <stdexcept>

#include "blocks.hpp"
#include "ops.hpp"

namespace remat::cuda {

Param& Block::add_param(Ctx& c, const std::string& name, int64_t elems, uint64_t seed, float scale, float offset) {
  Param p;
  p.name = name;
  p.elems = elems;
  p.w = c.arena().alloc(name, bf16_bytes(elems), MemClass::weight);
  p.g = c.arena().alloc(name + ".grad", bf16_bytes(elems), MemClass::weight_grad);
  ops::fill(c, p.w, seed, scale, offset);
  params_.push_back(p);
  return params_.back();
}

void Block::release_params(Ctx& c) {
  for (auto& p : params_) {
    c.arena().release(p.w);
    c.arena().release(p.g);
  }
  params_.clear();
}

std::vector<std::string> block_names() { return {"rmsnorm_linear", "mlp", "moe", "gqa", "mla"}; }

std::unique_ptr<Block> make_block(const std::string& name, const Dims& d) {
  if (name == "rmsnorm_linear") return make_rmsnorm_linear(d);
  if (name == "mlp") return make_mlp(d);
  if (name == "moe") return make_moe(d);
  if (name == "gqa") return make_gqa(d);
  if (name == "mla") return make_mla(d);
  if (name == "lm_head") return make_lm_head(d);
  if (name == "streambp_layer") return make_streambp_layer(d);
  throw std::runtime_error("unknown block: " + name);
}

}  // namespace remat::cuda
