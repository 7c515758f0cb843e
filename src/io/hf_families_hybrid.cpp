// Readers of the Mamba-2 families in hf_families.cpp's table: Nemotron-H (one block a layer by
// pattern), Bamba and GraniteMoeHybrid (transformers' BambaDecoderLayer, GraniteMoeHybridDecoderLayer:
// an RMSNorm, a Mamba-2 mixer (BambaMixer) or attention, then an RMSNorm and a feed-forward in every
// layer), Falcon-H1 (attention beside the mixer in every layer) and the pure Mamba-2 model
// (Mamba2Block: an RMSNorm and a Mamba-2 mixer, no attention and no feed-forward).
#include <algorithm>
#include <string>
#include <vector>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

void require_positive(HfJsonReader& r, const char* key, int64_t value) {
  if (value < 1) r.fail(key, std::to_string(value), "must be a positive integer");
}

// A note for each Mamba-2 key left out that takes transformers' default.
void note_default(HfJsonReader& r, ModelSpec& m, const char* type, const char* key, int64_t value) {
  if (!r.has(key))
    m.notes.push_back(r.path(key) + " is absent: transformers' default for " + type + ", " + std::to_string(value));
}

// The Mamba-2 mixer's width: heads x head_dim must be `inner` (the in_proj and conv1d are built
// from it, the scan from heads x head_dim), named `inner_name` in the message.
void check_inner(HfJsonReader& r, const ModelSpec& m, const char* heads_key, const char* head_dim_key, int64_t inner,
                 const std::string& inner_name) {
  if (m.mamba_num_heads > 0 && m.mamba_head_dim * m.mamba_num_heads != inner)
    r.fail(head_dim_key, std::to_string(m.mamba_head_dim),
           std::string("times ") + heads_key + " = " + std::to_string(m.mamba_num_heads) + " must be " + inner_name +
               " = " + std::to_string(inner));
  if (m.mamba_n_groups > 0 && m.mamba_num_heads % m.mamba_n_groups != 0)
    r.fail("mamba_n_groups", std::to_string(m.mamba_n_groups),
           "must divide the Mamba-2 heads (" + std::to_string(m.mamba_num_heads) + ")");
}

// BambaConfig's Mamba-2 keys (GraniteMoeHybridConfig's and FalconH1Config's are the same, with the
// same defaults): d_inner is mamba_expand x hidden_size (Falcon-H1: mamba_d_ssm, default 1024, null
// for the expand rule) in mamba_n_heads heads of mamba_d_head ("auto": d_inner / mamba_n_heads);
// B and C in mamba_n_groups groups of mamba_d_state.
void read_bamba_mamba(HfJsonReader& r, ModelSpec& m, const char* type, bool width_from_d_ssm = false) {
  int64_t expand = 2;
  m.mamba_num_heads = 128, m.ssm_state_size = 256, m.mamba_n_groups = 1;
  m.mamba_conv_kernel = 4, m.mamba_chunk_size = 256;
  m.mamba_conv_bias = true, m.mamba_proj_bias = false;
  note_default(r, m, type, "mamba_n_heads", m.mamba_num_heads);
  note_default(r, m, type, "mamba_d_state", m.ssm_state_size);
  r.integer("mamba_n_heads", m.mamba_num_heads, false);
  r.integer("mamba_expand", expand, false);
  r.integer("mamba_n_groups", m.mamba_n_groups, false);
  r.integer("mamba_d_state", m.ssm_state_size, false);
  r.integer("mamba_d_conv", m.mamba_conv_kernel, false);
  r.integer("mamba_chunk_size", m.mamba_chunk_size, false);
  r.boolean("mamba_conv_bias", m.mamba_conv_bias);
  r.boolean("mamba_proj_bias", m.mamba_proj_bias);
  int64_t inner = expand * m.hidden_size;
  std::string inner_name = "mamba_expand x hidden_size";
  if (width_from_d_ssm && !(r.object.contains("mamba_d_ssm") && r.object["mamba_d_ssm"].is_null())) {
    inner = 1024, inner_name = "mamba_d_ssm";
    r.integer("mamba_d_ssm", inner, false);
  }
  const size_t before = r.problems.size();
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"mamba_n_heads", m.mamba_num_heads},
                                   {"mamba_expand", expand},
                                   {"mamba_n_groups", m.mamba_n_groups},
                                   {"mamba_d_state", m.ssm_state_size},
                                   {"mamba_d_conv", m.mamba_conv_kernel},
                                   {"mamba_chunk_size", m.mamba_chunk_size}})
    require_positive(r, key, value);
  if (inner_name == "mamba_d_ssm") require_positive(r, "mamba_d_ssm", inner);
  if (r.problems.size() > before) return;
  if (inner % m.mamba_num_heads != 0)
    return r.fail("mamba_n_heads", std::to_string(m.mamba_num_heads),
                  "must divide " + inner_name + " = " + std::to_string(inner));
  m.mamba_head_dim = inner / m.mamba_num_heads;
  if (r.has("mamba_d_head") && r.object["mamba_d_head"].is_string()) {
    if (r.text("mamba_d_head") != "auto")
      r.fail("mamba_d_head", r.object["mamba_d_head"].dump(), "must be an integer or \"auto\"");
  } else {
    r.integer("mamba_d_head", m.mamba_head_dim, false);
  }
  check_inner(r, m, "mamba_n_heads", "mamba_d_head", inner, inner_name);
}

