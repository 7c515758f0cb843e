// DeepSeek-V4 (deepseek_v4) as transformers 5.17 builds it from a config (DeepseekV4Config.__post_init__,
// DeepseekV4ForCausalLM): every layer an attention of one kind and an MoE, hyper-connections around
// both halves.
#include <algorithm>
#include <string>
#include <vector>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

// A legacy compress ratio (0 / 4 / 128) or a layer_types entry, as the config class maps them.
CompressedAttention kind_of_ratio(HfJsonReader& r, int64_t ratio) {
  if (ratio == 0) return CompressedAttention::sliding;
  if (ratio == 4) return CompressedAttention::sparse;
  if (ratio != 128) r.fail("compress_ratios", std::to_string(ratio), "must hold 0, 4 and 128 (transformers' mapping)");
  return CompressedAttention::heavy;
}

CompressedAttention kind_of_type(HfJsonReader& r, const std::string& type) {
  if (type == "sliding_attention") return CompressedAttention::sliding;
  if (type == "compressed_sparse_attention") return CompressedAttention::sparse;
  if (type != "heavily_compressed_attention")
    r.fail("layer_types", type,
           "must be sliding_attention, compressed_sparse_attention or heavily_compressed_attention");
  return CompressedAttention::heavy;
}

// layer_types; else the legacy compress_ratios (its extra entries, the MTP layer's, dropped as the
// config class does); else the class default: two HCA layers, then CSA and HCA alternating.
std::vector<CompressedAttention> read_layer_kinds(HfJsonReader& r, int64_t layers) {
  std::vector<CompressedAttention> kinds;
  const std::vector<std::string> types = r.text_list("layer_types");
  if (!types.empty()) {
    for (const std::string& t : types) kinds.push_back(kind_of_type(r, t));
  } else if (r.has("compress_ratios")) {
    std::vector<int64_t> ratios;
    r.integer_list("compress_ratios", ratios);
    for (int64_t ratio : ratios) kinds.push_back(kind_of_ratio(r, ratio));
  } else {
    for (int64_t i = 0; i < layers; ++i)
      kinds.push_back(i < 2 || i % 2 == 0 ? CompressedAttention::heavy : CompressedAttention::sparse);
  }
  if (int64_t(kinds.size()) < layers) {
    r.fail(types.empty() ? "compress_ratios" : "layer_types", std::to_string(kinds.size()) + " entries",
           "must name each of num_hidden_layers = " + std::to_string(layers) + " layers");
    return {};
  }
  kinds.resize(size_t(layers));
  return kinds;
}

void read_rates(HfJsonReader& r, ModelSpec& m) {
  r.integer("compress_rate_csa", m.csa_rate, false);
  r.integer("compress_rate_hca", m.hca_rate, false);
  if (r.has("compress_rates") && r.object[r.spelled("compress_rates")].is_object()) {
    const auto& rates = r.object[r.spelled("compress_rates")];
    if (rates.contains("compressed_sparse_attention") && rates["compressed_sparse_attention"].is_number_integer())
      m.csa_rate = rates["compressed_sparse_attention"].get<int64_t>();
    if (rates.contains("heavily_compressed_attention") && rates["heavily_compressed_attention"].is_number_integer())
      m.hca_rate = rates["heavily_compressed_attention"].get<int64_t>();
  }
  if (m.csa_rate < 1) r.fail("compress_rates", std::to_string(m.csa_rate), "must be a positive number of tokens");
  if (m.hca_rate < 1) r.fail("compress_rates", std::to_string(m.hca_rate), "must be a positive number of tokens");
}

// The hash-routed layers' tid2eid buffer (vocab x top-k int64, persistent): mlp_layer_types' hash_moe
// entries, else num_hash_layers (default 3).
double hash_router_buffer_bytes(HfJsonReader& r, const ModelSpec& m) {
  int64_t hash_layers = 3;
  const std::vector<std::string> mlp_types = r.text_list("mlp_layer_types");
  if (!mlp_types.empty())
    hash_layers = std::count(mlp_types.begin(), mlp_types.end(), std::string("hash_moe"));
  else
    r.integer("num_hash_layers", hash_layers, false);
  hash_layers = std::clamp<int64_t>(hash_layers, 0, m.num_hidden_layers);
  return double(hash_layers) * double(m.vocab_size) * double(m.num_experts_per_tok) * 8;
}

}  // namespace

