// The table of Hugging Face families: only what truly differs between them.
// Tied-embedding defaults are those of each family's transformers configuration
// class (PretrainedConfig's default True is overridden to False by Llama,
// Mistral, Qwen2/3, Phi-3, Mixtral, the MoE and DeepSeek classes; the Gemma,
// GPT-2, GPTBigCode, Falcon, StarCoder2 and Cohere classes keep True). Each
// layer reader follows the family's transformers modeling code (or, for remote
// code, the modeling file its Hub repository ships): which projections have
// biases, which norms exist and whether they are LayerNorms, the MLP's shape,
// the rotated share of each head, and whether attention and MLP run in parallel.
#include "hf_families.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "hf_json_reader.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

// LLaMA's attention_bias (q, k, v and o) and mlp_bias, both default false.
void llama_layer(HfJsonReader& r, ModelSpec& m) {
  bool bias = false;
  r.boolean("attention_bias", bias);
  m.qkv_bias = m.o_bias = bias;
  r.boolean("mlp_bias", m.mlp_bias);
}

// Qwen3: q_norm and k_norm of head_dim.
void qwen3_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  m.qk_norm = QkNorm::shared;
}

// OLMo-2/3, OLMoE: q_norm over heads x head_dim, k_norm over kv heads x head_dim.
void olmoe_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  m.qk_norm = QkNorm::per_head;
}

// OLMo-2/3 and FlexOlmo: OLMoE's, with Olmo2RMSNorm, which multiplies its weight in fp32 before the
// cast back (modular_olmo2.py; FlexOlmoRMSNorm and Olmo3RMSNorm are Olmo2RMSNorm).
void olmo2_layer(HfJsonReader& r, ModelSpec& m) {
  olmoe_layer(r, m);
  m.norm_scale_fp32 = true;
  m.post_norms_only = true;
}

// Cohere / Cohere2 (Command R, R+, A): one LayerNorm without bias feeds attention
// and MLP in parallel; use_qk_norm adds per-head LayerNorms on q and k.
void cohere_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  m.norm_kind = NormKind::layer;
  m.layer_norm_code = LayerNormCode::eager_fp32;
  m.parallel_attn_mlp = m.shared_input_norm = true;
  bool qk_norm = false;
  r.boolean("use_qk_norm", qk_norm);
  if (qk_norm) m.qk_norm = QkNorm::per_head;
}

void read_activation(HfJsonReader& r, ModelSpec& m, const char* key) {
  const std::string act = r.text(key);
  if (!act.empty()) m.hidden_act = act;
}

void read_probability(HfJsonReader& r, const char* key, double& out) {
  r.number(key, out);
  if (!(out >= 0 && out < 1)) r.fail(key, std::to_string(out), "must be a probability in [0, 1)");
}

void two_matrix_mlp(ModelSpec& m, const char* act) {
  m.mlp_kind = MlpKind::two_matrix;
  m.hidden_act = act;
}

namespace {

// Qwen2Attention: q, k and v with bias=True, o without (Qwen2-MoE's by its qkv_bias, default true).
void qwen2_layer(HfJsonReader& r, ModelSpec& m) {
  m.qkv_bias = true;
  r.boolean("qkv_bias", m.qkv_bias);
}
// Phi3Attention: qkv_proj's output sliced into q, k and v (views of it)
void phi3_layer(HfJsonReader&, ModelSpec& m) { m.fused_qkv_projection = true; }

// The layers without rotary: no_rope_layers (1: rotary, 0: none; absent or empty: every
// no_rope_layer_interval-th layer, default 4, has none), as Llama 4 and SmolLM3 read them.
void read_no_rope_layers(HfJsonReader& r, ModelSpec& m) {
  std::vector<int64_t> rope;
  r.integer_list("no_rope_layers", rope);
  int64_t interval = 4;
  r.integer("no_rope_layer_interval", interval, false);
  for (int64_t i = 0; i < std::min(m.num_hidden_layers, limits::kLayers); ++i)
    m.nope_layers.push_back(rope.empty() ? interval > 0 && (i + 1) % interval == 0
                                         : size_t(i) < rope.size() && rope[size_t(i)] == 0);
  drop_nope_layers_if_none(m);
}

// Llama 4: use_qk_norm (default true): a weightless L2 norm on q and k of the rotary layers; its
// layers without rotary rescale their attention where attn_temperature_tuning (default true). Its
// eager_attention_forward softmaxes in the scores' dtype (Llama-4-Scout cut to 2, eager SFT 2 x 4096:
// one bf16 2560 MiB probability block a layer, +11.86% while an fp32 copy was counted too,
// peak-traces-h200/random-blind54).
void llama4_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  m.eager_softmax_bf16 = true;
  m.qk_l2_norm = true;
  r.boolean("use_qk_norm", m.qk_l2_norm);
  read_no_rope_layers(r, m);
  m.nope_attention_temperature = !m.nope_layers.empty();
  r.boolean("attn_temperature_tuning", m.nope_attention_temperature);
}

// gpt-oss: attention_bias (default true) on q, k, v and o; its eager attention's softmax in bf16 with a
// sink column (self_attn.sinks, one per head); its experts' clamped GLU, with biases on gate_up_proj and
// down_proj, and a router with a bias (modeling_gpt_oss.py: GptOssExperts, GptOssTopKRouter).
// GptOssRMSNorm multiplies its weight in fp32 before the cast back.
void gpt_oss_layer(HfJsonReader& r, ModelSpec& m) {
  m.norm_scale_fp32 = true;
  m.eager_softmax_bf16 = m.eager_softmax_subtracts_max = true;
  m.clamped_glu_experts = true;
  m.attention_sinks = m.expert_bias = m.router_bias = true;
  m.eager_attention_only = true;
  bool bias = true;
  r.boolean("attention_bias", bias);
  m.qkv_bias = m.o_bias = bias;
}

// InternLM (remote code) and InternLM2: `bias` (default true) on q, k, v (wqkv) and o.
void internlm_layer(HfJsonReader& r, ModelSpec& m) {
  bool bias = true;
  r.boolean("bias", bias);
  m.qkv_bias = m.o_bias = bias;
}

// EXAONE 4: OLMo-2's post-norms with q/k norms of head_dim.
void exaone4_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  m.qk_norm = QkNorm::shared;
  m.post_norms_only = true;
}

}  // namespace

void set_rotary_fraction(HfJsonReader& r, ModelSpec& m, const char* key, double fallback) {
  m.rotary_fraction = fallback;
  r.number(key, m.rotary_fraction);
}