// transformers 5's spelling of Nemotron-H's pattern: layers_block_type (or layer_types), one
// word a layer (linear_attention or mamba: M, full_attention or attention: *, mlp: -, moe: E).
std::string nemotron_h_pattern(HfJsonReader& r) {
  std::string pattern;
  for (const std::string& kind : r.text_list("layers_block_type")) {
    const std::string current = current_layer_type(kind);
    const char c = current == "linear_attention" ? 'M'
                   : current == "full_attention" ? '*'
                   : kind == "mlp"               ? '-'
                   : kind == "moe"               ? 'E'
                                                 : '?';
    if (c == '?') {
      r.fail("layers_block_type", kind, "must hold only linear_attention (Mamba-2), full_attention, mlp and moe");
      return "";
    }
    pattern += c;
  }
  return pattern;
}

}  // namespace

// Nemotron-H: hybrid_override_pattern gives each layer one block: M a Mamba-2 mixer, * attention
// (no rotary), - a relu^2 two-matrix MLP, E an MoE of relu^2 two-matrix experts (Nemotron 3);
// each with its own RMSNorm and residual.
namespace {

// NemotronHConfig's keys beside the layer shape: mamba_hidden_act (the gate's activation; remat's
// scan costs SiLU), and those its model class builds nothing from: expand (the Mamba-2 width is
// mamba_num_heads x mamba_head_dim; Nemotron 3 Nano's expand x hidden_size is not), n_shared_experts
// (the shared MLP is moe_shared_expert_intermediate_size wide) and the MTP layers' patterns.
void read_nemotron_h_extras(HfJsonReader& r, ModelSpec& m) {
  if (const std::string act = r.text("mamba_hidden_act"); !act.empty() && act != "silu")
    m.notes.push_back(r.path("mamba_hidden_act") + " = " + act + ": the Mamba-2 gate is costed as SiLU");
  for (const char* key : {"expand", "n_shared_experts", "mtp_hybrid_override_pattern", "mtp_layers_block_type"})
    r.mark_read(key);
}

}  // namespace

void nemotron_h_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  m.logits = ModelLogits::fp32_in_forward;  // NemotronHForCausalLM.forward: lm_head(...).float()
  two_matrix_mlp(m, "relu2");
  read_activation(r, m, "mlp_hidden_act");
  m.rotary_fraction = 0;
  r.integer("mamba_num_heads", m.mamba_num_heads, true);
  r.integer("mamba_head_dim", m.mamba_head_dim, true);
  r.integer("ssm_state_size", m.ssm_state_size, true);
  r.integer("n_groups", m.mamba_n_groups, false);
  r.integer("conv_kernel", m.mamba_conv_kernel, false);
  r.integer("chunk_size", m.mamba_chunk_size, false);
  r.boolean("use_bias", m.mamba_proj_bias);
  r.boolean("use_conv_bias", m.mamba_conv_bias);
  read_nemotron_h_extras(r, m);
  const bool by_words = !r.has("hybrid_override_pattern");
  const char* key = by_words ? "layers_block_type" : "hybrid_override_pattern";
  const std::string pattern = by_words ? nemotron_h_pattern(r) : r.text("hybrid_override_pattern");
  if (by_words && m.num_hidden_layers == 0)
    m.num_hidden_layers = int64_t(pattern.size());  // transformers 5 derives the depth from the list
  if (int64_t(pattern.size()) != m.num_hidden_layers)
    return r.fail(
        key, pattern,
        "must have one character per layer (num_hidden_layers = " + std::to_string(m.num_hidden_layers) + ")");
  std::vector<int64_t> not_moe;
  for (char c : pattern) {
    if (c != 'M' && c != '*' && c != '-' && c != 'E')
      return r.fail(key, pattern, "must hold only M (Mamba-2), * (attention), - (MLP) and E (MoE)");
    if (c != 'E') not_moe.push_back(int64_t(m.layer_mixers.size()));
    m.layer_mixers.push_back(c == 'M' ? Mixer::mamba2 : c == '*' ? Mixer::attention : Mixer::none);
    m.layer_has_ffn.push_back(c == '-' || c == 'E');
  }
  if (not_moe.size() == pattern.size()) return;
  set_dense_layers(m, not_moe);  // E: the experts (read_experts) in exactly these layers
}