void deepseek_v4_layer(HfJsonReader& r, ModelSpec& m) {
  // DeepseekV4Config's defaults where a key is absent
  m.n_routed_experts = 256, m.moe_intermediate_size = 2048, m.n_shared_experts = 1, m.num_experts_per_tok = 6;
  m.q_lora_rank = 1024, m.o_groups = 8, m.o_lora_rank = 1024, m.csa_index_heads = 64, m.csa_index_head_dim = 128;
  m.hyper_connections = 4, m.hc_sinkhorn_iters = 20;
  r.integer("n_routed_experts", m.n_routed_experts, false);
  r.integer("moe_intermediate_size", m.moe_intermediate_size, false);
  r.integer("n_shared_experts", m.n_shared_experts, false);
  r.integer("num_experts_per_tok", m.num_experts_per_tok, false);
  r.integer("q_lora_rank", m.q_lora_rank, false);
  r.integer("o_groups", m.o_groups, false);
  r.integer("o_lora_rank", m.o_lora_rank, false);
  r.integer("index_n_heads", m.csa_index_heads, false);
  r.integer("index_head_dim", m.csa_index_head_dim, false);
  r.integer("hc_mult", m.hyper_connections, false);
  r.integer("hc_sinkhorn_iters", m.hc_sinkhorn_iters, false);
  for (const char* key : {"index_topk", "hc_eps", "sliding_window", "swiglu_limit", "qk_rope_head_dim",
                          "compress_rope_theta", "partial_rotary_factor", "rope_parameters"})
    r.mark_read(key);
  // each a positive count; the ranks, groups and stream counts also within limits::kHeadDim
  struct Bounded {
    const char* key;
    int64_t value, max;
  };
  const Bounded keys[] = {{"n_routed_experts", m.n_routed_experts, limits::kExperts},
                          {"moe_intermediate_size", m.moe_intermediate_size, limits::kFfn},
                          {"num_experts_per_tok", m.num_experts_per_tok, limits::kExperts},
                          {"q_lora_rank", m.q_lora_rank, limits::kHeadDim},
                          {"o_groups", m.o_groups, limits::kHeadDim},
                          {"o_lora_rank", m.o_lora_rank, limits::kHeadDim},
                          {"index_n_heads", m.csa_index_heads, limits::kHeadDim},
                          {"index_head_dim", m.csa_index_head_dim, limits::kHeadDim},
                          {"hc_mult", m.hyper_connections, limits::kHeadDim},
                          {"hc_sinkhorn_iters", m.hc_sinkhorn_iters, limits::kHeadDim}};
  for (const auto& [key, value, max] : keys) {
    if (value < 1) r.fail(key, std::to_string(value), "must be a positive integer");
    if (value > max) r.fail(key, std::to_string(value), "is implausibly large (at most " + std::to_string(max) + ")");
  }
  if (m.num_attention_heads > 0 && m.o_groups > 0 && m.num_attention_heads % m.o_groups != 0)
    r.fail("o_groups", std::to_string(m.o_groups),
           "must divide num_attention_heads = " + std::to_string(m.num_attention_heads));
  if (m.num_key_value_heads != 1)
    r.fail("num_key_value_heads", std::to_string(m.num_key_value_heads),
           "must be 1: DeepSeek-V4's attention reads one key-value head as both keys and values");
  read_rates(r, m);
  m.intermediate_size = m.moe_intermediate_size;  // the shared expert's width (config attribute_map)
  m.first_k_dense_replace = 0;                    // every layer MoE
  const int64_t layers = std::min(m.num_hidden_layers, limits::kLayers);
  m.compressed_layers = read_layer_kinds(r, layers);
  m.layer_mixers.assign(m.compressed_layers.size(), Mixer::compressed_attention);
  m.buffer_bytes += hash_router_buffer_bytes(r, m);
  // the code: every SwiGLU clamps gate and up (swiglu_limit), a sink per head in eager attention with
  // a bf16 softmax after the row max, eager attention only (_supports_sdpa False)
  m.clamped_swiglu = true;
  m.attention_sinks = true;
  m.eager_softmax_bf16 = m.eager_softmax_subtracts_max = true;
  m.eager_attention_only = true;
  m.notes.push_back(r.path("sliding_window") +
                    ": DeepSeek-V4's attention is costed as transformers' eager code computes it, every query "
                    "against every key and pooled key; the window and the indexer's top-k narrow only the mask. Its "
                    "non-reentrant gradient checkpointing raised SystemError inside torch's replay in some H200 steps "
                    "(transformers 5.17, torch 2.11); reentrant ran");
}

}  // namespace remat
