#include "remat/io/spec_loader.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "remat/io/file_text.hpp"
#include "remat/spec/framework.hpp"
#include "remat/spec/validate.hpp"
#include "yaml_fields.hpp"

namespace remat {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGB = 1e9;
constexpr double kTera = 1e12;

void throw_if(std::vector<Problem>& problems) {
  if (!problems.empty()) throw InputError(std::move(problems));
}

// Each item of the list `node` (at the key path `key`) as a mapping of the keys `read_item` reads;
// a non-mapping item or an unknown key is a problem.
template <typename ReadItem>
void read_point_list(const YAML::Node& node, const std::string& key, const std::string& shape, const std::string& file,
                     std::vector<Problem>& problems, ReadItem read_item) {
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string item = key + "[" + std::to_string(i) + "]";
    if (!node[i].IsMap()) {
      problems.push_back({file, item, "", "must be a mapping " + shape});
      continue;
    }
    YamlFields pf(node[i], file, item + ".", problems);
    read_item(pf);
    pf.reject_unknown();
  }
}

void read_efficiency(YamlFields& parent, Efficiency& e, const std::string& file, std::vector<Problem>& problems) {
  YAML::Node node = parent.child("efficiency");
  if (!node) return parent.fail("efficiency", "", "required key is missing");
  if (!node.IsMap()) return parent.fail("efficiency", "", "must be a mapping");
  YamlFields f(node, file, "efficiency.", problems);
  f.number("attention_fwd", e.attention_fwd, true);
  f.number("attention_bwd", e.attention_bwd, true);
  f.number("memory_bound", e.memory_bound, true);
  f.number("host_link", e.host_link, true);
  f.number("nvlink", e.nvlink, true);
  f.number("network", e.network, true);
  YAML::Node gemm = f.child("gemm_by_flops");
  if (!gemm || !gemm.IsSequence()) {
    f.fail("gemm_by_flops", "", "required list of {flops, fraction} points");
  } else {
    read_point_list(gemm, "efficiency.gemm_by_flops", "{flops, fraction}", file, problems, [&](YamlFields& pf) {
      EfficiencyPoint p;
      pf.number("flops", p.flops, true);
      pf.number("fraction", p.fraction, true);
      e.gemm_by_flops.push_back(p);
    });
  }
  YAML::Node attention = f.child("attention_by_seq");  // optional
  if (attention && !attention.IsSequence()) {
    f.fail("attention_by_seq", "", "must be a list of {seq, fwd, bwd} points");
  } else if (attention) {
    read_point_list(attention, "efficiency.attention_by_seq", "{seq, fwd, bwd}", file, problems, [&](YamlFields& pf) {
      AttentionPoint p;
      pf.number("seq", p.seq, true);
      pf.number("fwd", p.fwd, true);
      pf.number("bwd", p.bwd, true);
      e.attention_by_seq.push_back(p);
    });
  }
  f.reject_unknown();
}

}  // namespace

// Rotary base, rotary scaling and norm epsilon, named as in config.json (absent: rope_theta
// 10000, no rope_scaling, norm_eps 1e-5, Megatron-LM's defaults). They change no figure, only
// the Megatron-LM flags.
void read_numerics(YamlFields& f, ModelSpec& m, const std::string& file, std::vector<Problem>& problems) {
  f.number("rope_theta", m.rope_theta, false);
  f.number("norm_eps", m.norm_eps, false);
  YAML::Node node = f.child("rope_scaling");
  if (!node) return;
  if (!node.IsMap()) return f.fail("rope_scaling", "", "must be a mapping {rope_type, factor, ...}");
  YamlFields s(node, file, "rope_scaling.", problems);
  RopeScaling& r = m.rope_scaling;
  s.text("rope_type", r.type, true);
  s.number("factor", r.factor, false);
  s.integer("original_max_position_embeddings", r.original_context_tokens, false);
  s.number("low_freq_factor", r.low_freq_factor, false);
  s.number("high_freq_factor", r.high_freq_factor, false);
  s.number("beta_fast", r.beta_fast, false);
  s.number("beta_slow", r.beta_slow, false);
  s.number("mscale", r.mscale, false);
  s.number("mscale_all_dim", r.mscale_all_dim, false);
  s.number("attention_factor", r.attention_factor, false);
  s.boolean("truncate", r.truncate, false);
  s.reject_unknown();
  if (r.type == "default") r.type = "";
}