// Bamba: attention where attn_layer_indices says (none when absent: every layer Mamba-2),
// Mamba-2 elsewhere; a SwiGLU MLP after each; attention_bias and mlp_bias false, half of each
// head rotated (BambaConfig hard-codes partial_rotary_factor 0.5).
void bamba_layer(HfJsonReader& r, ModelSpec& m) {
  bool bias = false;
  r.boolean("attention_bias", bias);
  m.qkv_bias = m.o_bias = bias;
  r.boolean("mlp_bias", m.mlp_bias);
  m.rotary_fraction = 0.5;
  read_bamba_mamba(r, m, "bamba");
  std::vector<int64_t> attention;
  r.integer_list("attn_layer_indices", attention);
  for (int64_t i : attention)
    if (i < 0 || i >= m.num_hidden_layers)
      return r.fail("attn_layer_indices", std::to_string(i),
                    "names a layer outside 0.." + std::to_string(m.num_hidden_layers - 1));
  for (int64_t i = 0; i < std::min(m.num_hidden_layers, limits::kLayers); ++i)
    m.layer_mixers.push_back(std::find(attention.begin(), attention.end(), i) != attention.end() ? Mixer::attention
                                                                                                 : Mixer::mamba2);
}

// Whether the config turns rotary off by a null rope_theta (rope_parameters null, or its or the
// top-level rope_theta null): OLMo Hybrid's released checkpoints run without positions.
bool rope_nulled(HfJsonReader& r) {
  const auto& j = r.object;
  if (j.contains("rope_parameters") && j["rope_parameters"].is_null()) return true;
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
    const auto& p = j["rope_parameters"];
    return p.contains("rope_theta") && p["rope_theta"].is_null();
  }
  return j.contains("rope_theta") && j["rope_theta"].is_null();
}

// Qwen3-Next / Qwen3.5: Gated DeltaNet layers where layer_types says linear_attention (else
// every full_attention_interval-th layer is attention); attention with q/k norms, a sigmoid
// output gate from q_proj (attn_output_gate) and a quarter of each head rotated. Its RMSNorm is
// Gemma's: (1 + weight) applied in fp32 before the cast back (Qwen3NextRMSNorm, Qwen3_5RMSNorm).
void qwen3_next_layer(HfJsonReader& r, ModelSpec& m) {
  qwen3_layer(r, m);
  integer_or_default(r, m, "head_dim", m.head_dim, 256);  // Qwen3NextConfig's, not hidden / heads
  m.norm_scale_fp32 = true;
  m.attention_output_gate = true;
  r.boolean("attn_output_gate", m.attention_output_gate);
  set_rotary_fraction(r, m, "partial_rotary_factor", 0.25);
  // absent keys take Qwen3NextConfig's / Qwen3_5TextConfig's defaults (transformers 5.17, read on
  // the GPU machine): 16 key and 32 value heads of 128, a 4-wide convolution
  integer_or_default(r, m, "linear_num_key_heads", m.linear_num_key_heads, 16);
  integer_or_default(r, m, "linear_num_value_heads", m.linear_num_value_heads, 32);
  integer_or_default(r, m, "linear_key_head_dim", m.linear_key_head_dim, 128);
  integer_or_default(r, m, "linear_value_head_dim", m.linear_value_head_dim, 128);
  integer_or_default(r, m, "linear_conv_kernel_dim", m.linear_conv_kernel, 4);
  int64_t mtp = 0;
  r.integer("mtp_num_hidden_layers", mtp, false);
  if (mtp > 0)
    m.notes.push_back(r.path("mtp_num_hidden_layers") + " = " + std::to_string(mtp) +
                      ": the multi-token prediction layer is not counted (transformers does not build it)");
  int64_t interval = 4;
  r.integer("full_attention_interval", interval, false);
  if (interval < 1) return r.fail("full_attention_interval", std::to_string(interval), "must be a positive integer");
  const int64_t layers = std::min(m.num_hidden_layers, limits::kLayers);
  for (bool linear : read_linear_layer_types(r, layers, [interval](int64_t i) { return (i + 1) % interval != 0; }))
    m.layer_mixers.push_back(linear ? Mixer::gated_deltanet : Mixer::attention);
}

