// Layer readers of the first generation of decoder-only models in transformers, each read from its
// modeling code (transformers 5.17): XGLM, CTRL, OpenAI GPT, BioGPT and GPT-Neo. LayerNorms with bias, biases
// on every projection, a two-matrix MLP and a head tied to the embeddings; their positions fixed
// sinusoids (no parameters) or a learned table.
#include <nlohmann/json.hpp>

#include <string>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"
#include "remat/spec/model_spec.hpp"

namespace remat {

namespace {

// Pre-LN layers of LayerNorms with bias, biases on q, k, v, o and both MLP matrices.
void biased_layer_norm_layer(ModelSpec& m, const char* act) {
  m.norm_kind = NormKind::layer;
  m.norm_bias = true;
  two_matrix_mlp(m, act);
  m.qkv_bias = m.o_bias = m.mlp_bias = true;
  m.rotary_fraction = 0;
}

// Dropout on each block's output before the residual add and on the attention probabilities (the
// training mode transformers runs), under the config's keys with its class's defaults.
void read_dropouts(HfJsonReader& r, ModelSpec& m, const char* residual_key, double residual, const char* attention_key,
                   double attention) {
  m.residual_dropout = residual;
  read_probability(r, residual_key, m.residual_dropout);
  m.attention_dropout = attention;
  if (attention_key) read_probability(r, attention_key, m.attention_dropout);
}

}  // namespace

// XGLM: d_model, num_layers, attention_heads, ffn_dim.
void xglm_spell(HfJsonReader& r, ModelSpec& m) {
  r.integer("d_model", m.hidden_size, false);
  r.integer("num_layers", m.num_hidden_layers, false);
  r.integer("attention_heads", m.num_attention_heads, false);
  r.integer("ffn_dim", m.intermediate_size, false);
}

// XGLM (modeling_xglm.py): sinusoidal positions, scaled embeddings, pre-LN, fc1 / fc2 with
// activation_function (gelu), dropout on both blocks' outputs, a final LayerNorm.
void xglm_layer(HfJsonReader& r, ModelSpec& m) {
  biased_layer_norm_layer(m, "gelu");
  read_activation(r, m, "activation_function");
  m.sinusoidal_positions = true;
  m.eager_attention_only = true;  // XGLMPreTrainedModel has no sdpa path
  read_dropouts(r, m, "dropout", 0.1, "attention_dropout", 0.1);
}

// CTRL: n_embd, n_layer, n_head, dff.
void ctrl_spell(HfJsonReader& r, ModelSpec& m) {
  r.integer("n_embd", m.hidden_size, false);
  r.integer("n_layer", m.num_hidden_layers, false);
  r.integer("n_head", m.num_attention_heads, false);
  r.integer("dff", m.intermediate_size, false);
}

// CTRL (modeling_ctrl.py): sinusoidal positions, pre-LN, a ReLU MLP, resid_pdrop on both blocks'
// outputs, a final LayerNorm, and a bias on the tied head; its own attention function only (no sdpa
// path), the softmax in the activations' dtype; no gradient checkpointing.
void ctrl_layer(HfJsonReader& r, ModelSpec& m) {
  biased_layer_norm_layer(m, "relu");
  m.sinusoidal_positions = true;
  m.lm_head_bias = true;
  m.eager_attention_only = m.eager_softmax_bf16 = true;
  m.gradient_checkpointing_unsupported = true;  // CTRLPreTrainedModel
  read_dropouts(r, m, "resid_pdrop", 0.1, nullptr, 0);
}

// OpenAI GPT: n_embd, n_layer, n_head; the MLP 4 x n_embd wide.
void openai_gpt_spell(HfJsonReader& r, ModelSpec& m) {
  r.integer("n_embd", m.hidden_size, false);
  r.integer("n_layer", m.num_hidden_layers, false);
  r.integer("n_head", m.num_attention_heads, false);
}

// OpenAI GPT (modeling_openai.py): learned positions (n_positions), Conv1D projections with
// biases, afn ("gelu" is its ACT_FNS's gelu_new), its LayerNorms after each residual add with no
// final one (post-LN); eager attention only, its softmax in bf16; no gradient checkpointing.
void openai_gpt_layer(HfJsonReader& r, ModelSpec& m) {
  if (m.intermediate_size == 0) m.intermediate_size = 4 * m.hidden_size;
  biased_layer_norm_layer(m, "gelu_new");
  if (r.text("afn") == "relu" || r.text("afn") == "silu" || r.text("afn") == "swish") read_activation(r, m, "afn");
  m.eager_attention_only = m.eager_softmax_bf16 = m.gradient_checkpointing_unsupported = true;
  m.position_embeddings = 512;
  r.integer("n_positions", m.position_embeddings, false);
  m.max_sequence_tokens = m.position_embeddings, m.max_sequence_key = "n_positions";
  m.post_layer_norm = true;
  read_dropouts(r, m, "resid_pdrop", 0.1, "attn_pdrop", 0.1);
  m.notes.push_back(
      "its LayerNorms follow each residual add (post-LN) and it has no final one: costed as a pre-LN "
      "layer's norms, the same parameters less the final norm's and one hidden-size activation more per "
      "block");
}

// BioGPT (modeling_biogpt.py): learned positions (max_position_embeddings + 2, the table's offset),
// scaled embeddings, pre-LN, fc1 / fc2 with hidden_act (gelu), hidden_dropout_prob on both blocks'
// outputs, a final LayerNorm, the head (output_projection) tied.
void biogpt_layer(HfJsonReader& r, ModelSpec& m) {
  if (m.intermediate_size == 0) m.intermediate_size = 4096;
  biased_layer_norm_layer(m, "gelu");
  read_activation(r, m, "hidden_act");
  m.position_embeddings = 1024;
  r.integer("max_position_embeddings", m.position_embeddings, false);
  m.max_sequence_tokens = m.position_embeddings, m.max_sequence_key = "max_position_embeddings";
  m.position_embeddings += 2;   // BioGptLearnedPositionalEmbedding's offset
  m.eager_softmax_bf16 = true;  // its eager_attention_forward: softmax in the scores' dtype
  read_dropouts(r, m, "hidden_dropout_prob", 0.1, "attention_probs_dropout_prob", 0.1);
}

// GPT-Neo: num_layers, num_heads; learned positions, out_proj and MLP biases, LayerNorms with bias.
void gpt_neo_spell(HfJsonReader& r, ModelSpec& m) {
  r.integer("num_layers", m.num_hidden_layers, false);
  r.integer("num_heads", m.num_attention_heads, false);
}

// GPTNeoConfig expands attention_types ([[["global", "local"], 12]] by default: 24 layers) into one
// type per layer and refuses a count other than num_layers; its local layers mask the full square
// (costed as global attention, which they compute).
namespace {

void check_gpt_neo_attention_types(HfJsonReader& r, const ModelSpec& m) {
  int64_t layers = 24;
  if (r.has("attention_types")) {
    layers = 0;
    const auto& types = r.object["attention_types"];
    for (const auto& entry : types.is_array() ? types : nlohmann::json::array())
      if (entry.is_array() && entry.size() == 2 && entry[0].is_array() && entry[1].is_number_integer())
        layers += int64_t(entry[0].size()) * entry[1].get<int64_t>();
  }
  if (layers != m.num_hidden_layers)
    r.fail("attention_types", r.has("attention_types") ? r.object["attention_types"].dump() : "",
           "gives " + std::to_string(layers) + " layers for num_layers " + std::to_string(m.num_hidden_layers) +
               " (transformers' GPTNeoConfig refuses the same)");
}

}  // namespace

void gpt_neo_layer(HfJsonReader& r, ModelSpec& m) {
  check_gpt_neo_attention_types(r, m);
  four_h_mlp_by_default(m);
  layer_norm_with_bias(m);
  two_matrix_mlp(m, "gelu_new");
  read_activation(r, m, "activation_function");
  m.o_bias = m.mlp_bias = true;
  m.eager_qk_fp32 = true;
  m.eager_attention_only = true;  // GPTNeoPreTrainedModel has no sdpa path
  m.position_embeddings = 2048;
  r.integer("max_position_embeddings", m.position_embeddings, false);
  m.max_sequence_tokens = m.position_embeddings, m.max_sequence_key = "max_position_embeddings";
  m.rotary_fraction = 0;
}

namespace {

// MPT's attn_config as MptAttention reads it (transformers 5.17): ALiBi, clip_qkv (a clamp of the
// fused q/k/v output, which remat does not price) and softmax_scale; qk_ln and learned positions
// are MosaicML's remote code only. Refused where they differ from what remat builds.
void read_mpt_attn_config(HfJsonReader& r) {
  if (!r.object.contains("attn_config") || !r.object["attn_config"].is_object()) return;
  r.mark_read("attn_config");
  const nlohmann::json& a = r.object["attn_config"];
  const auto set = [&](const char* key) { return a.contains(key) && !a[key].is_null() && a[key] != false; };
  if (a.contains("alibi") && a["alibi"] == false)
    r.fail("attn_config.alibi", "false", "is not a model remat can build: MPT without ALiBi (learned positions)");
  if (set("qk_ln"))
    r.fail("attn_config.qk_ln", a["qk_ln"].dump(), "is not a model remat can build: MPT's q/k LayerNorm");
  if (set("clip_qkv"))
    r.fail("attn_config.clip_qkv", a["clip_qkv"].dump(), "is not a model remat can build: MPT's clamp of q, k and v");
}

}  // namespace

// MPT: d_model, n_heads, n_layers, expansion_ratio; ALiBi, no biases (no_bias), LayerNorms
// without bias, a GELU two-matrix MLP.
void mpt_spell(HfJsonReader& r, ModelSpec& m) {
  r.integer("d_model", m.hidden_size, false);
  r.integer("n_heads", m.num_attention_heads, false);
  r.integer("n_layers", m.num_hidden_layers, false);
}

void mpt_layer(HfJsonReader& r, ModelSpec& m) {
  int64_t ratio = 4;
  r.integer("expansion_ratio", ratio, false);
  if (m.intermediate_size == 0) m.intermediate_size = ratio * m.hidden_size;
  m.norm_kind = NormKind::layer;
  bool no_bias = true;
  r.boolean("no_bias", no_bias);
  m.norm_bias = m.qkv_bias = m.o_bias = m.mlp_bias = !no_bias;
  two_matrix_mlp(m, "gelu");
  m.rotary_fraction = 0;
  m.eager_attention_only = true;  // MptForCausalLM: _supports_sdpa False (transformers 5.17)
  // MptModel builds its ALiBi bias for max_seq_len positions (MptConfig's default 2048): a longer
  // sequence does not broadcast against it (steps-unseen15-h200.jsonl, at 6144 tokens)
  m.max_sequence_tokens = 2048, m.max_sequence_key = "max_seq_len";
  r.integer("max_seq_len", m.max_sequence_tokens, false);
  read_mpt_attn_config(r);
}

}  // namespace remat