// The layer's construction, as ModelSpec names it (absent: LLaMA's).
void read_layer_construction(YamlFields& f, ModelSpec& m) {
  std::string mlp = "gated", norm = "rmsnorm", qk = "none";
  f.text("mlp_kind", mlp, false);
  if (mlp != "gated" && mlp != "two_matrix") f.fail("mlp_kind", mlp, "must be gated or two_matrix");
  m.mlp_kind = mlp == "two_matrix" ? MlpKind::two_matrix : MlpKind::gated;
  f.text("hidden_act", m.hidden_act, false);
  f.text("norm", norm, false);
  if (norm != "rmsnorm" && norm != "layernorm") f.fail("norm", norm, "must be rmsnorm or layernorm");
  m.norm_kind = norm == "layernorm" ? NormKind::layer : NormKind::rms;
  f.boolean("norm_bias", m.norm_bias, false);
  f.boolean("qkv_bias", m.qkv_bias, false);
  f.boolean("o_bias", m.o_bias, false);
  f.boolean("mlp_bias", m.mlp_bias, false);
  f.boolean("lm_head_bias", m.lm_head_bias, false);
  f.boolean("parallel_attn_mlp", m.parallel_attn_mlp, false);
  f.boolean("shared_input_norm", m.shared_input_norm, false);
  f.integer("extra_norms_per_layer", m.extra_norms_per_layer, false);
  f.number("rotary_fraction", m.rotary_fraction, false);
  if (m.rotary_fraction < 0 || m.rotary_fraction > 1)
    f.fail("rotary_fraction", std::to_string(m.rotary_fraction), "must be in [0, 1]");
  f.text("qk_norm", qk, false);
  if (qk != "none" && qk != "shared" && qk != "per_head") f.fail("qk_norm", qk, "must be none, shared or per_head");
  m.qk_norm = qk == "shared" ? QkNorm::shared : qk == "per_head" ? QkNorm::per_head : QkNorm::none;
  f.integer("position_embeddings", m.position_embeddings, false);
}

ModelSpec parse_model_yaml(const std::string& text, const std::string& file) {
  std::vector<Problem> problems;
  YAML::Node root = parse_yaml_map(text, file, problems);
  throw_if(problems);
  ModelSpec m;
  YamlFields f(root, file, "", problems);
  f.text("name", m.name, true);
  f.text("source", m.source, false);
  f.number("published_params_B", m.published_params_B, false);
  f.integer("hidden_size", m.hidden_size, true);
  f.integer("intermediate_size", m.intermediate_size, true);
  f.integer("num_attention_heads", m.num_attention_heads, true);
  f.integer("num_key_value_heads", m.num_key_value_heads, false);
  f.integer("head_dim", m.head_dim, false);
  f.integer("vocab_size", m.vocab_size, true);
  f.integer("num_hidden_layers", m.num_hidden_layers, true);
  f.boolean("tie_word_embeddings", m.tie_word_embeddings, false);
  f.integer("n_routed_experts", m.n_routed_experts, false);
  f.integer("num_experts_per_tok", m.num_experts_per_tok, false);
  f.integer("moe_intermediate_size", m.moe_intermediate_size, false);
  f.integer("n_shared_experts", m.n_shared_experts, false);
  f.integer("shared_expert_intermediate_size", m.shared_expert_intermediate_size, false);
  f.integer("first_k_dense_replace", m.first_k_dense_replace, false);
  f.integer("moe_layer_freq", m.moe_layer_freq, false);
  f.integer("q_lora_rank", m.q_lora_rank, false);
  f.integer("kv_lora_rank", m.kv_lora_rank, false);
  f.integer("qk_rope_head_dim", m.qk_rope_head_dim, false);
  f.integer("qk_nope_head_dim", m.qk_nope_head_dim, false);
  f.integer("v_head_dim", m.v_head_dim, false);
  f.integer("index_n_heads", m.index_n_heads, false);  // DeepSeek sparse attention (every layer)
  f.integer("index_head_dim", m.index_head_dim, false);
  f.integer("index_topk", m.index_topk, false);
  f.integer("paper_num_hidden_layers", m.paper_num_hidden_layers, false);
  f.number("paper_params_B", m.paper_params_B, false);
  read_layer_construction(f, m);
  read_numerics(f, m, file, problems);
  f.reject_unknown();
  throw_if(problems);
  if (f.child("num_key_value_heads") && m.num_key_value_heads == 0)
    problems.push_back(
        {file, "num_key_value_heads", "0", "must be a positive integer (leave it out for multi-head attention)"});
  throw_if(problems);
  if (m.num_key_value_heads == 0 && m.attention() == AttentionKind::gqa) m.num_key_value_heads = m.num_attention_heads;
  auto checks = validate_model(m, file);
  throw_if(checks);
  return m;
}