// OLMo Hybrid (transformers' OlmoHybridModel): OLMo-2's attention layers (q/k norms over all heads,
// norms after attention and MLP) where layer_types says full_attention (default: every fourth
// layer, the last one at least), Gated DeltaNet layers elsewhere. Its OlmoHybridGatedDeltaNet
// projects q, k, v, a, b and the gate g separately (the same parameters as Qwen3-Next's fused
// in_proj_qkvz / in_proj_ba; LoRA adapts its q_proj, k_proj, v_proj and o_proj too) and runs
// Qwen3-Next's rule (the doubled beta of linear_allow_neg_eigval, one more per-head tensor, is not
// counted). Defaults per
// OlmoHybridConfig: key and value heads = num_attention_heads, key dim 0.75 x hidden / key heads,
// value dim twice that, conv 4.
void olmo_hybrid_layer(HfJsonReader& r, ModelSpec& m) {
  olmo2_layer(r, m);
  m.linear_attention_own_projections = true;
  if (rope_nulled(r)) {
    m.rotary_fraction = 0;
    m.notes.push_back(r.path("rope_parameters") +
                      ": rope_theta is null, so the attention layers run without "
                      "rotary positions (as the released OLMo Hybrid checkpoints do)");
  }
  m.linear_num_key_heads = m.linear_num_value_heads = m.num_attention_heads;
  r.integer("linear_num_key_heads", m.linear_num_key_heads, false);
  r.integer("linear_num_value_heads", m.linear_num_value_heads, false);
  require_positive(r, "linear_num_key_heads", m.linear_num_key_heads);
  if (m.linear_num_key_heads < 1) return;
  m.linear_key_head_dim = int64_t(0.75 * double(m.hidden_size) / double(m.linear_num_key_heads));
  r.integer("linear_key_head_dim", m.linear_key_head_dim, false);
  m.linear_value_head_dim = 2 * m.linear_key_head_dim;
  r.integer("linear_value_head_dim", m.linear_value_head_dim, false);
  r.integer("linear_conv_kernel_dim", m.linear_conv_kernel, false);
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"linear_num_value_heads", m.linear_num_value_heads},
                                   {"linear_key_head_dim", m.linear_key_head_dim},
                                   {"linear_value_head_dim", m.linear_value_head_dim},
                                   {"linear_conv_kernel_dim", m.linear_conv_kernel}})
    require_positive(r, key, value);
  // OlmoHybridConfig's default: every fourth layer full, and the last where there are fewer than four
  const int64_t layers = std::min(m.num_hidden_layers, limits::kLayers);
  const std::vector<bool> flags = read_linear_layer_types(
      r, layers, [layers](int64_t i) { return i % 4 != 3 && !(layers < 4 && i == layers - 1); });
  if (flags.empty()) return;
  const int64_t linear = std::count(flags.begin(), flags.end(), true);
  for (bool is_linear : flags) m.layer_mixers.push_back(is_linear ? Mixer::gated_deltanet : Mixer::attention);
  if (linear == 0 || linear == layers)
    r.fail("layer_types", linear == 0 ? "full_attention only" : "linear_attention only",
           "must hold at least one linear_attention and one full_attention layer (OlmoHybridConfig requires both)");
}