// A rotary_dim in dimensions of each head (GPT-J, MiniMax-M2, MiniMax-01).
void set_rotary_dim(HfJsonReader& r, ModelSpec& m) {
  int64_t rotary_dim = 0;
  r.integer("rotary_dim", rotary_dim, false);
  const int64_t hd =
      m.head_dim > 0 ? m.head_dim : (m.num_attention_heads > 0 ? m.hidden_size / m.num_attention_heads : 0);
  if (rotary_dim > 0 && hd > 0) m.rotary_fraction = double(rotary_dim) / double(hd);
}

void layer_norm_with_bias(ModelSpec& m) {
  m.norm_kind = NormKind::layer;
  m.norm_bias = true;
}

// GPT-2's names (GPTBigCode and GPT-J share them): n_embd, n_layer, n_head, n_inner.
void gpt2_spell(HfJsonReader& r, ModelSpec& m) {
  r.integer("n_embd", m.hidden_size, false);
  r.integer("n_layer", m.num_hidden_layers, false);
  r.integer("n_head", m.num_attention_heads, false);
  r.integer("n_inner", m.intermediate_size, false);
}

void four_h_mlp_by_default(ModelSpec& m) {
  if (m.intermediate_size == 0) m.intermediate_size = 4 * m.hidden_size;
}

// Phi (phi-1, phi-1.5, phi-2): GPT-J's parallel layer with q, k, v, dense biases and
// a partial_rotary_factor (0.5).
void phi_layer(HfJsonReader& r, ModelSpec& m) {
  layer_norm_with_bias(m);
  two_matrix_mlp(m, "gelu_new");
  read_activation(r, m, "hidden_act");
  m.qkv_bias = m.o_bias = m.mlp_bias = m.lm_head_bias = true;
  m.parallel_attn_mlp = m.shared_input_norm = true;
  set_rotary_fraction(r, m, "partial_rotary_factor", 0.5);
  bool qk = false;
  r.boolean("qk_layernorm", qk);
  if (qk) m.qk_norm = QkNorm::shared, m.qk_norm_bias = true;  // nn.LayerNorm(head_dim)
  read_probability(r, "resid_pdrop", m.residual_dropout);     // PhiDecoderLayer's resid_dropout on both branches
}

