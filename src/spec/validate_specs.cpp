// Checks of model and hardware specs after parsing: signs, ranges (limits::),
// and the relations between keys.
#include <cmath>
#include <cstdio>
#include <string>

#include "remat/spec/validate.hpp"

namespace remat {

namespace {

using namespace limits;

std::string fmt(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

struct Checker {
  std::string file;
  std::vector<Problem> problems;

  void fail(const std::string& key, const std::string& value, const std::string& message) {
    problems.push_back({file, key, value, message});
  }
  void at_most(const std::string& key, int64_t v, int64_t high) {
    if (v > high) fail(key, std::to_string(v), "must be at most " + std::to_string(high));
  }
  void positive(const std::string& key, int64_t v, int64_t high) {
    if (v <= 0) return fail(key, std::to_string(v), "must be a positive integer");
    at_most(key, v, high);
  }
  void non_negative(const std::string& key, int64_t v, int64_t high) {
    if (v < 0) return fail(key, std::to_string(v), "must not be negative");
    at_most(key, v, high);
  }
  // A positive finite number in [low, high] (scale: the file's unit per SI unit).
  void positive(const std::string& key, double v, double low, double high, double scale = 1) {
    if (!std::isfinite(v) || v <= 0) return fail(key, fmt(v / scale), "must be a positive finite number");
    if (v / scale < low) fail(key, fmt(v / scale), "must be at least " + fmt(low));
    if (v / scale > high) fail(key, fmt(v / scale), "must be at most " + fmt(high));
  }
  // 0 (absent), or as positive() above.
  void optional(const std::string& key, double v, double low, double high, double scale = 1) {
    if (!std::isfinite(v) || v < 0) return fail(key, fmt(v / scale), "must be a finite number >= 0");
    if (v > 0) positive(key, v, low, high, scale);
  }
  void fraction(const std::string& key, double v) {
    if (!std::isfinite(v) || v < kMinFraction || v > 1)
      fail(key, fmt(v), "must be a fraction in [" + fmt(kMinFraction) + ", 1]");
  }
};

void check_moe(Checker& c, const ModelSpec& m) {
  c.positive("num_experts_per_tok", m.num_experts_per_tok, kExperts);
  if (m.num_experts_per_tok > m.n_routed_experts)
    c.fail("num_experts_per_tok", std::to_string(m.num_experts_per_tok),
           "must not exceed n_routed_experts = " + std::to_string(m.n_routed_experts));
  c.positive("moe_intermediate_size", m.moe_intermediate_size, kFfn);
  c.non_negative("n_shared_experts", m.n_shared_experts, kSharedExperts);
  c.non_negative("moe_latent_size", m.moe_latent_size, m.hidden_size);
}

// DeepSeek sparse attention's indexer: on MLA with a query latent (its wq_b reads it).
void check_sparse_attention(Checker& c, const ModelSpec& m) {
  c.non_negative("index_n_heads", m.index_n_heads, kHeads);
  if (!m.sparse_attention()) return;
  c.positive("index_head_dim", m.index_head_dim, kHeadDim);
  c.positive("index_topk", m.index_topk, kSeq);
  if (m.q_lora_rank < 1)
    c.fail("q_lora_rank", std::to_string(m.q_lora_rank), "must be positive with index_n_heads (the indexer reads it)");
  if (m.index_head_dim < m.qk_rope_head_dim)
    c.fail("index_head_dim", std::to_string(m.index_head_dim),
           "must be at least qk_rope_head_dim = " + std::to_string(m.qk_rope_head_dim));
}

void check_attention(Checker& c, const ModelSpec& m) {
  if (m.attention() == AttentionKind::mla) {
    c.non_negative("q_lora_rank", m.q_lora_rank, kHeadDim);
    c.positive("qk_nope_head_dim", m.qk_nope_head_dim, kHeadDim);
    c.non_negative("qk_rope_head_dim", m.qk_rope_head_dim, kHeadDim);
    c.positive("v_head_dim", m.v_head_dim, kHeadDim);
    check_sparse_attention(c, m);
    return;
  }
  for (auto [key, v] : {std::pair{"q_lora_rank", m.q_lora_rank},
                        {"qk_rope_head_dim", m.qk_rope_head_dim},
                        {"qk_nope_head_dim", m.qk_nope_head_dim},
                        {"v_head_dim", m.v_head_dim}})
    c.non_negative(key, v, kHeadDim);  // unused without kv_lora_rank, but checked
  if (m.index_n_heads != 0)
    c.fail("index_n_heads", std::to_string(m.index_n_heads),
           "needs multi-head latent attention (kv_lora_rank): DeepSeek sparse attention indexes MLA's keys");
  c.positive("num_key_value_heads", m.num_key_value_heads, kHeads);
  c.non_negative("head_dim", m.head_dim, kHeadDim);
  c.non_negative("global_head_dim", m.full_attention_head_dim, kHeadDim);
  c.non_negative("hidden_size_per_layer_input", m.per_layer_input_width, kHeadDim);
  c.non_negative("num_kv_shared_layers", m.kv_shared_layers, kLayers);
  c.non_negative("num_global_key_value_heads", m.full_attention_kv_heads, kHeads);
  if (m.full_attention_kv_heads > 0 && m.num_attention_heads % m.full_attention_kv_heads != 0)
    c.fail("num_global_key_value_heads", std::to_string(m.full_attention_kv_heads),
           "must divide num_attention_heads = " + std::to_string(m.num_attention_heads));
  c.non_negative("num_sliding_attention_heads", m.windowed_attention_heads, kHeads);
  if (m.windowed_attention_heads > 0 && m.num_key_value_heads > 0 &&
      m.windowed_attention_heads % m.num_key_value_heads != 0)
    c.fail("num_sliding_attention_heads", std::to_string(m.windowed_attention_heads),
           "must be a multiple of num_key_value_heads = " + std::to_string(m.num_key_value_heads));
  if (m.num_key_value_heads > 0 && m.num_attention_heads > 0 && m.num_attention_heads % m.num_key_value_heads != 0)
    c.fail("num_key_value_heads", std::to_string(m.num_key_value_heads),
           "must divide num_attention_heads = " + std::to_string(m.num_attention_heads));
  for (const LayerVariant& v : m.layer_variants) {  // layers of their own shape (block_configs)
    c.non_negative("a layer's MLP width", v.mlp_width, kFfn);
    c.non_negative("a layer's key/value heads", v.kv_heads, kHeads);
  }
  if (m.head_dim == 0 && m.num_attention_heads > 0 && m.hidden_size > 0 && m.hidden_size % m.num_attention_heads != 0)
    c.fail("num_attention_heads", std::to_string(m.num_attention_heads),
           "must divide hidden_size = " + std::to_string(m.hidden_size) + " when head_dim is not given");
}

// Numbers that only the Megatron-LM flags read; still never NaN, zero or negative.
void check_numerics(Checker& c, const ModelSpec& m) {
  const RopeScaling& r = m.rope_scaling;
  for (auto [key, v] : {std::pair{"rope_theta", m.rope_theta},
                        {"norm_eps", m.norm_eps},
                        {"rope_scaling.factor", r.factor},
                        {"rope_scaling.low_freq_factor", r.low_freq_factor},
                        {"rope_scaling.high_freq_factor", r.high_freq_factor},
                        {"rope_scaling.beta_fast", r.beta_fast},
                        {"rope_scaling.beta_slow", r.beta_slow}})
    if (!std::isfinite(v) || v <= 0) c.fail(key, fmt(v), "must be a positive finite number");
  for (auto [key, v] : {std::pair{"rope_scaling.mscale", r.mscale},
                        {"rope_scaling.mscale_all_dim", r.mscale_all_dim},
                        {"rope_scaling.attention_factor", r.attention_factor},
                        {"rope_local_base_freq", m.rope_local_theta}})
    if (!std::isfinite(v) || v < 0) c.fail(key, fmt(v), "must be a finite number >= 0");
  c.non_negative("rope_scaling.original_max_position_embeddings", r.original_context_tokens, kSeq);
  c.non_negative("sliding_window", m.sliding_window_tokens, kSeq);
}

}  // namespace

std::vector<Problem> validate_model(const ModelSpec& m, const std::string& file) {
  Checker c{file, {}};
  c.positive("hidden_size", m.hidden_size, kHidden);
  c.positive("intermediate_size", m.intermediate_size, kFfn);
  c.positive("num_attention_heads", m.num_attention_heads, kHeads);
  c.positive("vocab_size", m.vocab_size, kVocab);
  c.positive("num_hidden_layers", m.num_hidden_layers, kLayers);
  c.optional("published_params_B", m.published_params_B, 0, kParamsB);
  c.optional("paper_params_B", m.paper_params_B, 0, kParamsB);
  c.non_negative("paper_num_hidden_layers", m.paper_num_hidden_layers, kLayers);
  c.non_negative("kv_lora_rank", m.kv_lora_rank, kHeadDim);
  c.non_negative("n_routed_experts", m.n_routed_experts, kExperts);
  // Checked for dense models too: the layer loops read them.
  c.positive("moe_layer_freq", m.moe_layer_freq, kLayers);
  if (m.first_k_dense_replace < 0 || m.first_k_dense_replace > m.num_hidden_layers)
    c.fail("first_k_dense_replace", std::to_string(m.first_k_dense_replace),
           "must be between 0 and num_hidden_layers = " + std::to_string(m.num_hidden_layers));
  check_attention(c, m);
  check_numerics(c, m);
  if (m.is_moe()) {
    check_moe(c, m);
  } else {  // unused by a dense model, but never negative or out of range
    c.non_negative("num_experts_per_tok", m.num_experts_per_tok, kExperts);
    c.non_negative("moe_intermediate_size", m.moe_intermediate_size, kFfn);
    c.non_negative("n_shared_experts", m.n_shared_experts, kSharedExperts);
  }
  c.non_negative("shared_expert_intermediate_size", m.shared_expert_intermediate_size, kFfn);
  return c.problems;
}

// A framework's measured attention: fractions at (head dim, seq) points, ascending in head dim and,
// within one head dim, in seq.
void check_attention_grid(Checker& c, const std::string& key, const std::vector<AttentionGridPoint>& grid) {
  constexpr double kMaxHeadDim = 1024;
  for (size_t i = 0; i < grid.size(); ++i) {
    const AttentionGridPoint& p = grid[i];
    const std::string item = key + "[" + std::to_string(i) + "]";
    c.positive(item + ".head_dim", p.head_dim, 1, kMaxHeadDim);
    c.positive(item + ".seq", p.seq, 1, kAttentionSeq);
    c.fraction(item + ".fwd", p.fwd);
    c.fraction(item + ".bwd", p.bwd);
    if (i == 0) continue;
    const AttentionGridPoint& q = grid[i - 1];
    if (p.head_dim < q.head_dim || (p.head_dim == q.head_dim && !(p.seq > q.seq)))
      c.fail(item, fmt(p.head_dim) + "/" + fmt(p.seq), "must follow the previous point in head dim, then seq");
  }
}

// A framework's measured fp32 adapter GEMMs: fractions of the fp32 peak, ascending in rank and,
// within one rank, in FLOPs.
void check_adapter_gemm(Checker& c, const std::string& key, const std::vector<AdapterGemmPoint>& points) {
  constexpr double kMaxFlops = 1e18, kMaxRank = 65536;
  for (size_t i = 0; i < points.size(); ++i) {
    const AdapterGemmPoint& p = points[i];
    const std::string item = key + "[" + std::to_string(i) + "]";
    c.positive(item + ".rank", p.rank, 1, kMaxRank);
    c.positive(item + ".flops", p.flops, 1, kMaxFlops);
    c.fraction(item + ".fwd", p.fwd);
    c.fraction(item + ".bwd", p.bwd);
    if (i == 0) continue;
    const AdapterGemmPoint& q = points[i - 1];
    if (p.rank < q.rank || (p.rank == q.rank && !(p.flops > q.flops)))
      c.fail(item, fmt(p.rank) + "/" + fmt(p.flops), "must follow the previous point in rank, then FLOPs");
  }
}

std::vector<Problem> validate_hardware(const HardwareSpec& h, const std::string& file) {
  Checker c{file, {}};
  constexpr double tera = 1e12, giga = 1e9, gib = 1024.0 * 1024.0 * 1024.0;
  c.positive("peak_bf16_tflops", h.peak_bf16_flops, kMinRate, kTflops, tera);
  c.optional("peak_fp16_tflops", h.peak_fp16_flops, kMinRate, kTflops, tera);
  c.optional("peak_tf32_tflops", h.peak_tf32_flops, kMinRate, kTflops, tera);
  c.optional("peak_fp32_tflops", h.peak_fp32_flops, kMinRate, kTflops, tera);
  c.optional("peak_fp8_tflops", h.peak_fp8_flops, kMinRate, kTflops, tera);
  c.positive("hbm_GiB", h.hbm_bytes, kMinRate, kGiB, gib);
  c.positive("hbm_GBps", h.hbm_bytes_per_s, kMinRate, kGBps, giga);
  c.positive("host_link_GBps", h.host_link_bytes_per_s, kMinRate, kGBps, giga);
  c.optional("nvlink_GBps", h.nvlink_bytes_per_s, kMinRate, kGBps, giga);
  c.positive("nvlink_domain_gpus", h.nvlink_domain_gpus, kDomainGpus);
  c.optional("network_GBps", h.network_bytes_per_s, kMinRate, kGBps, giga);
  c.optional("memory_reserve_GiB", h.memory_reserve_bytes, 0, kGiB, gib);
  if (std::isfinite(h.memory_reserve_bytes) && h.memory_reserve_bytes >= h.hbm_bytes && h.hbm_bytes > 0)
    c.fail("memory_reserve_GiB", fmt(h.memory_reserve_bytes / gib), "must be below hbm_GiB");
  const Efficiency& e = h.efficiency;
  c.fraction("efficiency.attention_fwd", e.attention_fwd);
  c.fraction("efficiency.attention_bwd", e.attention_bwd);
  c.fraction("efficiency.memory_bound", e.memory_bound);
  c.fraction("efficiency.host_link", e.host_link);
  c.fraction("efficiency.nvlink", e.nvlink);
  c.fraction("efficiency.network", e.network);
  if (e.gemm_by_flops.empty()) c.fail("efficiency.gemm_by_flops", "[]", "needs at least one point");
  for (size_t i = 0; i < e.gemm_by_flops.size(); ++i) {
    const std::string key = "efficiency.gemm_by_flops[" + std::to_string(i) + "]";
    c.positive(key + ".flops", e.gemm_by_flops[i].flops, 1, kGemmFlops);
    c.fraction(key + ".fraction", e.gemm_by_flops[i].fraction);
    if (i > 0 && !(e.gemm_by_flops[i].flops > e.gemm_by_flops[i - 1].flops))
      c.fail(key + ".flops", fmt(e.gemm_by_flops[i].flops), "must be larger than the previous point's");
  }
  for (const auto& [framework, f] : h.framework_fits) {
    const std::string key = "frameworks." + framework + ".";
    for (auto [name, v] : {std::pair{"gemm_scale", f.gemm_scale}, {"memory_bound_scale", f.memory_bound_scale}})
      if (!std::isfinite(v) || v <= 0 || v > 4) c.fail(key + name, fmt(v), "must be a finite number in (0, 4]");
    for (auto [name, v] :
         {std::pair{"layer_overhead_us", f.layer_overhead_s}, {"moe_layer_host_us", f.moe_layer_host_s}})
      if (!std::isfinite(v) || v < 0 || v > 1) c.fail(key + name, fmt(v * 1e6), "must be a finite number in [0, 1e6]");
    check_attention_grid(c, key + "attention", f.attention);
    check_attention_grid(c, key + "masked_attention", f.masked_attention);
    if (f.fp32_gemm != 0) c.fraction(key + "fp32_gemm", f.fp32_gemm);
    check_adapter_gemm(c, key + "adapter_gemm", f.adapter_gemm);
  }
  for (size_t i = 0; i < e.attention_by_seq.size(); ++i) {
    const std::string key = "efficiency.attention_by_seq[" + std::to_string(i) + "]";
    c.positive(key + ".seq", e.attention_by_seq[i].seq, 1, kAttentionSeq);
    c.fraction(key + ".fwd", e.attention_by_seq[i].fwd);
    c.fraction(key + ".bwd", e.attention_by_seq[i].bwd);
    if (i > 0 && !(e.attention_by_seq[i].seq > e.attention_by_seq[i - 1].seq))
      c.fail(key + ".seq", fmt(e.attention_by_seq[i].seq), "must be larger than the previous point's");
  }
  return c.problems;
}

}  // namespace remat