// Falcon-H1 (transformers' FalconH1DecoderLayer): every layer runs attention and a Mamba-2 mixer
// side by side on one RMSNorm's output, then an RMSNorm and a SwiGLU MLP. FalconH1Config's Mamba
// keys: mamba_d_ssm wide (null: mamba_expand x hidden_size) in mamba_n_heads heads of mamba_d_head
// ("auto": d_ssm / heads), B and C in mamba_n_groups groups of mamba_d_state; in_proj's bias is
// mamba_proj_bias, out_proj's projectors_bias; the gated RMSNorm only where mamba_rms_norm. The muP
// multipliers change no parameter; transformers applies them as separate multiplies (a scaled copy
// of the mixer's input, the logits scaled after the head). attn_layer_indices and mamba_use_mlp are
// not read by transformers 5.17's FalconH1 model (every layer has both mixers and an MLP).
void falcon_h1_layer(HfJsonReader& r, ModelSpec& m) {
  bool bias = false;
  r.boolean("attention_bias", bias);
  m.qkv_bias = m.o_bias = bias;
  r.boolean("mlp_bias", m.mlp_bias);
  const size_t before = r.problems.size();
  read_bamba_mamba(r, m, "falcon_h1", true);
  if (r.problems.size() > before) return;
  m.mamba_out_proj_bias_own = true;
  r.boolean("projectors_bias", m.mamba_out_proj_bias);
  m.mamba_gated_norm = false, m.mamba_norm_before_gate = true;
  r.boolean("mamba_rms_norm", m.mamba_gated_norm);
  r.boolean("mamba_norm_before_gate", m.mamba_norm_before_gate);
  m.mamba_input_scaled_copy = m.logits_multiplied = true;
  for (const std::string& kind : r.text_list("layers_block_type"))
    if (kind != "hybrid") return r.fail("layers_block_type", kind, "must hold only \"hybrid\" (Falcon-H1)");
  m.layer_mixers.assign(size_t(std::min(m.num_hidden_layers, limits::kLayers)), Mixer::attention_mamba2);
}

// GraniteMoeHybrid (Granite 4.0-H): layer_types mamba / attention (absent: every layer Mamba-2),
// then in every layer num_local_experts routed experts of intermediate_size (default 8) beside a
// shared SwiGLU MLP of shared_intermediate_size (default 1024), counted as that many
// intermediate_size-wide shared experts; num_local_experts 0: the shared MLP alone, a dense
// layer. Attention has no positions unless position_embedding_type is "rope".
void granitemoehybrid_layer(HfJsonReader& r, ModelSpec& m) {
  bool bias = false;
  r.boolean("attention_bias", bias);
  m.qkv_bias = m.o_bias = bias;
  m.rotary_fraction = r.text("position_embedding_type") == "rope" ? 1.0 : 0.0;
  read_bamba_mamba(r, m, "granitemoehybrid");
  const std::vector<std::string> types = r.text_list("layer_types");
  if (!types.empty() && int64_t(types.size()) != m.num_hidden_layers)
    return r.fail("layer_types", std::to_string(types.size()) + " entries",
                  "must name each of num_hidden_layers = " + std::to_string(m.num_hidden_layers) + " layers");
  for (int64_t i = 0; i < std::min(m.num_hidden_layers, limits::kLayers); ++i) {
    // transformers 5 writes linear_attention and full_attention for the older mamba and attention
    const std::string kind = types.empty() ? "mamba" : types[size_t(i)];
    const bool mamba = current_layer_type(kind) == "linear_attention";
    if (!mamba && current_layer_type(kind) != "full_attention")
      return r.fail("layer_types", kind,
                    "must hold only \"mamba\" (or \"linear_attention\") and \"attention\" (or \"full_attention\")");
    m.layer_mixers.push_back(mamba ? Mixer::mamba2 : Mixer::attention);
  }
  int64_t experts = 8, shared = 1024;
  r.integer("num_local_experts", experts, false);
  r.integer("shared_intermediate_size", shared, false);
  if (experts < 0) return r.fail("num_local_experts", std::to_string(experts), "must be 0 or more");
  if (experts == 0) {
    if (shared < 1)
      return r.fail("shared_intermediate_size", std::to_string(shared),
                    "must be positive when num_local_experts is 0 (the shared MLP is each layer's feed-forward)");
    m.intermediate_size = shared;
    m.notes.push_back(r.path("num_local_experts") +
                      " = 0: each layer's feed-forward is the shared MLP of shared_intermediate_size = " +
                      std::to_string(shared) + " (intermediate_size is not used)");
    return;
  }
  if (shared < 0) return r.fail("shared_intermediate_size", std::to_string(shared), "must be 0 or more");
  if (m.intermediate_size > 0)
    shared_mlp_as_experts(r, "shared_intermediate_size", shared, m.intermediate_size, "the experts' intermediate_size",
                          m);
  m.n_routed_experts = experts;  // the family's experts are optional_num_experts: this count stands
  m.moe_intermediate_size = m.intermediate_size;
}