namespace {

// GPT-NeoX (Pythia): LayerNorms with bias, two-matrix MLP with biases, rotary_pct of
// each head rotated, attention_bias on qkv and dense, use_parallel_residual: attention
// and MLP in parallel, each with its own norm.
void gpt_neox_layer(HfJsonReader& r, ModelSpec& m) {
  layer_norm_with_bias(m);
  two_matrix_mlp(m, "gelu");
  read_activation(r, m, "hidden_act");
  m.mlp_bias = true;
  bool bias = true;
  r.boolean("attention_bias", bias);
  m.qkv_bias = m.o_bias = bias;
  set_rotary_fraction(r, m, "rotary_pct", 0.25);
  r.number("partial_rotary_factor", m.rotary_fraction);
  bool parallel = true;
  r.boolean("use_parallel_residual", parallel);
  m.parallel_attn_mlp = parallel;
  // GPTNeoXAttention: query_key_value's output viewed per head and chunked into q, k, v (views;
  // measured: reports/hf/steps-fused-h100.jsonl)
  m.fused_qkv_projection = true;
}

// GPT-2: learned positions (n_positions), LayerNorms with bias, biases everywhere.
void gpt2_layer(HfJsonReader& r, ModelSpec& m) {
  // GPT2Attention and GPTBigCodeAttention split the width into heads and raise on a remainder
  if (m.num_attention_heads > 0 && m.hidden_size % m.num_attention_heads != 0)
    r.fail("n_head", std::to_string(m.num_attention_heads),
           "must divide the width n_embd = " + std::to_string(m.hidden_size) +
               " (transformers' GPT-2 attention refuses the same)");
  four_h_mlp_by_default(m);
  layer_norm_with_bias(m);
  two_matrix_mlp(m, "gelu_new");
  read_activation(r, m, "activation_function");
  m.qkv_bias = m.o_bias = m.mlp_bias = true;
  m.position_embeddings = 1024;
  r.integer("n_positions", m.position_embeddings, false);
  m.max_sequence_tokens = m.position_embeddings, m.max_sequence_key = "n_positions";
  m.rotary_fraction = 0;
  m.residual_dropout = 0.1;  // GPT2Config and GPTBigCodeConfig: resid_pdrop, attn_pdrop
  read_probability(r, "resid_pdrop", m.residual_dropout);
  m.attention_dropout = 0.1;
  read_probability(r, "attn_pdrop", m.attention_dropout);
  m.eager_softmax_bf16 = true;  // modeling_gpt2.py's eager_attention_forward: softmax in the scores' dtype
}

// GPTBigCode (StarCoder 1, SantaCoder): GPT-2 with one key/value head (multi_query).
void gpt_bigcode_layer(HfJsonReader& r, ModelSpec& m) {
  gpt2_layer(r, m);
  m.eager_softmax_bf16 = false;  // its eager_attention_forward: softmax(dtype=torch.float32)
  m.hidden_act = "gelu_pytorch_tanh";
  read_activation(r, m, "activation_function");
  bool multi_query = true;
  r.boolean("multi_query", multi_query);
  if (multi_query) m.num_key_value_heads = 1;
  // GPTBigCodeModel registers a bool causal mask of n_positions x n_positions (the `bias` buffer)
  m.buffer_bytes = double(m.position_embeddings) * double(m.position_embeddings);
}

// GPT-J: one LayerNorm feeds attention and MLP in parallel; no attention biases; MLP
// and lm_head biases; rotary_dim of each head rotated.
void gptj_layer(HfJsonReader& r, ModelSpec& m) {
  four_h_mlp_by_default(m);
  layer_norm_with_bias(m);
  two_matrix_mlp(m, "gelu_new");
  read_activation(r, m, "activation_function");
  m.mlp_bias = m.lm_head_bias = true;
  m.parallel_attn_mlp = m.shared_input_norm = true;
  m.eager_qk_fp32 = true;
  m.eager_attention_only = true;  // GPTJForCausalLM and CodeGenForCausalLM: _supports_sdpa False (5.17)
  set_rotary_dim(r, m);
  // GPTJAttention and CodeGenAttention gather sin/cos from a table of n_positions rows (default 2048):
  // a longer sequence indexes past it (a device-side assert, blind set 17's GPT-J at 8192)
  m.max_sequence_tokens = 2048, m.max_sequence_key = "n_positions";
  r.integer("n_positions", m.max_sequence_tokens, false);
  // both blocks also return the attention probabilities, which a reentrant replay holds with their
  // zero gradient (CodeGen's one-layer reentrant GRPO step: a bf16 score-sized block beside the
  // probabilities PV saved, peak-traces-h200/unseen18)
  m.layer_returns_attention_probs = true;
}

// Falcon (and RefinedWeb): n_head / n_layer; key/value heads from
// new_decoder_architecture (num_kv_heads), multi_query (one) or none (all heads).
void falcon_spell(HfJsonReader& r, ModelSpec& m) {
  r.integer("n_head", m.num_attention_heads, false);
  r.integer("n_layer", m.num_hidden_layers, false);
  r.integer("ffn_hidden_size", m.intermediate_size, false);
  r.integer("n_head_kv", m.num_key_value_heads, false);
}

// Falcon: LayerNorms with bias, two-matrix GELU MLP, `bias` on every linear,
// parallel_attn with one norm (7B) or two (new_decoder_architecture: ln_attn, ln_mlp).
void falcon_layer(HfJsonReader& r, ModelSpec& m) {
  four_h_mlp_by_default(m);
  layer_norm_with_bias(m);
  two_matrix_mlp(m, "gelu");
  read_activation(r, m, "activation");
  bool bias = false, new_arch = false, multi_query = true, parallel = true, alibi = false;
  r.boolean("bias", bias);
  m.qkv_bias = m.o_bias = m.mlp_bias = bias;
  new_arch = r.text("model_type") == "RefinedWeb";  // Falcon-40B's original code: ln_attn and ln_mlp
  r.boolean("new_decoder_architecture", new_arch);
  r.boolean("multi_query", multi_query);
  r.boolean("parallel_attn", parallel);
  r.boolean("alibi", alibi);
  if (alibi) m.rotary_fraction = 0;
  int64_t kv = m.num_key_value_heads, norms = 2;
  r.integer("num_kv_heads", kv, false);
  if (new_arch)
    m.num_key_value_heads = kv > 0 ? kv : m.num_attention_heads;
  else
    m.num_key_value_heads = multi_query ? 1 : m.num_attention_heads;
  r.integer("num_ln_in_parallel_attn", norms, false);
  m.parallel_attn_mlp = new_arch || parallel;
  m.shared_input_norm = new_arch ? norms == 1 : parallel;
  m.sdpa_mask_materialized = true;  // FalconAttention passes the causal mask to sdpa (measured)
  // FalconAttention's eager path without alibi: softmax(scores + mask, dtype=hidden_states.dtype)
  // and FalconDecoderLayer returns those probabilities
  m.eager_softmax_bf16 = m.layer_returns_attention_probs = !alibi;
  // FalconAttention._split_heads: the old architecture's one key/value head goes to sdpa as it is
  // (the new one broadcasts it to every query head first)
  m.sdpa_broadcasts_kv_heads = !new_arch && multi_query && m.num_attention_heads > 1;
  m.kv_copied_to_query_heads = new_arch;
}

// StarCoder2: LayerNorms with bias, two-matrix MLP (c_fc, c_proj), use_bias on all.
void starcoder2_layer(HfJsonReader& r, ModelSpec& m) {
  layer_norm_with_bias(m);
  if (r.text("norm_type") == "rms_norm") m.norm_kind = NormKind::rms, m.norm_bias = false;
  two_matrix_mlp(m, "gelu_pytorch_tanh");
  read_activation(r, m, "hidden_act");
  bool bias = true;
  r.boolean("use_bias", bias);
  m.qkv_bias = m.o_bias = m.mlp_bias = bias;
  read_probability(r, "residual_dropout", m.residual_dropout);  // after o_proj and c_proj (default 0)
}

// Nemotron (Nemotron-4, Minitron): LayerNorm1P (with bias), relu^2 two-matrix MLP, partial_rotary_factor 0.5.
void nemotron_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  layer_norm_with_bias(m);
  two_matrix_mlp(m, "relu2");
  read_activation(r, m, "hidden_act");
  set_rotary_fraction(r, m, "partial_rotary_factor", 0.5);
}

// StableLM: LayerNorms with bias, partial_rotary_factor 0.25, use_qkv_bias,
// qk_layernorm (per head), use_parallel_residual (one norm, parallel).
void stablelm_layer(HfJsonReader& r, ModelSpec& m) {
  layer_norm_with_bias(m);
  set_rotary_fraction(r, m, "partial_rotary_factor", 0.25);
  r.boolean("use_qkv_bias", m.qkv_bias);
  bool qk = false, parallel = false;
  r.boolean("qk_layernorm", qk);
  if (qk) m.qk_norm = QkNorm::per_head;
  r.boolean("use_parallel_residual", parallel);
  m.parallel_attn_mlp = m.shared_input_norm = parallel;
}

// GLM (GLM-4-9B in transformers): q, k, v biases (attention_bias, default true), half of each head rotated.
void glm_layer(HfJsonReader& r, ModelSpec& m) {
  bool bias = true;
  r.boolean("attention_bias", bias);
  m.qkv_bias = bias;
  set_rotary_fraction(r, m, "partial_rotary_factor", 0.5);
}

// GLM-4 (0414): GLM's layer with post-attention and post-MLP norms (four per layer).
void glm4_layer(HfJsonReader& r, ModelSpec& m) {
  glm_layer(r, m);
  m.extra_norms_per_layer = 2;
}

// GLM-4.5/4.6 (glm4_moe): attention_bias (default false) on q, k, v; use_qk_norm.
void glm4_moe_layer(HfJsonReader& r, ModelSpec& m) {
  bool bias = false, qk = false;
  r.boolean("attention_bias", bias);
  m.qkv_bias = bias;
  set_rotary_fraction(r, m, "partial_rotary_factor", 0.5);
  r.boolean("use_qk_norm", qk);
  if (qk) m.qk_norm = QkNorm::shared;
  m.router_fp32_input = true;  // Glm4MoeTopkRouter is DeepseekV3TopkRouter's forward
}

// Orion (remote code): LLaMA's layer with nn.LayerNorm (with bias) norms.
void orion_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  layer_norm_with_bias(m);
}

