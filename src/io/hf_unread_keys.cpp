// The keys of a config no reader asked for, named in a note (hf_config.cpp asks at the end).
#include <algorithm>
#include <string>
#include <vector>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"
#include "remat/spec/model_spec.hpp"

namespace remat {

namespace {

// Keys of a config that no part of transformers' model building reads: generation and tokenizer
// settings, labels, dtypes, initialisation, caches, serving limits.
bool plainly_not_architecture(const std::string& key) {
  static const std::vector<std::string> keys = {
      "_name_or_path", "architectures", "auto_map", "model_type", "transformers_version", "torch_dtype", "dtype",
      "use_cache", "initializer_range", "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id",
      "decoder_start_token_id", "tokenizer_class", "id2label", "label2id", "problem_type", "return_dict",
      "output_attentions", "output_hidden_states", "torchscript", "use_bfloat16", "tie_encoder_decoder", "is_decoder",
      "add_cross_attention", "chunk_size_feed_forward", "pruned_heads", "task_specific_params", "finetuning_task",
      "prefix", "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups",
      "diversity_penalty", "temperature", "top_k", "top_p", "typical_p", "repetition_penalty", "length_penalty",
      "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences", "output_scores",
      "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values",
      "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens", "tf_legacy_loss",
      "cross_attention_hidden_size", "max_position_embeddings", "max_sequence_length", "seq_length", "model_max_length",
      "max_window_layers", "initializer_factor", "init_std", "use_flash_attn", "attn_implementation",
      "_attn_implementation", "_attn_implementation_autoset", "quantization_config", "compression_config",
      "router_aux_loss_coef", "output_router_logits", "router_z_loss_coef", "aux_loss_alpha", "seq_aux",
      "norm_topk_prob", "routed_scaling_factor", "topk_method", "scoring_func", "n_group", "topk_group", "ep_size",
      "pretraining_tp", "image_token_id", "video_token_id", "image_token_index", "vision_start_token_id",
      "vision_end_token_id", "vision_token_id", "keys_to_ignore_at_inference", "rope_scaling", "rope_parameters",
      "rope_theta", "partial_rotary_factor", "hidden_dropout", "hidden_dropout_prob", "embd_pdrop", "summary_type",
      "summary_use_proj", "summary_activation", "summary_proj_to_labels", "summary_first_dropout",
      "gradient_checkpointing", "use_sliding_window", "sliding_window", "layer_types", "mlp_layer_types",
      "original_max_position_embeddings", "initial_context_length", "n_ctx", "eos_token", "pad_token", "bos_token",
      "badwordsids", "vision_config", "vision_start_token_id", "query_pre_attn_scalar", "transformers.js_config",
      // alternative spellings and layouts of what remat reads another way, kernels' and init's settings
      "experts_per_token", "swiglu_limit", "n_positions", "sliding_window_pattern", "_sliding_window_pattern",
      "qk_head_dim", "rope_interleave", "indexer_rope_interleave", "norm_eps", "use_qk_norm", "scale_attn_weights",
      "time_step_min", "time_step_max", "time_step_floor", "time_step_limit", "rescale_prenorm_residual",
      "use_mamba_kernels", "mamba_ssm_cache_dtype", "mamba_ssm_dtype", "num_logits_to_keep", "moe_router_dtype",
      "masked_softmax_fusion", "is_quantized", "use_cash", "pad_key_length", "pre_allocate_kv_cache",
      "validate_runner_input", "inference_runner", "_from_model_config", "max_tokenizer_truncation",
      "cache_implementation", "boi_token_id", "eoi_token_id", "moe_shared_expert_overlap", "for_llm_compressor"};
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// A flat config's text_config that repeats the language model's keys remat read at the top (olmOCR-2,
// a Qwen2.5-VL re-save in transformers 4.5x's layout): "" where the copies agree, else the keys that
// differ. transformers 5 builds the language model from text_config.
std::string text_config_copy_differs(const HfJsonReader& r, const std::vector<std::string>& consulted) {
  const nlohmann::json& copy = r.object["text_config"];
  std::string differ;
  for (size_t i = 0; i < consulted.size(); ++i) {
    const std::string& key = consulted[i];
    if (i > 0 && key == consulted[i - 1]) continue;  // sorted: each key once
    // a null on either side is the key left unset (olmOCR-2's text_config.sliding_window)
    const bool both_set =
        copy.contains(key) && r.object.contains(key) && !copy[key].is_null() && !r.object[key].is_null();
    if (key != "model_type" && both_set && copy[key] != r.object[key]) differ += (differ.empty() ? "" : ", ") + key;
  }
  return differ;
}

}  // namespace

// A decoder whose config turns its causal mask off (LocateAnything's text_config: "causal_attn":
// false, a block-masked language model) attends over every key, which remat does not build; other
// false values switch a construct off, these switch one on.
void refuse_bidirectional(const HfJsonReader& r) {
  for (const char* key : {"causal_attn", "is_causal", "use_causal_mask"})
    if (r.object.contains(key) && r.object[key].is_boolean() && !r.object[key].get<bool>())
      r.problems.push_back({r.file, r.prefix + key, "false",
                            "is not a model remat can build: bidirectional attention (no causal mask); remat plans "
                            "causal decoders"});
}

// The keys no reader asked for, in a note: where a checkpoint's remote code adds a construct under a
// model type remat knows, its key is named rather than passed over in silence.
void note_unread_keys(const HfJsonReader& r, std::vector<std::string> consulted, ModelSpec& m) {
  std::sort(consulted.begin(), consulted.end());
  std::string unread;
  for (const auto& [key, value] : r.object.items()) {
    // a construct switched off (false, 0, empty) changes nothing remat builds
    const bool off = value.is_null() || (value.is_boolean() && !value.get<bool>()) ||
                     (value.is_number() && value.get<double>() == 0) || (value.is_string() && value.empty()) ||
                     ((value.is_array() || value.is_object()) && value.empty());
    if (off || plainly_not_architecture(key) || std::binary_search(consulted.begin(), consulted.end(), key)) continue;
    if (key == "text_config" && r.prefix.empty() && value.is_object()) {
      if (const std::string differ = text_config_copy_differs(r, consulted); !differ.empty())
        m.notes.push_back("text_config repeats the language model's keys with other values (" + differ +
                          "): remat read the top-level ones; transformers 5 builds the language model from "
                          "text_config");
      continue;
    }
    unread += (unread.empty() ? "" : ", ") + key;
  }
  if (!unread.empty())
    m.notes.push_back(
        (r.prefix.empty() ? std::string("keys") : r.prefix.substr(0, r.prefix.size() - 1) + " keys") +
        " remat does not read (where they change the layers, the model is not the one remat builds): " + unread);
}

}  // namespace remat