// Mamba-2 (Mamba2Config; mistralai/Mamba-Codestral, state-spaces/mamba2-*): every layer an
// RMSNorm and a Mamba-2 mixer of num_heads x head_dim = expand x hidden_size, no attention and no
// feed-forward. With no attention, num_attention_heads and head_dim stand for the Mamba-2 heads
// (so that --tp splits them) and intermediate_size for d_inner; no layer uses them as attention.
void mamba2_layer(HfJsonReader& r, ModelSpec& m) {
  int64_t expand = 2;
  m.logits = ModelLogits::fp32_in_forward;  // Mamba2ForCausalLM.forward: lm_head(...).float()
  m.mamba_num_heads = 128, m.mamba_head_dim = 64, m.ssm_state_size = 128, m.mamba_n_groups = 8;
  m.mamba_conv_kernel = 4, m.mamba_chunk_size = 256;
  m.mamba_conv_bias = true, m.mamba_proj_bias = false;
  note_default(r, m, "mamba2", "num_heads", m.mamba_num_heads);
  note_default(r, m, "mamba2", "head_dim", m.mamba_head_dim);
  note_default(r, m, "mamba2", "state_size", m.ssm_state_size);
  note_default(r, m, "mamba2", "n_groups", m.mamba_n_groups);
  r.integer("num_heads", m.mamba_num_heads, false);
  r.integer("head_dim", m.mamba_head_dim, false);
  r.integer("state_size", m.ssm_state_size, false);
  r.integer("n_groups", m.mamba_n_groups, false);
  r.integer("expand", expand, false);
  r.integer("conv_kernel", m.mamba_conv_kernel, false);
  r.integer("chunk_size", m.mamba_chunk_size, false);
  r.boolean("use_bias", m.mamba_proj_bias);
  r.boolean("use_conv_bias", m.mamba_conv_bias);
  const size_t before = r.problems.size();
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"num_heads", m.mamba_num_heads},
                                   {"head_dim", m.mamba_head_dim},
                                   {"state_size", m.ssm_state_size},
                                   {"n_groups", m.mamba_n_groups},
                                   {"expand", expand},
                                   {"conv_kernel", m.mamba_conv_kernel},
                                   {"chunk_size", m.mamba_chunk_size}})
    require_positive(r, key, value);
  if (r.problems.size() > before) return;
  check_inner(r, m, "num_heads", "head_dim", expand * m.hidden_size, "expand x hidden_size");
  m.num_attention_heads = m.num_key_value_heads = m.mamba_num_heads;
  m.head_dim = m.mamba_head_dim;
  m.intermediate_size = expand * m.hidden_size;
  m.rotary_fraction = 0;
  for (int64_t i = 0; i < std::min(m.num_hidden_layers, limits::kLayers); ++i) {
    m.layer_mixers.push_back(Mixer::mamba2);
    m.layer_has_ffn.push_back(false);
  }
  note_if_true(r, m, "residual_in_fp32", true,
               "transformers' Mamba2Block adds the residual in fp32, so each layer's output is fp32; remat counts "
               "the layer inputs it keeps in bf16 (an underestimate of those tensors)");
  m.notes.push_back("a Mamba-2 model without attention: num_attention_heads and head_dim stand for the " +
                    std::to_string(m.mamba_num_heads) + " Mamba-2 heads of " + std::to_string(m.mamba_head_dim) +
                    " (what --tp splits)");
}

namespace {

// LFM2's mixers (transformers' Lfm2DecoderLayer): layer_types "conv" (Lfm2ShortConv) or
// "full_attention" (LLaMA's attention with RMSNorms of head_dim on q and k); without layer_types,
// full_attn_idxs lists the attention layers (absent: every layer attention, Lfm2Config's default).
void read_lfm2_mixers(HfJsonReader& r, ModelSpec& m) {
  m.qk_norm = QkNorm::shared;
  r.integer("conv_L_cache", m.short_conv_kernel, false);
  if (m.short_conv_kernel < 1 || m.short_conv_kernel > limits::kHeadDim)
    r.fail("conv_L_cache", std::to_string(m.short_conv_kernel),
           "must be between 1 and " + std::to_string(limits::kHeadDim));
  r.boolean("conv_bias", m.short_conv_bias);
  const std::vector<std::string> types = r.text_list("layer_types");
  std::vector<int64_t> attention;
  const bool listed = r.has("full_attn_idxs");
  r.integer_list("full_attn_idxs", attention);
  if (!types.empty() && int64_t(types.size()) != m.num_hidden_layers)
    return r.fail("layer_types", std::to_string(types.size()) + " entries",
                  "must name each of num_hidden_layers = " + std::to_string(m.num_hidden_layers) + " layers");
  for (int64_t i = 0; i < std::min(m.num_hidden_layers, limits::kLayers); ++i) {
    if (!types.empty() && types[size_t(i)] != "conv" && types[size_t(i)] != "full_attention")
      return r.fail("layer_types", types[size_t(i)], "must hold only \"conv\" and \"full_attention\"");
    const bool conv = !types.empty() ? types[size_t(i)] == "conv"
                                     : listed && std::find(attention.begin(), attention.end(), i) == attention.end();
    m.layer_mixers.push_back(conv ? Mixer::short_conv : Mixer::attention);
  }
}

}  // namespace