// MiniMax-M2: transformers' MiniMaxM2Attention is FlexOlmo's, with q/k norms over all
// heads (q_norm of heads x head_dim, k_norm of kv heads x head_dim); rotary_dim of each head.
void minimax_m2_layer(HfJsonReader& r, ModelSpec& m) {
  m.qk_norm = QkNorm::per_head;
  set_rotary_dim(r, m);
  r.number("partial_rotary_factor", m.rotary_fraction);
}

// OLMo (1): LayerNorms without weight or bias (F.layer_norm with None, None).
void olmo_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  m.norm_kind = NormKind::layer;
  m.norm_affine = false;
  m.layer_norm_code = LayerNormCode::fp32_input;
}

// Arcee (AFM): LLaMA's attention with a two-matrix relu^2 MLP (up_proj, down_proj).
void arcee_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  two_matrix_mlp(m, "relu2");
  read_activation(r, m, "hidden_act");
}

// Apertus: a two-matrix MLP with xIELU (two scalar parameters per layer, not counted) and
// q/k norms of head_dim.
void apertus_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  two_matrix_mlp(m, "xielu");
  read_activation(r, m, "hidden_act");
  m.qk_norm = QkNorm::shared;
}

// Seed-OSS: attention_bias (default true) on q, k, v; attention_out_bias on o.
void seed_oss_layer(HfJsonReader& r, ModelSpec& m) {
  m.qkv_bias = true;
  r.boolean("attention_bias", m.qkv_bias);
  r.boolean("attention_out_bias", m.o_bias);
  r.boolean("mlp_bias", m.mlp_bias);
  m.residual_dropout = 0.1;  // SeedOssConfig's: dropped after o_proj and down_proj in training
  read_probability(r, "residual_dropout", m.residual_dropout);
}

// ERNIE 4.5: use_bias on every attention and MLP matrix; its MoE layers' Ernie4_5_MoeStatics holds
// the router's score correction bias as a parameter that does not train.
void ernie_layer(HfJsonReader& r, ModelSpec& m) {
  bool bias = false;
  r.boolean("use_bias", bias);
  m.qkv_bias = m.o_bias = m.mlp_bias = bias;
  m.router_score_bias_param = true;
}

// EXAONE 3/3.5 (remote code): LLaMA's layer under num_layers.
void exaone_spell(HfJsonReader& r, ModelSpec& m) { r.integer("num_layers", m.num_hidden_layers, false); }

// PhiMoE (Phi-3.5-MoE): LayerNorms with bias, attention_bias on q, k, v, o, lm_head_bias.
void phimoe_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  double jitter = 0;  // PhimoeConfig's default
  r.number("input_jitter_noise", jitter), m.router_input_jitter = jitter > 0;
  layer_norm_with_bias(m);
  r.boolean("lm_head_bias", m.lm_head_bias);
}

// Persimmon: LayerNorms with bias, relu^2 two-matrix MLP with biases, query_key_value and
// dense with bias, qk_layernorm of head_dim, partial_rotary_factor 0.5.
void persimmon_layer(HfJsonReader& r, ModelSpec& m) {
  layer_norm_with_bias(m);
  two_matrix_mlp(m, "relu2");
  read_activation(r, m, "hidden_act");
  m.qkv_bias = m.o_bias = m.mlp_bias = true;
  set_rotary_fraction(r, m, "partial_rotary_factor", 0.5);
  bool qk = true;  // PersimmonConfig's default
  r.boolean("qk_layernorm", qk);
  if (qk) m.qk_norm = QkNorm::shared, m.qk_norm_bias = true;  // nn.LayerNorm(head_dim)
}

// OPT: ffn_dim; learned positions offset by 2; enable_bias on every linear; relu.
void opt_spell(HfJsonReader& r, ModelSpec& m) { r.integer("ffn_dim", m.intermediate_size, false); }

void opt_layer(HfJsonReader& r, ModelSpec& m) {
  layer_norm_with_bias(m);
  r.boolean("layer_norm_elementwise_affine", m.norm_affine);
  two_matrix_mlp(m, "relu");
  read_activation(r, m, "activation_function");
  bool bias = true;
  r.boolean("enable_bias", bias);
  m.qkv_bias = m.o_bias = m.mlp_bias = bias;
  m.position_embeddings = 2048;
  r.integer("max_position_embeddings", m.position_embeddings, false);
  m.max_sequence_tokens = m.position_embeddings, m.max_sequence_key = "max_position_embeddings";
  m.position_embeddings += 2;  // OPTLearnedPositionalEmbedding's offset
  m.rotary_fraction = 0;
  m.residual_dropout = 0.1;  // OPTConfig's dropout: after out_proj and fc2 in training
  read_probability(r, "dropout", m.residual_dropout);
  bool norm_first = true;  // do_layer_norm_before false (OPT-350m): LayerNorms after the residual adds
  r.boolean("do_layer_norm_before", norm_first);
  m.post_layer_norm = !norm_first;
  int64_t projected = 0;
  r.integer("word_embed_proj_dim", projected, false);
  if (projected > 0 && projected != m.hidden_size)
    r.fail("word_embed_proj_dim", std::to_string(projected),
           "is not a model remat can build: OPT's embedding projections (project_in, project_out) to a width "
           "other than hidden_size; remat has no block for them");
}

// BLOOM: n_layer, n_head (n_embed); ALiBi, a LayerNorm on the embeddings, biases everywhere.
void bloom_spell(HfJsonReader& r, ModelSpec& m) {
  r.integer("n_embed", m.hidden_size, false);
  r.integer("n_layer", m.num_hidden_layers, false);
  r.integer("n_head", m.num_attention_heads, false);
}

void bloom_layer(HfJsonReader&, ModelSpec& m) {
  four_h_mlp_by_default(m);
  layer_norm_with_bias(m);
  two_matrix_mlp(m, "bloom_gelu");  // GELU's tanh form in its own autograd function (saves x alone)
  m.qkv_bias = m.o_bias = m.mlp_bias = true;
  m.embedding_norm = true;
  m.rotary_fraction = 0;
  m.eager_attention_only = true;  // BloomForCausalLM: _supports_sdpa False (transformers 5.17)
  // BloomBlock returns (output, attention_probs): a reentrant checkpoint holds them and their zero
  // gradient (peak-traces-h200/unseen10/bloom-176b-...: two bf16 score-sized tensors in the replay)
  m.layer_returns_attention_probs = true;
}

// DBRX: d_model, n_heads, n_layers; LayerNorms without bias, no linear biases.
void dbrx_spell(HfJsonReader& r, ModelSpec& m) {
  r.integer("d_model", m.hidden_size, false);
  r.integer("n_heads", m.num_attention_heads, false);
  r.integer("n_layers", m.num_hidden_layers, false);
}