// A framework's measured attention kernel: a list of {head_dim, seq, fwd, bwd} points under `name`.
void read_attention_grid(YamlFields& f, const std::string& name, const std::string& key, const std::string& file,
                         std::vector<Problem>& problems, std::vector<AttentionGridPoint>& grid) {
  YAML::Node node = f.child(name);
  if (!node) return;
  if (!node.IsSequence()) return f.fail(name, "", "must be a list of {head_dim, seq, fwd, bwd} points");
  read_point_list(node, key + "." + name, "{head_dim, seq, fwd, bwd}", file, problems, [&](YamlFields& pf) {
    AttentionGridPoint p;
    pf.number("head_dim", p.head_dim, true);
    pf.number("seq", p.seq, true);
    pf.number("fwd", p.fwd, true);
    pf.number("bwd", p.bwd, true);
    grid.push_back(p);
  });
}

// One `frameworks.<name>` entry: its fitted time constants (remat calibrate --megatron-log) and its
// measured attention kernel, each optional.
FrameworkEfficiency read_framework_fit(const YAML::Node& node, const std::string& key, const std::string& file,
                                       std::vector<Problem>& problems) {
  FrameworkEfficiency e;
  YamlFields f(node, file, key + ".", problems);
  f.number("gemm_scale", e.gemm_scale, false);
  f.number("memory_bound_scale", e.memory_bound_scale, false);
  f.number("layer_overhead_us", e.layer_overhead_s, false, 1e-6);
  f.number("moe_layer_host_us", e.moe_layer_host_s, false, 1e-6);
  e.has_moe_layer_host = bool(node["moe_layer_host_us"]);
  f.text("calibrated_from", e.calibrated_from, false);
  f.text("attention_source", e.attention_source, false);
  f.text("adapter_gemm_source", e.adapter_gemm_source, false);
  YAML::Node adapter = f.child("adapter_gemm");
  if (adapter && !adapter.IsSequence()) {
    f.fail("adapter_gemm", "", "must be a list of {rank, flops, fwd, bwd} points");
  } else if (adapter) {
    read_point_list(adapter, key + ".adapter_gemm", "{rank, flops, fwd, bwd}", file, problems, [&](YamlFields& pf) {
      AdapterGemmPoint p;
      pf.number("rank", p.rank, false);
      pf.number("flops", p.flops, true);
      pf.number("fwd", p.fwd, true);
      pf.number("bwd", p.bwd, true);
      e.adapter_gemm.push_back(p);
    });
  }
  read_attention_grid(f, "attention", key, file, problems, e.attention);
  read_attention_grid(f, "masked_attention", key, file, problems, e.masked_attention);
  f.text("masked_attention_source", e.masked_attention_source, false);
  f.number("fp32_gemm", e.fp32_gemm, false);
  f.text("fp32_gemm_source", e.fp32_gemm_source, false);
  f.reject_unknown();
  return e;
}

// Optional `frameworks: {<registered profile name>: {...}}`.
void read_frameworks(YamlFields& parent, HardwareSpec& h, const std::string& file, std::vector<Problem>& problems) {
  YAML::Node node = parent.child("frameworks");
  if (!node) return;
  if (!node.IsMap()) return parent.fail("frameworks", "", "must be a mapping of framework names");
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      problems.push_back({file, "frameworks", "", "must be keyed by framework names"});
      continue;
    }
    const std::string name = entry.first.Scalar();
    const std::string key = "frameworks." + name;
    if (!find_framework(name)) {
      problems.push_back({file, key, "", "is not a registered framework (" + framework_names() + ")"});
      continue;
    }
    if (!entry.second.IsMap()) {
      problems.push_back({file, key, "", "must be a mapping"});
      continue;
    }
    h.framework_fits[name] = read_framework_fit(entry.second, key, file, problems);
  }
}