// LFM2: its mixers, then an RMSNorm and Lfm2MLP in every layer: w1, w3, w2 of intermediate_size
// (block_ff_dim where given), which block_auto_adjust_ff_dim (default true) takes to int(2/3 of
// it), then, unless block_ffn_dim_multiplier is null, times it and up to a multiple of
// block_multiple_of (default 256).
void lfm2_layer(HfJsonReader& r, ModelSpec& m) {
  read_lfm2_mixers(r, m);
  r.integer("block_ff_dim", m.intermediate_size, false);
  bool adjust = true;
  r.boolean("block_auto_adjust_ff_dim", adjust);
  if (!adjust) return;
  int64_t width = int64_t(2 * double(m.intermediate_size) / 3);
  if (r.has("block_ffn_dim_multiplier")) {
    double multiplier = 1;
    int64_t multiple = 256;
    r.number("block_ffn_dim_multiplier", multiplier);
    r.integer("block_multiple_of", multiple, false);
    if (!(multiplier > 0) || multiplier > 1e3)
      return r.fail("block_ffn_dim_multiplier", std::to_string(multiplier), "must be a positive number up to 1000");
    if (multiple < 1 || multiple > limits::kFfn)
      return r.fail("block_multiple_of", std::to_string(multiple), "must be a positive integer");
    width = int64_t(multiplier * double(width));
    width = multiple * ((width + multiple - 1) / multiple);
  }
  m.intermediate_size = width;
}

// LFM2-MoE: LFM2's mixers; the first num_dense_layers (default 2) layers an MLP of
// intermediate_size as given, the others num_experts (default 32) of moe_intermediate_size (1792),
// num_experts_per_tok (4) a token, routed by a sigmoid router with an expert-bias buffer (no
// parameters), no shared expert.
void lfm2_moe_layer(HfJsonReader& r, ModelSpec& m) {
  read_lfm2_mixers(r, m);
  m.n_routed_experts = 32, m.num_experts_per_tok = 4, m.moe_intermediate_size = 1792, m.first_k_dense_replace = 2;
  r.integer("num_experts", m.n_routed_experts, false);
  r.integer("num_experts_per_tok", m.num_experts_per_tok, false);
  r.integer("moe_intermediate_size", m.moe_intermediate_size, false);
  r.integer("num_dense_layers", m.first_k_dense_replace, false);
  if (m.n_routed_experts < 1) r.fail("num_experts", std::to_string(m.n_routed_experts), "must be at least 1");
  if (m.first_k_dense_replace < 0)
    r.fail("num_dense_layers", std::to_string(m.first_k_dense_replace), "must be 0 or more");
}

namespace {

// Mamba-1's time_step_rank: "auto" (ceil(hidden_size / 16), the config classes' default) or a number.
void read_dt_rank(HfJsonReader& r, ModelSpec& m, const char* key) {
  m.mamba1_dt_rank = (m.hidden_size + 15) / 16;
  if (r.has(key) && !(r.object[r.spelled(key)].is_string() && r.text(key) == "auto"))
    r.integer(key, m.mamba1_dt_rank, false);
  require_positive(r, key, m.mamba1_dt_rank);
}

// The Mamba-1 mixer's channels: intermediate_size where given, else expand x hidden_size. With no
// attention, the channels stand for the heads (so that --tp splits them), as for Mamba-2.
void mamba1_channels(HfJsonReader& r, ModelSpec& m, int64_t expand) {
  m.mamba1_inner = expand * m.hidden_size;
  if (r.has("intermediate_size") && r.text("model_type") != "jamba")
    r.integer("intermediate_size", m.mamba1_inner, false);
  require_positive(r, "intermediate_size", m.mamba1_inner);
}

}  // namespace