void dbrx_layer(HfJsonReader&, ModelSpec& m) {
  m.norm_kind = NormKind::layer;
  m.fused_qkv_projection = true;                          // DbrxAttention splits Wqkv's output into q, k and v views
  if (m.intermediate_size == 0) m.intermediate_size = 1;  // the experts' width comes with ffn_config
}

// Hunyuan (dense v1): q/k norms of head_dim (query_layernorm, key_layernorm), attention_bias, mlp_bias.
void hunyuan_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  m.qk_norm = QkNorm::shared;
  read_hunyuan_remote_keys(r, m);
}

// SmolLM3: LLaMA's layer, every fourth without rotary (SmolLM3Attention's use_rope).
void smollm3_layer(HfJsonReader& r, ModelSpec& m) {
  llama_layer(r, m);
  read_no_rope_layers(r, m);
}

// GLM-4.7-Flash: Glm4MoeLiteConfig builds its first layer dense unless mlp_layer_types says otherwise.
// dots.llm1: Qwen3's attention, and Dots1TopkRouter is DeepseekV3TopkRouter (fp32 input and weights)
void dots1_layer(HfJsonReader& r, ModelSpec& m) {
  qwen3_layer(r, m);
  m.router_fp32_input = true;
}

// Glm4MoeLiteTopkRouter is Glm4MoeTopkRouter, DeepseekV3TopkRouter's forward (fp32 input and weights)
void glm4_moe_lite_layer(HfJsonReader&, ModelSpec& m) {
  m.first_k_dense_replace = 1;
  m.router_fp32_input = true;
}

constexpr HfDefaults kLlamaDefaults{32000, 4096, 11008, 32, 32};
constexpr HfDefaults kQwen3Defaults{151936, 4096, 22016, 32, 32, 32, 128};
constexpr HfDefaults kOlmoHybridDefaults{100352, 3840, 11008, 32, 30};
// rms_norm_eps 1e-5 in their config classes (MixtralConfig, Phi3Config, OlmoeConfig, GptOssConfig,
// Llama4TextConfig) where LlamaConfig has 1e-6
constexpr HfDefaults kEps1e5{.rms_norm_eps = 1e-5};
// transformers 5.17's MixtralConfig (Mixtral-8x7B's shape)
constexpr HfDefaults kMixtralDefaults{32000, 4096, 14336, 32, 32, 8, 0, 1e-5, 8, 2};
constexpr HfDefaults kTelechatDefaults{160256, 4096, 12288, 30, 32, 0, 0, 1e-5};
constexpr HfDefaults kMllamaTextDefaults{128256, 4096, 14336, 40, 32, 8, 0, 1e-5};  // MllamaTextConfig
constexpr HfDefaults kGemmaDefaults{256000, 3072, 24576, 28, 16, 16, 256};
constexpr HfDefaults kGemma2Defaults{256000, 2304, 9216, 26, 8, 4, 256};
constexpr HfDefaults kGemma3Defaults{262208, 2304, 9216, 26, 8, 4, 256};
constexpr HfDefaults kMistralDefaults{32000, 4096, 14336, 32, 32};
constexpr HfDefaults kQwen2Defaults{151936, 4096, 22016, 32, 32};
constexpr HfDefaults kGpt2Defaults{50257, 768, 0, 12, 12};
constexpr HfDefaults kGptNeoxDefaults{50432, 6144, 24576, 44, 64};
constexpr HfDefaults kGptjDefaults{50400, 4096, 0, 28, 16};
constexpr HfDefaults kFalconDefaults{65024, 4544, 0, 32, 71};
constexpr HfDefaults kPhiDefaults{51200, 2048, 8192, 24, 32};
// transformers 5.17's GPTNeoConfig, OPTConfig and BloomConfig (BloomConfig's hidden_size 64 and two
// layers are its test-sized defaults)
constexpr HfDefaults kGptNeoDefaults{50257, 2048, 0, 24, 16};
constexpr HfDefaults kOptDefaults{50272, 768, 3072, 12, 12};
constexpr HfDefaults kBloomDefaults{250880, 64, 0, 2, 8};
// transformers 5.17's DeepseekV3Config (DeepSeek-V3's shape): SimAI's copy spells the expert counts
// num_routed_experts and num_shared_experts, which transformers does not read
constexpr HfDefaults kDeepseekV3Defaults{129280, 7168, 18432, 61, 128, 128, 0, 0, 256, 8, 2048, 1, 3};
constexpr HfDefaults kPersimmonDefaults{262144, 4096, 16384, 36, 64, 0, 0, 1e-5};  // PersimmonConfig
constexpr HfDefaults kPhiMsftDefaults{50304, 1024, 0, 20, 16};  // the remote PhiConfig's (n_inner None: 4 n_embd)

// BambaConfig, GraniteMoeHybridConfig and Mamba2Config (no attention, no MLP: their dimensions
// come from its own keys)
constexpr HfDefaults kBambaDefaults{128000, 4096, 14336, 32, 32, 8, 0, 1e-5};
constexpr HfDefaults kGraniteMoeHybridDefaults{32000, 4096, 11008, 32, 32};
constexpr HfDefaults kMamba2Defaults{32768, 4096, 0, 64, 0, 0, 0, 1e-5};
// MambaConfig and FalconMambaConfig (no attention, no MLP), JambaConfig, Lfm2Config, Lfm2MoeConfig
constexpr HfDefaults kMambaDefaults{50280, 768, 0, 32, 0, 0, 0, 1e-5};
constexpr HfDefaults kJambaDefaults{65536, 4096, 14336, 32, 32, 8};
constexpr HfDefaults kLfm2Defaults{65536, 2560, 12288, 32, 32, 8, 0, 1e-5};
constexpr HfDefaults kLfm2MoeDefaults{65536, 2048, 7168, 32, 32, 8, 0, 1e-5};

constexpr HfExperts kDense = HfExperts::none;

