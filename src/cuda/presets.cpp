#include "presets.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace remat::cuda {

using nlohmann::json;

namespace {

Dims llama3_8b(int64_t s) {
  Dims d;
  d.model = "meta-llama/Meta-Llama-3-8B";
  d.hidden_size = 4096;
  d.intermediate_size = 14336;
  d.num_attention_heads = 32;
  d.num_key_value_heads = 8;
  d.head_dim = 128;
  d.s = s;
  return d;
}

Dims deepseek(int64_t s, const std::string& which) {
  Dims d;
  d.s = s;
  if (which == "toy") {  // EAGLE paper Appendix E.2 MoE-MLA-MoE toy; MLA latent dims as V2's
    d.model = "eagle-paper-E.2-toy";
    d.hidden_size = 2048;
    d.intermediate_size = 10944;
    d.num_attention_heads = 16;
    d.moe_intermediate_size = 1408;
    d.n_routed_experts = 8;
    d.num_experts_per_tok = 6;
    d.n_shared_experts = 1;
  } else {
    d.model = "deepseek-ai/DeepSeek-V2";
    d.hidden_size = 5120;
    d.intermediate_size = 12288;
    d.num_attention_heads = 128;
    d.moe_intermediate_size = 1536;
    d.n_routed_experts = 160;
    d.num_experts_per_tok = 6;
    d.n_shared_experts = 2;
  }
  d.num_key_value_heads = d.num_attention_heads;
  d.q_lora_rank = 1536;
  d.kv_lora_rank = 512;
  d.qk_nope_head_dim = 128;
  d.qk_rope_head_dim = 64;
  d.v_head_dim = 128;
  return d;
}

}  // namespace

Dims preset_dims(const std::string& block, int64_t s, const std::string& moe_model) {
  if (block == "rmsnorm_linear" || block == "mlp" || block == "gqa") {
    Dims d = llama3_8b(s);
    if (block == "rmsnorm_linear") d.out_features = (32 + 2 * 8) * 128;  // q + k + v = 6144
    return d;
  }
  if (block == "moe" || block == "mla") return deepseek(s, moe_model);
  if (block == "streambp_layer") return llama3_8b(s);
  if (block == "lm_head") {
    Dims d = llama3_8b(s);
    d.vocab_size = 128256;
    return d;
  }
  throw std::runtime_error("no preset for block " + block);
}

Dims small_dims(const std::string& block) {
  Dims d;
  d.model = "small-check";
  d.s = 128;
  d.hidden_size = 256;
  if (block == "rmsnorm_linear") d.out_features = 384;
  if (block == "mlp") d.intermediate_size = 512;
  if (block == "gqa") {
    d.num_attention_heads = 4;
    d.num_key_value_heads = 2;
    d.head_dim = 64;
  }
  if (block == "moe") {
    d.moe_intermediate_size = 128;
    d.n_routed_experts = 8;
    d.num_experts_per_tok = 2;
    d.n_shared_experts = 1;
  }
  if (block == "lm_head") d.vocab_size = 1000;
  if (block == "streambp_layer") {
    d.intermediate_size = 512;
    d.num_attention_heads = 4;
    d.num_key_value_heads = 2;
    d.head_dim = 64;
  }
  if (block == "mla") {
    d.num_attention_heads = 2;
    d.num_key_value_heads = 2;
    d.q_lora_rank = 128;
    d.kv_lora_rank = 64;
    d.qk_nope_head_dim = 128;
    d.qk_rope_head_dim = 64;
    d.v_head_dim = 128;
  }
  return d;
}

json summarize(const json& doc) {
  const double peak_tf = doc["device"]["peak_bf16_dense_tflops"].get<double>();
  const double peak_bw = doc["device"]["peak_hbm_GBps"].get<double>();
  std::map<std::string, std::map<int64_t, std::map<std::string, double>>> rec;  // block -> s -> strategy -> recompute
  json eff = json::array();
  for (const auto& c : doc["cases"]) {
    const std::string b = c["block"], st = c["strategy"];
    const int64_t s = c["dims"]["s"];
    rec[b][s][st] = c["recompute_s"].get<double>();
    if (st != "none") continue;
    double best_gemm = 0, attn_f = 0, attn_b = 0, attn_tf = 0, attn_tb = 0;
    std::string best_name;
    std::map<std::string, json> largest;  // memory-bound kind -> its largest instance (by bytes moved)
    for (const auto& k : c["kernels"]) {
      const std::string kind = k["kind"];
      const double t = k["time_s"], fl = k["flops"];
      if (kind == "gemm" && k["tflops"].get<double>() > best_gemm && fl >= 1e11) {
        best_gemm = k["tflops"];
        best_name = k["name"];
      }
      if (kind == "attention_fwd") attn_f += fl, attn_tf += t;
      if (kind == "attention_bwd") attn_b += fl, attn_tb += t;
      const bool memory_bound = kind == "rmsnorm" || kind == "rmsnorm_bwd" || kind == "swiglu" || kind == "swiglu_bwd";
      if (memory_bound && (!largest.count(kind) || k["bytes_moved"].get<double>() > largest[kind]["bytes_moved"]))
        largest[kind] = k;
    }
    json e = {{"block", b}, {"s", s}};
    if (best_gemm > 0)
      e["best_gemm"] = {{"name", best_name}, {"tflops", best_gemm}, {"fraction_of_peak", best_gemm / peak_tf}};
    if (attn_tf + attn_tb > 0) {
      const double tf = (attn_f + attn_b) / (attn_tf + attn_tb) * 1e-12;
      e["attention_fwd_bwd"] = {{"tflops", tf},
                                {"fraction_of_peak", tf / peak_tf},
                                {"fwd_tflops", attn_f / attn_tf * 1e-12},
                                {"bwd_tflops", attn_b / attn_tb * 1e-12}};
    }
    for (const auto& [kind, k] : largest) {
      const double gbps = k["gbps"];
      e[kind + "_gbps"] = {{"name", k["name"]}, {"gbps", gbps}, {"fraction_of_peak", gbps / peak_bw}};
    }
    eff.push_back(e);
  }
  const std::map<std::string, double> paper = {
      {"rmsnorm_linear", 9.75}, {"mlp", 1.46}, {"moe", 1.48}, {"gqa", 1.48}, {"mla", 2.98}};
  json sp = json::array();
  for (auto& [b, bys] : rec)
    for (auto& [s, m] : bys)
      if (m.count("standard") && m.count("eagle") && m.at("eagle") > 0)
        sp.push_back({{"block", b},
                      {"s", s},
                      {"standard_recompute_s", m.at("standard")},
                      {"eagle_recompute_s", m.at("eagle")},
                      {"speedup", m.at("standard") / m.at("eagle")},
                      {"paper_table2_speedup", paper.count(b) ? paper.at(b) : 0.0}});
  return {{"eagle_vs_standard_recompute", sp},
          {"kernel_efficiency", eff},
          {"targets",
           {{"largest_gemm_fraction", 0.70},
            {"attention_fwd_bwd_fraction_at_s_ge_4096", 0.45},
            {"rmsnorm_swiglu_hbm_fraction", 0.75}}}};
}

}  // namespace remat::cuda
