// MiniMax-01 (MiniMax-Text-01, MiniMax-M1): lightning attention beside softmax attention, as
// transformers' modeling_minimax.py builds it and as the checkpoints' remote code spells it.
#include <algorithm>
#include <string>
#include <vector>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

// Which layers run lightning attention: layer_types (linear_attention / full_attention), else the
// remote code's attn_type_list (0 lightning, 1 softmax), else MiniMaxConfig's default (layer i full
// where i is even).
std::vector<bool> minimax_lightning_layers(HfJsonReader& r, int64_t layers) {
  if (r.has("layer_types") || !r.has("attn_type_list"))
    return read_linear_layer_types(r, layers, [](int64_t i) { return i % 2 == 1; });
  std::vector<int64_t> flags;
  r.integer_list("attn_type_list", flags);
  if (int64_t(flags.size()) != layers) {
    r.fail("attn_type_list", std::to_string(flags.size()) + " entries",
           "must name each of num_hidden_layers = " + std::to_string(layers) + " layers");
    return {};
  }
  std::vector<bool> lightning;
  for (int64_t flag : flags) {
    if (flag != 0 && flag != 1) r.fail("attn_type_list", std::to_string(flag), "must hold 0 and 1");
    lightning.push_back(flag == 0);
  }
  return lightning;
}

}  // namespace

// MiniMax-01: Mixtral's experts (num_local_experts of intermediate_size, a softmax router) in every
// layer; lightning attention of num_attention_heads x head_dim in blocks of block_size tokens where
// the layer list says so, else GQA softmax attention with rotary_dim of each head rotated. The
// residual scalings (the alpha and beta factors) cost nothing to keep. A shared expert (the remote
// code's shared_intermediate_size) is refused: transformers builds none.
void minimax_layer(HfJsonReader& r, ModelSpec& m) {
  set_rotary_dim(r, m);
  r.number("partial_rotary_factor", m.rotary_fraction);
  r.integer("block_size", m.lightning_block_size, false);
  if (m.lightning_block_size < 1)
    r.fail("block_size", std::to_string(m.lightning_block_size), "must be a positive number of tokens");
  int64_t shared = 0;
  r.integer("shared_intermediate_size", shared, false);
  if (shared > 0)
    r.fail("shared_intermediate_size", std::to_string(shared),
           "is not a model remat can build: a shared expert beside MiniMax-01's routed ones (transformers builds "
           "none)");
  // the remote code's spellings of the residual scales transformers names full_attn_alpha_factor ...
  // (scalars on the residual and the block's output: no weight, nothing saved); its postnorm true is
  // transformers' residual from the normed input, its shared_moe_mode the shared expert's (none here)
  for (const char* key :
       {"layernorm_full_attention_alpha", "layernorm_full_attention_beta", "layernorm_linear_attention_alpha",
        "layernorm_linear_attention_beta", "layernorm_mlp_alpha", "layernorm_mlp_beta", "shared_moe_mode"})
    r.mark_read(key);
  bool postnorm = true;
  r.boolean("postnorm", postnorm);
  if (!postnorm)
    m.notes.push_back(r.path("postnorm") +
                      " is false: the residual from the block's input, costed as transformers' from the normed input");
  const int64_t layers = std::min(m.num_hidden_layers, limits::kLayers);
  for (bool lightning : minimax_lightning_layers(r, layers))
    m.layer_mixers.push_back(lightning ? Mixer::lightning : Mixer::attention);
}

}  // namespace remat
