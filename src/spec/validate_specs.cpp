// Checks of model and hardware specs after parsing.
#include <cmath>
#include <string>

#include "remat/spec/validate.hpp"

namespace remat {

namespace {

struct Checker {
  std::string file;
  std::vector<Problem> problems;

  void fail(const std::string& key, const std::string& value, const std::string& message) {
    problems.push_back({file, key, value, message});
  }
  void positive(const std::string& key, int64_t v) {
    if (v <= 0) fail(key, std::to_string(v), "must be a positive integer");
  }
  void non_negative(const std::string& key, int64_t v) {
    if (v < 0) fail(key, std::to_string(v), "must not be negative");
  }
  void positive(const std::string& key, double v) {
    if (!std::isfinite(v) || v <= 0) fail(key, fmt(v), "must be a positive finite number");
  }
  void non_negative(const std::string& key, double v) {
    if (!std::isfinite(v) || v < 0) fail(key, fmt(v), "must be a finite number >= 0");
  }
  void fraction(const std::string& key, double v) {
    if (!std::isfinite(v) || v <= 0 || v > 1) fail(key, fmt(v), "must be a fraction in (0, 1]");
  }
  static std::string fmt(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    std::string s = std::to_string(v);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }
};

void check_moe(Checker& c, const ModelSpec& m) {
  c.positive("num_experts_per_tok", m.num_experts_per_tok);
  if (m.num_experts_per_tok > m.n_routed_experts)
    c.fail("num_experts_per_tok", std::to_string(m.num_experts_per_tok),
           "must not exceed n_routed_experts = " + std::to_string(m.n_routed_experts));
  c.positive("moe_intermediate_size", m.moe_intermediate_size);
  c.non_negative("n_shared_experts", m.n_shared_experts);
  c.positive("moe_layer_freq", m.moe_layer_freq);
  if (m.first_k_dense_replace < 0 || m.first_k_dense_replace > m.num_hidden_layers)
    c.fail("first_k_dense_replace", std::to_string(m.first_k_dense_replace),
           "must be between 0 and num_hidden_layers = " + std::to_string(m.num_hidden_layers));
}

void check_attention(Checker& c, const ModelSpec& m) {
  if (m.attention() == AttentionKind::mla) {
    c.non_negative("q_lora_rank", m.q_lora_rank);
    c.positive("qk_nope_head_dim", m.qk_nope_head_dim);
    c.non_negative("qk_rope_head_dim", m.qk_rope_head_dim);
    c.positive("v_head_dim", m.v_head_dim);
    return;
  }
  c.positive("num_key_value_heads", m.num_key_value_heads);
  c.non_negative("head_dim", m.head_dim);
  if (m.num_key_value_heads > 0 && m.num_attention_heads > 0 && m.num_attention_heads % m.num_key_value_heads != 0)
    c.fail("num_key_value_heads", std::to_string(m.num_key_value_heads),
           "must divide num_attention_heads = " + std::to_string(m.num_attention_heads));
  if (m.head_dim == 0 && m.num_attention_heads > 0 && m.hidden_size > 0 && m.hidden_size % m.num_attention_heads != 0)
    c.fail("num_attention_heads", std::to_string(m.num_attention_heads),
           "must divide hidden_size = " + std::to_string(m.hidden_size) + " when head_dim is not given");
}

}  // namespace

std::vector<Problem> validate_model(const ModelSpec& m, const std::string& file) {
  Checker c{file, {}};
  c.positive("hidden_size", m.hidden_size);
  c.positive("intermediate_size", m.intermediate_size);
  c.positive("num_attention_heads", m.num_attention_heads);
  c.positive("vocab_size", m.vocab_size);
  c.positive("num_hidden_layers", m.num_hidden_layers);
  c.non_negative("published_params_B", m.published_params_B);
  c.non_negative("paper_params_B", m.paper_params_B);
  c.non_negative("paper_num_hidden_layers", m.paper_num_hidden_layers);
  c.non_negative("kv_lora_rank", m.kv_lora_rank);
  c.non_negative("n_routed_experts", m.n_routed_experts);
  check_attention(c, m);
  if (m.is_moe()) check_moe(c, m);
  return c.problems;
}

std::vector<Problem> validate_hardware(const HardwareSpec& h, const std::string& file) {
  Checker c{file, {}};
  c.positive("peak_bf16_tflops", h.peak_bf16_flops);
  c.non_negative("peak_fp16_tflops", h.peak_fp16_flops);
  c.non_negative("peak_tf32_tflops", h.peak_tf32_flops);
  c.non_negative("peak_fp32_tflops", h.peak_fp32_flops);
  c.non_negative("peak_fp8_tflops", h.peak_fp8_flops);
  c.positive("hbm_GiB", h.hbm_bytes);
  c.positive("hbm_GBps", h.hbm_bytes_per_s);
  c.positive("host_link_GBps", h.host_link_bytes_per_s);
  c.non_negative("nvlink_GBps", h.nvlink_bytes_per_s);
  c.positive("nvlink_domain_gpus", h.nvlink_domain_gpus);
  c.non_negative("network_GBps", h.network_bytes_per_s);
  c.non_negative("memory_reserve_GiB", h.memory_reserve_bytes);
  if (std::isfinite(h.memory_reserve_bytes) && h.memory_reserve_bytes >= h.hbm_bytes && h.hbm_bytes > 0)
    c.fail("memory_reserve_GiB", Checker::fmt(h.memory_reserve_bytes / double(1LL << 30)), "must be below hbm_GiB");
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
    c.positive(key + ".flops", e.gemm_by_flops[i].flops);
    c.fraction(key + ".fraction", e.gemm_by_flops[i].fraction);
    if (i > 0 && !(e.gemm_by_flops[i].flops > e.gemm_by_flops[i - 1].flops))
      c.fail(key + ".flops", Checker::fmt(e.gemm_by_flops[i].flops), "must be larger than the previous point's");
  }
  return c.problems;
}

}  // namespace remat
