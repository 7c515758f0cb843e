// The recompute blocks of the EAGLE paper (Appendix C) under four strategies. A block owns its
// weights and weight gradients; forward takes ownership of its input x and keeps, offloads or
// frees each activation as the strategy says; backward recomputes what it must (marking the
// recompute phase), frees everything it kept and returns dx.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ctx.hpp"

namespace remat::cuda {

// Dims named as Hugging Face config.json keys, plus b, s and out_features.
struct Dims {
  std::string model;  // which published config the dims come from
  int64_t hidden_size = 0, intermediate_size = 0, num_attention_heads = 0, num_key_value_heads = 0, head_dim = 0;
  int64_t moe_intermediate_size = 0, n_routed_experts = 0, num_experts_per_tok = 0, n_shared_experts = 0;
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  int64_t out_features = 0;
  int64_t vocab_size = 0;  // lm_head
  int64_t chunks = 1;      // streambp: sequence chunks of the layer backward (D) or the LM head (C)
  int64_t b = 1, s = 0;
  std::string routing = "balanced";  // moe: balanced | router
  bool deterministic_attention = false;
  int64_t tokens() const { return b * s; }
};

struct Param {
  std::string name;
  Buf w, g;  // weight and its gradient
  int64_t elems = 0;
};

class Block {
 public:
  virtual ~Block() = default;
  virtual std::string name() const = 0;
  // Recompute sub-blocks in the order their recompute runs (Appendix C granularity).
  virtual std::vector<std::string> sub_blocks() const { return {name()}; }
  virtual void init(Ctx& c, uint64_t seed) = 0;
  virtual void forward(Ctx& c, Strategy st, Buf& x, Buf& y) = 0;
  virtual void backward(Ctx& c, Strategy st, Buf& dy, Buf& dx) = 0;
  const Dims& dims() const { return d_; }
  std::vector<Param>& params() { return params_; }
  int64_t input_elems() const { return d_.tokens() * d_.hidden_size; }
  virtual int64_t output_elems() const { return d_.tokens() * d_.hidden_size; }
  virtual void release_params(Ctx& c);

 protected:
  explicit Block(Dims d) : d_(std::move(d)) {}
  // Allocates weight and gradient, fills the weight uniform in offset +- scale.
  Param& add_param(Ctx& c, const std::string& name, int64_t elems, uint64_t seed, float scale, float offset = 0.f);
  Dims d_;
  std::vector<Param> params_;
};

std::unique_ptr<Block> make_block(const std::string& name, const Dims& d);
std::vector<std::string> block_names();

// Bytes of n bf16 / fp32 / int32 values.
inline int64_t bf16_bytes(int64_t n) { return 2 * n; }
inline int64_t f32_bytes(int64_t n) { return 4 * n; }

}  // namespace remat::cuda
