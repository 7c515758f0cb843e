// Families whose Hub repositories ship their own modeling code, read from that code: ChatGLM
// (chatglm2/3, GLM-4), Qwen (1), TeleChat, Phi-2's two first releases and the keys of Hunyuan's
// first release.
#include <nlohmann/json.hpp>
#include <string>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"
#include "remat/spec/model_spec.hpp"

namespace remat {

// ChatGLM (remote code: chatglm2/3, glm-4-9b): num_layers, ffn_hidden_size,
// padded_vocab_size, kv_channels, multi_query_group_num.
void chatglm_spell(HfJsonReader& r, ModelSpec& m) {
  refuse_if_true(r, "position_encoding_2d",
                 "ChatGLM-6B's first release (GLM's two-dimensional rotary positions, a GELU MLP of "
                 "inner_hidden_size, scaled residuals); remat builds ChatGLM2/3's and GLM-4's layers");
  r.integer("num_layers", m.num_hidden_layers, false);
  r.integer("ffn_hidden_size", m.intermediate_size, false);
  r.integer("padded_vocab_size", m.vocab_size, false);
  r.integer("kv_channels", m.head_dim, false);
  bool mqa = false;
  r.boolean("multi_query_attention", mqa);
  if (mqa) r.integer("multi_query_group_num", m.num_key_value_heads, true);
}

// ChatGLM: add_qkv_bias, add_bias_linear (dense and MLP), rmsnorm (else LayerNorm),
// rotary over half of each head (RotaryEmbedding(rotary_dim // 2)).
void chatglm_layer(HfJsonReader& r, ModelSpec& m) {
  r.boolean("add_qkv_bias", m.qkv_bias);
  bool linear_bias = false, rms = true;
  r.boolean("add_bias_linear", linear_bias);
  m.o_bias = m.mlp_bias = linear_bias;
  r.boolean("rmsnorm", rms);
  if (!rms) layer_norm_with_bias(m);
  m.rotary_fraction = 0.5;
  bool final_norm = true;
  r.boolean("post_layer_norm", final_norm);
  if (!final_norm)
    m.notes.push_back(r.path("post_layer_norm") + " is false: the final norm is counted as if the model had one");
  // numerics of its attention (scaling by layer number, the fp32 softmax) and kernel fusion: nothing
  // remat costs differently
  for (const char* key : {"apply_query_key_layer_scaling", "attention_softmax_in_fp32", "bias_dropout_fusion",
                          "original_rope", "fp32_residual_connection"})
    r.mark_read(key);
  refuse_post_norm_residual(r);
}

// Qwen (1)'s first revisions spell the dimensions as GPT-2 does, the MLP width as ffn_hidden_size.
void qwen1_spell(HfJsonReader& r, ModelSpec& m) {
  gpt2_spell(r, m);
  r.integer("ffn_hidden_size", m.intermediate_size, false);
}

// Qwen (1, remote code modeling_qwen.py): c_attn with bias; c_proj, w1, w2 and the MLP's c_proj
// with a bias only where no_bias is false (QWenConfig's default true); w1 and w2 of
// intermediate_size / 2; heads of kv_channels; rotary over rotary_pct of each head.
void qwen1_layer(HfJsonReader& r, ModelSpec& m) {
  m.qkv_bias = true;
  m.intermediate_size /= 2;
  bool no_bias = true;
  r.boolean("no_bias", no_bias);
  m.o_bias = m.mlp_bias = !no_bias;
  r.integer("kv_channels", m.head_dim, false);
  set_rotary_fraction(r, m, "rotary_pct", 1.0);
  // inference-time switches (dynamic NTK, logn attention scaling at lengths beyond training)
  for (const char* key : {"use_dynamic_ntk", "use_logn_attn", "tokenizer_type"}) r.mark_read(key);
}

void read_hunyuan_remote_keys(HfJsonReader& r, ModelSpec& m) {
  if (r.has("use_qk_norm")) {
    bool qk_norm = true;
    r.boolean("use_qk_norm", qk_norm);
    m.qk_norm = qk_norm ? QkNorm::shared : QkNorm::none;
  }
  refuse_if_true(r, "use_cla",
                 "cross-layer attention (each cla_share_factor layers share one layer's keys and values)");
  // keys its modeling_hunyuan.py builds nothing from: the head dim is hidden_size / num_attention_heads,
  // the experts are intermediate_size wide
  for (const char* key : {"cla_share_factor", "attention_head_dim", "moe_intermediate_size", "moe_layer_num_skipped",
                          "norm_type", "use_mla"})
    r.mark_read(key);
  int64_t head_dim = 0;
  r.integer("attention_head_dim", head_dim, false);
  if (head_dim > 0 && m.num_attention_heads > 0 && head_dim * m.num_attention_heads != m.hidden_size)
    m.notes.push_back(r.path("attention_head_dim") + " = " + std::to_string(head_dim) +
                      ": Hunyuan's remote code builds heads of hidden_size / num_attention_heads");
}

// TeleChat-7B and TeleChat-12B-V2 (remote code, Tele-AI/Telechat models/*/modeling_telechat.py):
// LLaMA's layer spelled n_layer, n_head, ffn_hidden_size, with query and a fused key_value
// projection without bias, the attention output (dense) and the MLP's down_proj with a bias (gate
// and up without), hidden_dropout on each block's output before the residual add, and an RMSNorm
// on the embeddings under embed_layernorm. TelechatConfig leaves tie_word_embeddings to
// PretrainedConfig's True: TeleChat-7B's checkpoint stores no lm_head; 12B-V2's config says false.
void telechat_spell(HfJsonReader& r, ModelSpec& m) {
  r.integer("n_embed", m.hidden_size, false);
  r.integer("n_layer", m.num_hidden_layers, false);
  r.integer("n_head", m.num_attention_heads, false);
  r.integer("ffn_hidden_size", m.intermediate_size, false);
}

void telechat_layer(HfJsonReader& r, ModelSpec& m) {
  m.o_bias = true, m.mlp_down_bias = true;
  read_probability(r, "hidden_dropout", m.residual_dropout);
  r.boolean("embed_layernorm", m.embedding_norm);
  refuse_post_norm_residual(r);
  note_if_true(r, m, "semi_causal", false, "its attention mask is not causal over a prefix; costed as causal");
  // inference and fused-kernel switches: they change no weight and no training activation remat costs
  for (const char* key : {"flash_attn", "logn", "training_seqlen", "attention_softmax_in_fp32", "bias_dropout_fusion",
                          "masked_softmax_fusion", "skip_bias_add", "skip_bias_add_qkv", "slow_but_exact", "seq_length",
                          "offset_alibi", "n_inner"})
    r.mark_read(key);
}

// Phi-2's first remote code (model_type phi-msft, modeling_phi.py's ParallelBlock): the layer
// transformers' phi ported, under GPT-2's names (n_embd, n_layer, n_head, n_head_kv, n_inner: null
// is 4 n_embd), rotary_dim of each head and activation_function; the head is a LayerNorm and a
// Linear with bias, as phi's final norm and lm_head.
void phi_msft_spell(HfJsonReader& r, ModelSpec& m) {
  gpt2_spell(r, m);
  r.integer("n_head_kv", m.num_key_value_heads, false);
}

void phi_msft_layer(HfJsonReader& r, ModelSpec& m) {
  four_h_mlp_by_default(m);
  phi_layer(r, m);
  read_activation(r, m, "activation_function");
  m.rotary_fraction = 1;
  set_rotary_dim(r, m);
}

// Phi-2's first upload (model_type mixformer-sequential, modeling_mixformer_sequential.py): phi-msft's
// layers where its `architecture` picks them (block_cls parallel, an fc1/fc2 MLP, the MHA mixer);
// another block or MLP class is refused by name.
void mixformer_layer(HfJsonReader& r, ModelSpec& m) {
  const auto& arch = r.object["architecture"];
  const auto text_at = [&](const char* group, const char* key) {
    const auto& node = group ? (arch.contains(group) ? arch[group] : nlohmann::json()) : arch;
    return node.is_object() && node.contains(key) && node[key].is_string() ? node[key].get<std::string>() : "";
  };
  const std::string block = text_at(nullptr, "block_cls"), mlp = text_at("mlp", "mlp_cls");
  const std::string mixer = text_at("mixer", "mixer_cls");
  if (!arch.is_null() && !arch.is_object()) return r.fail("architecture", arch.dump(), "must be an object");
  if (!block.empty() && block != "parallel")
    return r.fail("architecture", arch.dump(), "is not a model remat can build: MixFormer blocks other than parallel");
  if (!mlp.empty() && mlp != "fused_mlp" && mlp != "mlp")
    return r.fail("architecture", arch.dump(), "is not a model remat can build: a MixFormer MLP other than fc1/fc2");
  if (!mixer.empty() && mixer != "mha")
    return r.fail("architecture", arch.dump(), "is not a model remat can build: a MixFormer mixer other than MHA");
  r.mark_read("architecture");
  phi_msft_layer(r, m);
}

}  // namespace remat