// The config classes' defaults of the families in hf_families_more.cpp
constexpr HfDefaults kHeliumDefaults{48000, 2560, 7040, 24, 20, 20, 128, 1e-8};
constexpr HfDefaults kCwmDefaults{128256, 6144, 21504, 64, 48, 8, 128, 1e-5};
constexpr HfDefaults kJais2Defaults{150272, 3328, 26624, 32, 26};
constexpr HfDefaults kGraniteSwaDefaults{100352, 2560, 8192, 24, 20, 4, 0, 1e-5};
constexpr HfDefaults kNanochatDefaults{50304, 768, 8192, 12, 6};
constexpr HfDefaults kMellumDefaults{98304, 2304, 7168, 28, 32, 4, 128};
constexpr HfDefaults kMiniCpm3Defaults{73448, 2560, 6400, 62, 40, 40, 0, 1e-5};
constexpr HfDefaults kYoutuDefaults{128256, 2048, 6144, 32, 16, 16};
constexpr HfDefaults kMistral4Defaults{131072, 4096, 12288, 36, 32, 32};
constexpr HfDefaults kSolarOpenDefaults{196608, 4096, 0, 48, 64, 8, 128, 1e-5};
constexpr HfDefaults kExaoneMoeDefaults{102400, 4096, 16384, 32, 32, 32, 0, 1e-5};
constexpr HfDefaults kFlexOlmoDefaults{100352, 4096, 11008, 32, 32};
constexpr HfDefaults kAfmoeDefaults{200192, 2048, 6144, 32, 16, 0, 128, 1e-5};
constexpr HfDefaults kHyV3Defaults{120832, 4096, 13312, 80, 64, 8, 128, 1e-5};
constexpr HfDefaults kHunyuanMoeDefaults{290943, 4096, 11008, 32, 32, 0, 0, 1e-5};
constexpr HfDefaults kGemma4Defaults{262144, 2304, 9216, 30, 8, 4, 256, 1e-6};
constexpr HfDefaults kCohere2MoeDefaults{256000, 8192, 22528, 40, 64, 0, 128};
constexpr HfDefaults kMiMoV2FlashDefaults{152576, 4096, 16384, 48, 64, 4, 192, 1e-5};
constexpr HfDefaults kLagunaDefaults{100352, 2048, 8192, 40, 48, 8, 128};
constexpr HfDefaults kKimiLinearDefaults{163840, 2304, 9216, 27, 32, 32, 0, 1e-5};
constexpr HfDefaults kDeepseekV4Defaults{129280, 4096, 2048, 43, 64, 1, 512, 1e-6};
constexpr HfDefaults kMiniMaxDefaults{32000, 4096, 14336, 32, 32, 8, 0, 1e-5};
constexpr HfDefaults kAriaTextDefaults{32000, 4096, 4096, 32, 32};
constexpr HfDefaults kEmu3TextDefaults{184622, 4096, 14336, 32, 32, 8, 0, 1e-5};
constexpr HfDefaults kStep3p5Defaults{128815, 4096, 11264, 45, 64, 8, 128, 1e-5};  // Step3p7TextConfig
// XGLMConfig, CTRLConfig, OpenAIGPTConfig, BioGptConfig
constexpr HfDefaults kXglmDefaults{256008, 1024, 4096, 24, 16};
constexpr HfDefaults kCtrlDefaults{246534, 1280, 8192, 48, 16};
constexpr HfDefaults kOpenAiGptDefaults{40478, 768, 0, 12, 12};
constexpr HfDefaults kBioGptDefaults{42384, 1024, 4096, 24, 16};
constexpr HfDefaults kBitNetDefaults{128256, 2560, 6912, 30, 20, 5, 0, 1e-5};