HardwareSpec parse_hardware_yaml(const std::string& text, const std::string& file) {
  std::vector<Problem> problems;
  YAML::Node root = parse_yaml_map(text, file, problems);
  throw_if(problems);
  HardwareSpec h;
  YamlFields f(root, file, "", problems);
  f.text("name", h.name, true);
  f.text("source", h.source, false);
  f.number("peak_bf16_tflops", h.peak_bf16_flops, true, kTera);
  f.number("peak_fp16_tflops", h.peak_fp16_flops, false, kTera);
  f.number("peak_tf32_tflops", h.peak_tf32_flops, false, kTera);
  f.number("peak_fp32_tflops", h.peak_fp32_flops, false, kTera);
  f.number("peak_fp8_tflops", h.peak_fp8_flops, false, kTera);
  f.number("hbm_GiB", h.hbm_bytes, true, kGiB);
  f.number("hbm_GBps", h.hbm_bytes_per_s, true, kGB);
  f.number("host_link_GBps", h.host_link_bytes_per_s, true, kGB);
  f.number("nvlink_GBps", h.nvlink_bytes_per_s, false, kGB);
  f.integer("nvlink_domain_gpus", h.nvlink_domain_gpus, false);
  f.number("network_GBps", h.network_bytes_per_s, false, kGB);
  f.number("memory_reserve_GiB", h.memory_reserve_bytes, false, kGiB);
  f.text("calibrated_from", h.calibrated_from, false);
  read_efficiency(f, h.efficiency, file, problems);
  read_frameworks(f, h, file, problems);
  f.reject_unknown();
  throw_if(problems);
  auto checks = validate_hardware(h, file);
  throw_if(checks);
  return h;
}

SpecSource read_spec_source(const std::string& path_or_name, const std::string& kind) {
  namespace fs = std::filesystem;
  const std::string flag = kind == "models" ? "--model" : "--hardware";
  if (path_or_name.empty()) throw InputError({{"command line", flag, "", "needs a file or a built-in spec name"}});
  std::error_code ec;
  if (fs::is_regular_file(path_or_name, ec)) {
    std::string text = read_input_file(path_or_name, flag, kMaxSpecFileBytes);
    if (text.empty()) throw InputError({{path_or_name, "(file)", "", "is empty"}});
    return {path_or_name, std::move(text)};
  }
  std::string stem = fs::path(path_or_name).stem().string();
  for (const auto& b : builtin_specs())
    if (kind == b.kind && stem == b.name && (path_or_name == stem || path_or_name == kind + "/" + stem + ".yaml"))
      return {std::string(b.kind) + "/" + b.name + ".yaml (built-in)", b.text};
  if (fs::is_directory(path_or_name, ec))
    throw InputError({{"command line", flag, path_or_name, "is a directory, not a spec file"}});
  if (fs::exists(path_or_name, ec)) checked_file_size(path_or_name, flag, kMaxSpecFileBytes);  // a FIFO, a device
  throw InputError(
      {{"command line", flag, path_or_name,
        "no such file, and no built-in " + kind + " spec of that name (built-in: " + builtin_names(kind) + ")"}});
}

std::string builtin_names(const std::string& kind) {
  std::string names;
  for (const auto& b : builtin_specs())
    if (kind == b.kind) names += (names.empty() ? "" : ", ") + std::string(b.name);
  return names;
}

ModelSpec load_model(const SpecSource& src) {
  std::string extension = std::filesystem::path(src.label).extension().string();
  for (char& c : extension) c = char(std::tolower(static_cast<unsigned char>(c)));
  const bool json = extension == ".json";
  return json ? parse_hf_config(src.text, src.label) : parse_model_yaml(src.text, src.label);
}

HardwareSpec load_hardware(const SpecSource& src) { return parse_hardware_yaml(src.text, src.label); }

}  // namespace remat
