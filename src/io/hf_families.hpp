// The Hugging Face model families remat maps (model_type -> how its config.json
// spells the model), and the ones it refuses by name with the reason.
#pragma once
#include <string>

namespace remat {

// How a family spells its experts (none: a dense model; any expert key is refused).
enum class HfExperts {
  none,
  mixtral,  // num_local_experts; intermediate_size is the expert size; every layer MoE (Mixtral, gpt-oss)
  olmoe,    // num_experts; intermediate_size is the expert size; every layer MoE
  qwen,     // num_experts, moe_intermediate_size, decoder_sparse_step, mlp_only_layers, shared_expert_intermediate_size
  deepseek,  // n_routed_experts, moe_intermediate_size, n_shared_experts, first_k_dense_replace, moe_layer_freq
  llama4,    // num_local_experts (size intermediate_size) + one shared expert, interleave_moe_layer_step / moe_layers,
             // dense layers of intermediate_size_mlp
};

struct HfFamily {
  const char* model_type;
  bool tie_word_embeddings;  // the transformers config class's default when the key is absent
  HfExperts experts;
  bool vision_tower_beside;  // a flat multimodal config (Qwen2-VL): the language model's keys at the top
};

// nullptr when model_type is not a family remat maps.
const HfFamily* find_hf_family(const std::string& model_type);

// Why remat cannot build this model_type ("" when it is not refused by name).
std::string hf_refusal_reason(const std::string& model_type);

// Multimodal wrappers whose language model is the nested text_config.
bool is_hf_text_config_wrapper(const std::string& model_type);

}  // namespace remat
