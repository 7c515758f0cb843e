#pragma once
// Model dimensions, named as in Hugging Face config.json.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace remat {

enum class AttentionKind { gqa, mla };

// Which layers use the MoE feed-forward.
enum class MoeLayerRule {
  // DeepSeek: index >= first_k_dense_replace and index % moe_layer_freq == 0.
  dense_prefix,
  // Qwen2-MoE / Qwen3-MoE decoder_sparse_step, Llama 4 interleave_moe_layer_step:
  // (index + 1) % moe_layer_freq == 0 and index not in dense_mlp_layers.
  every_step,
};

struct ModelSpec {
  std::string name;
  std::string source;
  double published_params_B = 0;  // published total, billions (0 = unknown)

  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // dense MLP size
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // GQA per-head dim (hidden_size / heads when absent)
  int64_t vocab_size = 0;
  int64_t num_hidden_layers = 0;
  bool tie_word_embeddings = false;

  // Mixture of experts (n_routed_experts == 0: dense model).
  int64_t n_routed_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;
  int64_t n_shared_experts = 0;
  int64_t first_k_dense_replace = 0;
  int64_t moe_layer_freq = 1;
  MoeLayerRule moe_layer_rule = MoeLayerRule::dense_prefix;
  std::vector<int64_t> dense_mlp_layers;  // every_step: layers kept dense (Qwen's mlp_only_layers), sorted

  // DeepSeek-V3 multi-token prediction modules (num_nextn_predict_layers): each one
  // MoE layer, eh_proj (2h x h) and three norms; embedding and head shared.
  int64_t num_nextn_predict_layers = 0;

  // What a loader mapped but the cost model does not represent (sliding window,
  // a vision tower left out); shown to the user, never changes a figure.
  std::vector<std::string> notes;

  // Multi-head latent attention (kv_lora_rank > 0: MLA).
  int64_t q_lora_rank = 0;  // 0: queries projected from the hidden state directly
  int64_t kv_lora_rank = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t v_head_dim = 0;

  // The EAGLE paper's Table 6 layer count and total, where it differs.
  int64_t paper_num_hidden_layers = 0;
  double paper_params_B = 0;

  AttentionKind attention() const { return kv_lora_rank > 0 ? AttentionKind::mla : AttentionKind::gqa; }
  bool is_moe() const { return n_routed_experts > 0; }
  // Whether layer `index` (0-based) uses the MoE feed-forward (moe_layer_rule).
  bool layer_is_moe(int64_t index) const {
    if (!is_moe()) return false;
    if (moe_layer_rule == MoeLayerRule::dense_prefix)
      return index >= first_k_dense_replace && (index % moe_layer_freq) == 0;
    const bool listed = std::binary_search(dense_mlp_layers.begin(), dense_mlp_layers.end(), index);
    return (index + 1) % moe_layer_freq == 0 && !listed;
  }
  // Whether any of the first `layers` layers has the dense feed-forward.
  bool has_dense_mlp_layer(int64_t layers) const {
    for (int64_t i = 0; i < layers; ++i)
      if (!layer_is_moe(i)) return true;
    return false;
  }
  int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

}  // namespace remat