// Mamba-1 alone (MambaConfig, FalconMambaConfig; state-spaces/mamba-*-hf, tiiuae/falcon-mamba-7b):
// every layer an RMSNorm and a Mamba-1 mixer, no attention and no feed-forward. FalconMamba's
// RMSNorms on B, C and dt have no weights.
void mamba_layer(HfJsonReader& r, ModelSpec& m) {
  int64_t expand = 2;
  // MambaForCausalLM.forward and FalconMambaForCausalLM.forward: lm_head(...).float() (loss-paths-h200.jsonl)
  m.logits = ModelLogits::fp32_in_forward;
  m.ssm_state_size = 16, m.mamba_conv_kernel = 4, m.mamba_conv_bias = true, m.mamba_proj_bias = false;
  r.integer("state_size", m.ssm_state_size, false);
  r.integer("expand", expand, false);
  r.integer("conv_kernel", m.mamba_conv_kernel, false);
  r.boolean("use_bias", m.mamba_proj_bias);
  r.boolean("use_conv_bias", m.mamba_conv_bias);
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"state_size", m.ssm_state_size},
                                   {"expand", expand},
                                   {"conv_kernel", m.mamba_conv_kernel}})
    require_positive(r, key, value);
  read_dt_rank(r, m, "time_step_rank");
  mamba1_channels(r, m, expand);
  m.num_attention_heads = m.num_key_value_heads = std::max<int64_t>(m.mamba1_inner, 1);
  m.head_dim = 1;
  m.intermediate_size = m.mamba1_inner;
  m.rotary_fraction = 0;
  for (int64_t i = 0; i < std::min(m.num_hidden_layers, limits::kLayers); ++i) {
    m.layer_mixers.push_back(Mixer::mamba1);
    m.layer_has_ffn.push_back(false);
  }
}

// Jamba (JambaConfig; ai21labs/Jamba-v0.1, AI21-Jamba-1.5/1.6/1.7, Jamba-Reasoning): attention
// (no positions) where i % attn_layer_period == attn_layer_offset, a Mamba-1 mixer with RMSNorms on
// dt, B and C elsewhere; then num_experts MLP experts of intermediate_size where i %
// expert_layer_period == expert_layer_offset (and num_experts > 1), the dense MLP elsewhere.
void jamba_layer(HfJsonReader& r, ModelSpec& m) {
  int64_t expand = 2, attn_period = 8, attn_offset = 4, expert_period = 2, expert_offset = 1, experts = 16;
  m.ssm_state_size = 16, m.mamba_conv_kernel = 4, m.mamba_conv_bias = true, m.mamba_proj_bias = false;
  m.mamba1_inner_norms = true;
  r.integer("mamba_d_state", m.ssm_state_size, false);
  r.integer("mamba_expand", expand, false);
  r.integer("mamba_d_conv", m.mamba_conv_kernel, false);
  r.boolean("mamba_conv_bias", m.mamba_conv_bias);
  r.boolean("mamba_proj_bias", m.mamba_proj_bias);
  r.integer("attn_layer_period", attn_period, false);
  r.integer("attn_layer_offset", attn_offset, false);
  r.integer("expert_layer_period", expert_period, false);
  r.integer("expert_layer_offset", expert_offset, false);
  r.integer("num_experts", experts, false);
  m.num_experts_per_tok = 2;
  r.integer("num_experts_per_tok", m.num_experts_per_tok, false);
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"mamba_d_state", m.ssm_state_size},
                                   {"mamba_expand", expand},
                                   {"mamba_d_conv", m.mamba_conv_kernel},
                                   {"attn_layer_period", attn_period},
                                   {"expert_layer_period", expert_period},
                                   {"num_experts", experts}})
    require_positive(r, key, value);
  if (!r.problems.empty()) return;
  read_dt_rank(r, m, "mamba_dt_rank");
  mamba1_channels(r, m, expand);
  m.rotary_fraction = 0;
  std::vector<int64_t> dense;
  for (int64_t i = 0; i < std::min(m.num_hidden_layers, limits::kLayers); ++i) {
    m.layer_mixers.push_back(i % attn_period == attn_offset ? Mixer::attention : Mixer::mamba1);
    if (experts <= 1 || i % expert_period != expert_offset) dense.push_back(i);
  }
  if (experts <= 1) return;
  m.n_routed_experts = experts;
  m.moe_intermediate_size = m.intermediate_size;
  set_dense_layers(m, dense);
}

}  // namespace remat