const std::array kFamilies = {
    HfFamily{"llama", false, kDense, false, nullptr, llama_layer, kLlamaDefaults},
    HfFamily{"mistral", false, kDense, false, nullptr, nullptr, kMistralDefaults},
    HfFamily{"ministral", false, kDense, false},
    HfFamily{"ministral3", false, kDense, false},
    HfFamily{"qwen2", false, kDense, false, nullptr, qwen2_layer, kQwen2Defaults},
    HfFamily{"qwen3", false, kDense, false, nullptr, qwen3_layer, kQwen3Defaults},
    HfFamily{"qwen3_vl_text", false, kDense, false, nullptr, qwen3_layer},
    HfFamily{"qwen2_vl", false, kDense, true, nullptr, qwen2_layer},
    HfFamily{"qwen2_5_vl", false, kDense, true, nullptr, qwen2_layer},
    HfFamily{"mimo", false, kDense, false, nullptr, qwen2_layer, {}, true},
    HfFamily{"phi3", false, kDense, false, nullptr, phi3_layer, kEps1e5},
    HfFamily{"olmo2", false, kDense, false, nullptr, olmo2_layer},
    HfFamily{"olmo3", false, kDense, false, nullptr, olmo2_layer},
    HfFamily{"exaone4", false, kDense, false, nullptr, exaone4_layer},
    HfFamily{"granite", false, kDense, false, nullptr, llama_layer},
    HfFamily{"internlm", false, kDense, false, nullptr, internlm_layer},
    HfFamily{"internlm2", false, kDense, false, nullptr, internlm_layer},
    HfFamily{"baichuan", false, kDense, false},
    HfFamily{"orion", false, kDense, false, nullptr, orion_layer},
    HfFamily{"minicpm", true, HfExperts::optional_num_experts, false, nullptr, llama_layer},
    HfFamily{"gemma", true, kDense, false, nullptr, gemma_layer, kGemmaDefaults},
    HfFamily{"gemma2", true, kDense, false, nullptr, gemma2_layer, kGemma2Defaults},
    HfFamily{"gemma3_text", true, kDense, false, nullptr, gemma3_layer, kGemma3Defaults},
    HfFamily{"muse_glimmer_text", false, kDense, false, nullptr, muse_glimmer_text_layer},
    HfFamily{"gemma4_text", true, HfExperts::own, false, nullptr, gemma4_layer, kGemma4Defaults},
    HfFamily{"gemma4_unified_text", true, HfExperts::own, false, nullptr, gemma4_unified_layer, kGemma4Defaults},
    HfFamily{"cohere", true, kDense, false, nullptr, cohere_layer},
    HfFamily{"cohere2", true, kDense, false, nullptr, cohere_layer},
    HfFamily{"glm", false, kDense, false, nullptr, glm_layer},
    HfFamily{"glm4", false, kDense, false, nullptr, glm4_layer},
    HfFamily{"chatglm", false, kDense, false, chatglm_spell, chatglm_layer},
    HfFamily{"stablelm", false, kDense, false, nullptr, stablelm_layer},
    HfFamily{"nemotron", false, kDense, false, nullptr, nemotron_layer},
    HfFamily{"nemotron-nas", false, kDense, false, nemotron_nas_spell, llama_layer, {}, false, HfHybrid::block_configs},
    HfFamily{"deci", false, kDense, false, deci_spell, llama_layer},
    HfFamily{"telechat", true, kDense, false, telechat_spell, telechat_layer, kTelechatDefaults},
    HfFamily{"mllama_text_model", false, kDense, false, nullptr, mllama_text_layer, kMllamaTextDefaults, false,
             HfHybrid::cross_attention},
    HfFamily{"gpt_neox", false, kDense, false, nullptr, gpt_neox_layer, kGptNeoxDefaults},
    HfFamily{"gpt2", true, kDense, false, gpt2_spell, gpt2_layer, kGpt2Defaults},
    HfFamily{"gpt_bigcode", true, kDense, false, gpt2_spell, gpt_bigcode_layer, kGpt2Defaults},
    HfFamily{"gptj", false, kDense, false, gpt2_spell, gptj_layer, kGptjDefaults},
    HfFamily{"falcon", true, kDense, false, falcon_spell, falcon_layer, kFalconDefaults},
    HfFamily{"phi", false, kDense, false, nullptr, phi_layer, kPhiDefaults},
    HfFamily{"phi-msft", false, kDense, false, phi_msft_spell, phi_msft_layer, kPhiMsftDefaults},
    HfFamily{"mixformer-sequential", false, kDense, false, phi_msft_spell, mixformer_layer, kPhiMsftDefaults},
    HfFamily{"starcoder2", true, kDense, false, nullptr, starcoder2_layer},
    HfFamily{"mixtral", false, HfExperts::mixtral, false, nullptr, nullptr, kMixtralDefaults},
    HfFamily{"gpt_oss", false, HfExperts::mixtral, false, nullptr, gpt_oss_layer, kEps1e5},
    HfFamily{"minimax_m2", false, HfExperts::mixtral, false, nullptr, minimax_m2_layer},
    HfFamily{"olmoe", false, HfExperts::olmoe, false, nullptr, olmoe_layer, kEps1e5},
    HfFamily{"qwen2_moe", false, HfExperts::qwen, false, nullptr, qwen2_layer},
    HfFamily{"qwen3_moe", false, HfExperts::qwen, false, nullptr, qwen3_layer},
    HfFamily{"qwen3_vl_moe_text", false, HfExperts::qwen, false, nullptr, qwen3_layer},
    HfFamily{"deepseek", false, HfExperts::deepseek, false},
    HfFamily{"deepseek_v2", false, HfExperts::deepseek, false, nullptr, fp32_router_layer, {}, true},
    HfFamily{"deepseek_v3", false, HfExperts::deepseek, false, nullptr, fp32_router_layer, kDeepseekV3Defaults, true},
    HfFamily{"glm4_moe", false, HfExperts::deepseek, false, nullptr, glm4_moe_layer, {}, true},
    HfFamily{"deepseek_v32", false, HfExperts::deepseek, false, nullptr, deepseek_v32_layer, {}, true},
    HfFamily{"deepseek_v4", false, HfExperts::own, false, nullptr, deepseek_v4_layer, kDeepseekV4Defaults, false,
             HfHybrid::compressed_attention},
    HfFamily{"glm_moe_dsa", false, HfExperts::deepseek, false, nullptr, glm_moe_dsa_layer, {}, true},
    HfFamily{"llama4_text", false, HfExperts::llama4, false, nullptr, llama4_layer, kEps1e5},
    HfFamily{"olmo", false, kDense, false, nullptr, olmo_layer},
    HfFamily{"smollm3", true, kDense, false, nullptr, smollm3_layer},
    HfFamily{"arcee", false, kDense, false, nullptr, arcee_layer},
    HfFamily{"apertus", false, kDense, false, nullptr, apertus_layer},
    HfFamily{"seed_oss", false, kDense, false, nullptr, seed_oss_layer},
    HfFamily{"ernie4_5", true, kDense, false, nullptr, ernie_layer},
    HfFamily{"exaone", false, kDense, false, exaone_spell, nullptr},
    HfFamily{"xverse", false, kDense, false, nullptr, llama_layer},
    HfFamily{"qwen", false, kDense, false, qwen1_spell, qwen1_layer},
    HfFamily{"persimmon", false, kDense, false, nullptr, persimmon_layer, kPersimmonDefaults},
    HfFamily{"codegen", false, kDense, false, gpt2_spell, gptj_layer},
    HfFamily{"gpt_neo", true, kDense, false, gpt_neo_spell, gpt_neo_layer, kGptNeoDefaults},
    HfFamily{"opt", true, kDense, false, opt_spell, opt_layer, kOptDefaults},
    HfFamily{"bloom", true, kDense, false, bloom_spell, bloom_layer, kBloomDefaults},
    HfFamily{"mpt", true, kDense, false, mpt_spell, mpt_layer},
    HfFamily{"granitemoe", false, HfExperts::mixtral, false, nullptr, llama_layer},
    HfFamily{"phimoe", false, HfExperts::mixtral, false, nullptr, phimoe_layer},
    HfFamily{"dots1", false, HfExperts::deepseek, false, nullptr, dots1_layer},
    HfFamily{"glm4_moe_lite", false, HfExperts::deepseek, false, nullptr, glm4_moe_lite_layer, {}, true},
    HfFamily{"ernie4_5_moe", true, HfExperts::ernie, false, nullptr, ernie_layer},
    HfFamily{"hunyuan_v1_dense", false, kDense, false, nullptr, hunyuan_layer},
    HfFamily{"dbrx", false, HfExperts::dbrx, false, dbrx_spell, dbrx_layer},
    // hf_families_more.cpp; vaultgemma: Gemma 2 without the post-attention and post-MLP norms
    HfFamily{"helium", false, kDense, false, nullptr, helium_layer, kHeliumDefaults},
    HfFamily{"vaultgemma", true, kDense, false, nullptr, vaultgemma_layer, kGemma2Defaults},
    HfFamily{"cwm", false, kDense, false, nullptr, cwm_layer, kCwmDefaults},
    HfFamily{"jais2", false, kDense, false, nullptr, jais2_layer, kJais2Defaults},
    HfFamily{"hyperclovax", false, kDense, false, nullptr, hyperclovax_layer, kLlamaDefaults},
    HfFamily{"granite_swa", true, kDense, false, nullptr, granite_swa_layer, kGraniteSwaDefaults},
    HfFamily{"granitemoeshared", false, HfExperts::mixtral, false, nullptr, granitemoeshared_layer, kLlamaDefaults},
    HfFamily{"granitemoe_swa", false, HfExperts::mixtral, false, nullptr, granitemoe_swa_layer, kLlamaDefaults},
    HfFamily{"nanochat", false, kDense, false, nullptr, nanochat_layer, kNanochatDefaults},
    // Qwen3-MoE's attention and experts, dense layers by mlp_layer_types
    HfFamily{"mellum", false, HfExperts::qwen, false, nullptr, qwen3_layer, kMellumDefaults},
    // DeepSeek-V2's latent attention with LLaMA's dense MLP
    HfFamily{"minicpm3", true, kDense, false, minicpm3_spell, mla_layer, kMiniCpm3Defaults},
    // DeepSeek-V3's latent attention with a dense MLP
    HfFamily{"youtu", true, kDense, false, nullptr, mla_layer, kYoutuDefaults},
    // DeepSeek-V3's layer (latent attention, its MoE after first_k_dense_replace)
    HfFamily{"mistral4", false, HfExperts::deepseek, false, nullptr, mla_layer, kMistral4Defaults},
    HfFamily{"solar_open", false, HfExperts::own, false, nullptr, solar_open_layer, kSolarOpenDefaults},
    HfFamily{"exaone_moe", false, HfExperts::deepseek, false, nullptr, exaone_moe_layer, kExaoneMoeDefaults},
    // OLMo-2's layer (post-norms, q/k norms over all heads) with OLMoE's experts
    HfFamily{"flex_olmo", false, HfExperts::olmoe, false, nullptr, olmo2_layer, kFlexOlmoDefaults},
    HfFamily{"afmoe", false, HfExperts::deepseek, false, nullptr, afmoe_layer, kAfmoeDefaults},
    HfFamily{"hy_v3", false, HfExperts::deepseek, false, nullptr, hy_v3_layer, kHyV3Defaults},
    HfFamily{"hunyuan_v1_moe", false, HfExperts::own, false, nullptr, hunyuan_moe_layer, kHunyuanMoeDefaults},
    HfFamily{"cohere2_moe", true, HfExperts::own, false, nullptr, cohere2_moe_layer, kCohere2MoeDefaults},
    HfFamily{"mimo_v2_flash", false, HfExperts::own, false, nullptr, mimo_v2_flash_layer, kMiMoV2FlashDefaults},
    HfFamily{"laguna", false, HfExperts::own, false, nullptr, laguna_layer, kLagunaDefaults},
    HfFamily{"bailing_moe", false, HfExperts::own, false, nullptr, bailing_moe_layer},
    HfFamily{"xglm", true, kDense, false, xglm_spell, xglm_layer, kXglmDefaults},
    HfFamily{"ctrl", true, kDense, false, ctrl_spell, ctrl_layer, kCtrlDefaults},
    HfFamily{"openai-gpt", true, kDense, false, openai_gpt_spell, openai_gpt_layer, kOpenAiGptDefaults},
    HfFamily{"biogpt", true, kDense, false, nullptr, biogpt_layer, kBioGptDefaults},
    HfFamily{"bitnet", false, kDense, false, nullptr, bitnet_layer, kBitNetDefaults},
    HfFamily{"aria_text", false, HfExperts::own, false, nullptr, aria_text_layer, kAriaTextDefaults},
    HfFamily{"emu3_text_model", false, kDense, false, nullptr, emu3_text_layer, kEmu3TextDefaults},
    HfFamily{"step3p5", false, HfExperts::own, false, nullptr, step3p5_layer, kStep3p5Defaults},
    HfFamily{
        "qwen3_next", false, HfExperts::qwen, false, nullptr, qwen3_next_layer, {}, false, HfHybrid::gated_deltanet},
    HfFamily{"qwen3_5_text", false, kDense, false, nullptr, qwen3_next_layer, {}, false, HfHybrid::gated_deltanet},
    HfFamily{"olmo_hybrid", false, kDense, false, nullptr, olmo_hybrid_layer, kOlmoHybridDefaults, false,
             HfHybrid::gated_deltanet},
    HfFamily{"qwen3_5_moe_text",
             false,
             HfExperts::qwen,
             false,
             nullptr,
             qwen3_next_layer,
             {},
             false,
             HfHybrid::gated_deltanet},
    HfFamily{"nemotron_h",
             false,
             HfExperts::nemotron_h,
             false,
             nullptr,
             nemotron_h_layer,
             {},
             false,
             HfHybrid::mamba2_pattern},
    HfFamily{"bamba", false, kDense, false, nullptr, bamba_layer, kBambaDefaults, false, HfHybrid::mamba2_pattern},
    HfFamily{"granitemoehybrid", false, HfExperts::optional_num_experts, false, nullptr, granitemoehybrid_layer,
             kGraniteMoeHybridDefaults, false, HfHybrid::mamba2_pattern},
    HfFamily{"mamba2", false, kDense, false, nullptr, mamba2_layer, kMamba2Defaults, false, HfHybrid::mamba2_pattern},
    HfFamily{"falcon_h1", false, kDense, false, nullptr, falcon_h1_layer, kBambaDefaults, false,
             HfHybrid::mamba2_pattern},  // FalconH1Config's defaults are BambaConfig's
    HfFamily{"lfm2", true, kDense, false, nullptr, lfm2_layer, kLfm2Defaults, false, HfHybrid::short_conv},
    HfFamily{"minimax", false, HfExperts::mixtral, false, nullptr, minimax_layer, kMiniMaxDefaults, false,
             HfHybrid::lightning},
    HfFamily{"kimi_linear", false, HfExperts::own, false, nullptr, kimi_linear_layer, kKimiLinearDefaults, false,
             HfHybrid::gated_deltanet},
    HfFamily{"mamba", true, kDense, false, nullptr, mamba_layer, kMambaDefaults, false, HfHybrid::mamba1},
    HfFamily{"falcon_mamba", true, kDense, false, nullptr, mamba_layer, kMambaDefaults, false, HfHybrid::mamba1},
    HfFamily{"jamba", false, HfExperts::own, false, nullptr, jamba_layer, kJambaDefaults, false, HfHybrid::mamba1},
    HfFamily{"lfm2_moe", true, HfExperts::own, false, nullptr, lfm2_moe_layer, kLfm2MoeDefaults, false,
             HfHybrid::short_conv},
};

}  // namespace

const HfFamily* find_hf_family(const std::string& model_type) {
  for (const auto& f : kFamilies)
    if (model_type == f.model_type) return &f;
  return nullptr;
}

}  // namespace remat
