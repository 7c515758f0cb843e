// The Hugging Face model families remat maps (model_type, or the architecture
// class a config names, -> how its config.json spells the model and how its
// layer differs from LLaMA's), and the ones it refuses by name with the
// construct it has no block for.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace remat {

struct HfJsonReader;
struct ModelSpec;
struct TowerLinear;

// How a family spells its experts (none: a dense model; any expert key is refused).
enum class HfExperts {
  none,
  mixtral,  // num_local_experts; intermediate_size is the expert size; every layer MoE (Mixtral, gpt-oss, MiniMax-M2)
  olmoe,    // num_experts; intermediate_size is the expert size; every layer MoE
  optional_num_experts,  // MiniCPM: dense, or num_experts of intermediate_size in every layer (MiniCPM-MoE);
                         // GraniteMoeHybrid: none, or the experts its layer reader sets (num_local_experts)
  qwen,  // num_experts, moe_intermediate_size, decoder_sparse_step, mlp_only_layers, shared_expert_intermediate_size
  deepseek,  // n_routed_experts, moe_intermediate_size, n_shared_experts, first_k_dense_replace, moe_layer_freq
  llama4,    // num_local_experts (size intermediate_size) + one shared expert, interleave_moe_layer_step / moe_layers,
             // dense layers of intermediate_size_mlp
  ernie,     // moe_num_experts, moe_k, moe_intermediate_size, moe_num_shared_experts, moe_layer_start_index /
             // end_index / interval (ERNIE 4.5 MoE)
  dbrx,      // ffn_config: moe_num_experts, moe_top_k, ffn_hidden_size (DBRX)
  nemotron_h,  // n_routed_experts, moe_intermediate_size, moe_shared_expert_intermediate_size in the
               // layers its pattern marks E (none: dense)
  own,         // the family's layer reader reads them (per-layer lists, its own layer rules)
};

// Transformers' configuration-class defaults for the dimensions a config.json
// leaves out (0: no default, the key is required).
struct HfDefaults {
  int64_t vocab_size = 0, hidden_size = 0, intermediate_size = 0, num_hidden_layers = 0, num_attention_heads = 0;
  int64_t num_key_value_heads = 0, head_dim = 0;  // Gemma's head_dim 256 is not hidden / heads
  double rms_norm_eps = 0;                        // 0: LlamaConfig's 1e-6
  int64_t experts = 0, experts_per_token = 0;     // num_local_experts, num_experts_per_tok (Mixtral's)
  // DeepSeek's moe_intermediate_size, n_shared_experts, first_k_dense_replace (DeepseekV3Config's)
  int64_t moe_intermediate_size = 0, shared_experts = 0, first_dense_layers = 0;
};

// The hybrid layers a family builds (their keys are refused in every other family).
enum class HfHybrid {
  none,
  gated_deltanet,  // layer_types linear_attention / full_attention (Qwen3-Next, Qwen3.5)
  // Mamba-2 layers (their keys are accepted): Nemotron-H's hybrid_override_pattern (M Mamba-2,
  // * attention, - MLP), Bamba's attn_layer_indices, GraniteMoeHybrid's layer_types, Mamba-2 alone,
  // Falcon-H1's attention beside Mamba-2 in every layer
  mamba2_pattern,
  short_conv,            // layer_types conv / full_attention (LFM2)
  mamba1,                // Mamba-1 alone (Mamba, FalconMamba) or beside attention by period (Jamba)
  lightning,             // layer_types linear_attention (lightning attention) / full_attention (MiniMax-01)
  block_configs,         // one {attention, ffn} per layer, either absent, widths and heads per layer (Nemotron-NAS)
  cross_attention,       // cross_attention_layers, skipped in a text-only step (Llama 3.2 Vision)
  compressed_attention,  // DeepSeek-V4's layer_types: sliding / compressed sparse / heavily compressed attention
};

// Reads what one family spells or builds its own way into the model.
using HfReadFn = void (*)(HfJsonReader& r, ModelSpec& m);

struct HfFamily {
  const char* model_type;
  bool tie_word_embeddings;  // the transformers config class's default when the key is absent
  HfExperts experts;
  bool vision_tower_beside;  // a flat multimodal config (Qwen2-VL): the language model's keys at the top
  HfReadFn spell = nullptr;  // before the common keys: its own names for them (GPT-2's n_embd, n_layer)
  HfReadFn layer = nullptr;  // after them: how its layer differs from LLaMA's (norms, biases, MLP, rotary)
  HfDefaults defaults = {};  // its config class's defaults for absent dimensions
  bool mtp = false;          // num_nextn_predict_layers: multi-token prediction modules of its own layer
  HfHybrid hybrid = HfHybrid::none;
};

// Layer readers and pieces shared with hf_families_more.cpp (hf_families.cpp).
void layer_norm_with_bias(ModelSpec& m);         // LayerNorms with bias
void gpt2_spell(HfJsonReader& r, ModelSpec& m);  // n_embd, n_layer, n_head, n_inner
void llama_layer(HfJsonReader& r, ModelSpec& m);
void two_matrix_mlp(ModelSpec& m, const char* act);
// A dropout probability under `key` (its default `out` when absent), refused outside [0, 1).
void read_probability(HfJsonReader& r, const char* key, double& out);
// ModelSpec::embedding_dropout, for the families whose code has one (else left 0)
void read_embedding_dropout(HfJsonReader& r, ModelSpec& m, std::string_view model_type);
void read_activation(HfJsonReader& r, ModelSpec& m, const char* key);  // where the config names one
void set_rotary_dim(HfJsonReader& r, ModelSpec& m);                    // a rotary_dim in dimensions of each head
// The share of each head rotated: `key`, else `fallback`.
void set_rotary_fraction(HfJsonReader& r, ModelSpec& m, const char* key, double fallback);
// m.nope_layers emptied where no layer goes without rotary (every layer rotates; hf_families_more.cpp).
void drop_nope_layers_if_none(ModelSpec& m);
// transformers 5's mlp_layer_types ("dense" or "sparse" per layer) sets an MoE model's dense
// layers where a config has it; without it the first `first_dense` layers where given (>= 0),
// else the model's own rule stays (hf_config.cpp).
void read_mlp_layer_types(HfJsonReader& r, ModelSpec& m, int64_t first_dense = -1);
// The entries of a per-layer list that belong to the decoder: transformers cuts lists of
// num_hidden_layers + num_nextn_predict_layers (Step 3.5's Hub configs pad them for the MTP layers).
size_t decoder_entries(HfJsonReader& r, size_t listed, int64_t layers);
// An MoE model whose MLP is dense in exactly the layers `dense_layers` lists, MoE elsewhere.
void set_dense_layers(ModelSpec& m, std::vector<int64_t> dense_layers);
// A hybrid's layer_types as one flag per layer, true for linear_attention (the older "mamba"
// included), false for full_attention; where the config has none, `default_linear(layer)`. Empty
// after a problem (a list of another length, another kind).
std::vector<bool> read_linear_layer_types(HfJsonReader& r, int64_t layers,
                                          const std::function<bool(int64_t)>& default_linear);
void qwen3_layer(HfJsonReader& r, ModelSpec& m);
void olmo2_layer(HfJsonReader& r, ModelSpec& m);
void cohere_layer(HfJsonReader& r, ModelSpec& m);

// Mamba-1 families (hf_families_hybrid.cpp).
void mamba_layer(HfJsonReader& r, ModelSpec& m);
void jamba_layer(HfJsonReader& r, ModelSpec& m);

// LFM2 and LFM2-MoE (hf_families_hybrid.cpp).
void lfm2_layer(HfJsonReader& r, ModelSpec& m);
void lfm2_moe_layer(HfJsonReader& r, ModelSpec& m);

// MiniMax-01 (hf_family_minimax.cpp) and Kimi Linear (hf_family_kimi.cpp).
void minimax_layer(HfJsonReader& r, ModelSpec& m);
void kimi_linear_layer(HfJsonReader& r, ModelSpec& m);

// A shared MLP `shared` wide (the config's `key`) beside experts `width` wide (`width_name`), counted
// as that many shared experts, or as one shared expert of its own width where it is no multiple.
void shared_mlp_as_experts(HfJsonReader& r, const char* key, int64_t shared, int64_t width,
                           const std::string& width_name, ModelSpec& m);

// `field` from `key`, or where the config leaves it out the config class's default (said in a note).
void integer_or_default(HfJsonReader& r, ModelSpec& m, const char* key, int64_t& field, int64_t fallback);
void require_experts(HfJsonReader& r, const ModelSpec& m, const char* key);  // at least one routed expert
// Routed experts under `key`, moe_intermediate_size and num_experts_per_tok, each with its config
// class's default where the config leaves it out.
void read_routed_experts(HfJsonReader& r, ModelSpec& m, const char* key, int64_t experts, int64_t width, int64_t top_k);
// DBRX: the experts under ffn_config (gated, every layer); kv heads and the q|k|v clamp under attn_config.
void read_dbrx_experts(HfJsonReader& r, ModelSpec& m);

// Nemotron-NAS's block_configs and DeciLM-7B's per-layer key/value heads (hf_family_nemotron_nas.cpp).
void nemotron_nas_spell(HfJsonReader& r, ModelSpec& m);
void deci_spell(HfJsonReader& r, ModelSpec& m);

// Step 3.5's language model (hf_family_step.cpp).
void step3p5_layer(HfJsonReader& r, ModelSpec& m);

// Readers of the families in hf_families_more.cpp.
void helium_layer(HfJsonReader& r, ModelSpec& m);
void cwm_layer(HfJsonReader& r, ModelSpec& m);
void jais2_layer(HfJsonReader& r, ModelSpec& m);
void hyperclovax_layer(HfJsonReader& r, ModelSpec& m);
void granite_swa_layer(HfJsonReader& r, ModelSpec& m);
void granitemoeshared_layer(HfJsonReader& r, ModelSpec& m);
void granitemoe_swa_layer(HfJsonReader& r, ModelSpec& m);
void nanochat_layer(HfJsonReader& r, ModelSpec& m);
void minicpm3_spell(HfJsonReader& r, ModelSpec& m);
void mla_layer(HfJsonReader& r, ModelSpec& m);
void solar_open_layer(HfJsonReader& r, ModelSpec& m);
void exaone_moe_layer(HfJsonReader& r, ModelSpec& m);
void afmoe_layer(HfJsonReader& r, ModelSpec& m);
void hy_v3_layer(HfJsonReader& r, ModelSpec& m);
void hunyuan_moe_layer(HfJsonReader& r, ModelSpec& m);
// Keys of Hunyuan's remote code (model_type hunyuan: its first releases' HunYuanMoEV1ForCausalLM and
// HunYuanDenseV1ForCausalLM): use_qk_norm read, cross-layer attention (use_cla) refused by name, the
// keys its modeling code builds nothing from marked read.
void read_hunyuan_remote_keys(HfJsonReader& r, ModelSpec& m);
void cohere2_moe_layer(HfJsonReader& r, ModelSpec& m);
void mimo_v2_flash_layer(HfJsonReader& r, ModelSpec& m);
void laguna_layer(HfJsonReader& r, ModelSpec& m);
void bailing_moe_layer(HfJsonReader& r, ModelSpec& m);
// A boolean key (`fallback` where absent) that, where true, asks for something remat does not cost:
// a note "<key> is true: <why>" (hf_families_more.cpp).
void note_if_true(HfJsonReader& r, ModelSpec& m, const char* key, bool fallback, const std::string& why);
// A boolean key (false where absent) that, where true, asks for a construct remat has no block for:
// refused with it named.
void refuse_if_true(HfJsonReader& r, const char* key, const std::string& construct);
// apply_residual_connection_post_layernorm (ChatGLM's, TeleChat's): the residual after the norm, refused.
void refuse_post_norm_residual(HfJsonReader& r);
void bitnet_layer(HfJsonReader& r, ModelSpec& m);
// Remote-code families read from their own modeling code (hf_family_remote.cpp).
void chatglm_spell(HfJsonReader& r, ModelSpec& m);
void chatglm_layer(HfJsonReader& r, ModelSpec& m);
void qwen1_spell(HfJsonReader& r, ModelSpec& m);
void qwen1_layer(HfJsonReader& r, ModelSpec& m);
void telechat_spell(HfJsonReader& r, ModelSpec& m);
void telechat_layer(HfJsonReader& r, ModelSpec& m);
void phi_msft_spell(HfJsonReader& r, ModelSpec& m);  // Phi-2's remote code: phi-msft, mixformer-sequential
void phi_msft_layer(HfJsonReader& r, ModelSpec& m);
void mixformer_layer(HfJsonReader& r, ModelSpec& m);
void phi_layer(HfJsonReader& r, ModelSpec& m);
void four_h_mlp_by_default(ModelSpec& m);  // intermediate_size absent: 4 hidden
void mllama_text_layer(HfJsonReader& r, ModelSpec& m);
void aria_text_layer(HfJsonReader& r, ModelSpec& m);
void emu3_text_layer(HfJsonReader& r, ModelSpec& m);

// The first decoder-only families (hf_families_classic.cpp), GPT-Neo among them.
void xglm_spell(HfJsonReader& r, ModelSpec& m);
void xglm_layer(HfJsonReader& r, ModelSpec& m);
void ctrl_spell(HfJsonReader& r, ModelSpec& m);
void ctrl_layer(HfJsonReader& r, ModelSpec& m);
void openai_gpt_spell(HfJsonReader& r, ModelSpec& m);
void openai_gpt_layer(HfJsonReader& r, ModelSpec& m);
void biogpt_layer(HfJsonReader& r, ModelSpec& m);
void mpt_spell(HfJsonReader& r, ModelSpec& m);
void mpt_layer(HfJsonReader& r, ModelSpec& m);
void gpt_neo_spell(HfJsonReader& r, ModelSpec& m);
void gpt_neo_layer(HfJsonReader& r, ModelSpec& m);
std::vector<bool> mimo_v2_flash_windowed_layers(HfJsonReader& r, int64_t layers);
// DeepSeek sparse attention: DeepSeek-V3.2 and GLM-5 (GLM-MoE-DSA, with its shared-indexer layers).
void fp32_router_layer(HfJsonReader& r, ModelSpec& m);  // DeepSeek-V2 and V3
void deepseek_v32_layer(HfJsonReader& r, ModelSpec& m);
void glm_moe_dsa_layer(HfJsonReader& r, ModelSpec& m);

// The Gemma families (hf_family_gemma.cpp): their layer readers, and which Gemma 4 layers attend
// within the window.
void gemma_layer(HfJsonReader& r, ModelSpec& m);
void gemma2_layer(HfJsonReader& r, ModelSpec& m);
void vaultgemma_layer(HfJsonReader& r, ModelSpec& m);
void gemma3_layer(HfJsonReader& r, ModelSpec& m);
void muse_glimmer_text_layer(HfJsonReader& r, ModelSpec& m);
void gemma4_layer(HfJsonReader& r, ModelSpec& m);
void gemma4_unified_layer(HfJsonReader& r, ModelSpec& m);
std::vector<bool> gemma4_windowed_layers(HfJsonReader& r, int64_t layers);

// Qwen3-Next / Qwen3.5's Gated DeltaNet beside attention (hf_families_hybrid.cpp).
void qwen3_next_layer(HfJsonReader& r, ModelSpec& m);

// Layer readers of the Mamba-2 families (hf_families_hybrid.cpp).
void bamba_layer(HfJsonReader& r, ModelSpec& m);
void granitemoehybrid_layer(HfJsonReader& r, ModelSpec& m);
void mamba2_layer(HfJsonReader& r, ModelSpec& m);
void nemotron_h_layer(HfJsonReader& r, ModelSpec& m);
void falcon_h1_layer(HfJsonReader& r, ModelSpec& m);
void olmo_hybrid_layer(
    HfJsonReader& r,
    ModelSpec& m);  // Gated DeltaNet beside OLMo-2 attention  // attention beside Mamba-2 in every layer

// The language model's keys no reader asked for (`consulted` holds those asked), in a note (hf_unread_keys.cpp).
void note_unread_keys(const HfJsonReader& r, std::vector<std::string> consulted, ModelSpec& m);
void refuse_bidirectional(const HfJsonReader& r);

// nullptr when model_type is not a family remat maps.
const HfFamily* find_hf_family(const std::string& model_type);

// The family a model_type stands for under another name (kimi_k2: DeepSeek-V3), or
// the family of an architecture class (DeepseekV3ForCausalLM); "" when none.
std::string hf_family_alias(const std::string& model_type);
std::string hf_family_of_architecture(const std::string& architecture);

// Why remat cannot build this model_type ("" when it is not refused by name).
std::string hf_refusal_reason(const std::string& model_type);
// The same for an architecture class of remote code ("" when not refused by name).
std::string hf_architecture_refusal_reason(const std::string& architecture);

// Whether a multimodal model ties its head where the file's top level has no tie_word_embeddings:
// its wrapper config class's default where the class declares one (Mistral3Config: true), else
// `language_model_ties`, the language model's.
bool wrapper_ties_head(const std::string& outer_type, bool language_model_ties);
// A layer_types word as transformers 5 writes it (its _LEGACY_LAYER_TYPE_REMAP): the hybrids'
// older "mamba" is "linear_attention", "attention" is "full_attention"; other words unchanged.
std::string current_layer_type(const std::string& kind);

// Multimodal configs (hf_wrappers.cpp). The key of a wrapper's nested language model (text_config,
// llm_config, llm_cfg; Qwen3-ASR's thinker_config.text_config), "" when the config is the language
// model itself; nested_object finds it by that dotted path.
std::string nested_key(const nlohmann::json& root, const std::string& type);
const nlohmann::json& nested_object(const nlohmann::json& root, const std::string& path);
// A note where `architectures` names a class whose head is not the causal LM's (a bare model for
// embeddings, a sequence classifier or reward model): remat costs the causal LM all the same.
// Refuses an EAGLE-3 draft head (its architectures) by name where its model_type is no family of
// transformers' own (transformers_type false).
void note_head_of_architecture(const HfJsonReader& r, const std::vector<std::string>& archs, bool transformers_type,
                               ModelSpec& m);
// MiniCPM-V's language model type for its config's version ("" for another model_type; an unknown
// version refused).
std::string minicpmv_text_model_type(const nlohmann::json& root, const std::string& type, const std::string& file);
// A MiniCPM-V file read as its language model (minicpmv_type): the note, and the tower left uncounted.
void note_minicpmv_language_model(const std::string& minicpmv_type, ModelSpec& m);
// Notes naming what is not counted: a nested config's or a flat family's vision tower (a nested
// config's audio tower where `root`, the file, gives audio_config) ...
void note_vision_tower(ModelSpec& m, const HfFamily& family, const std::string& type, const std::string& nest,
                       const nlohmann::json& root);
struct HfJsonReader;
// Parameters of the vision tower and projector beside a multimodal config's language model, for the
// towers remat counts exactly (SigLIP under Gemma 3, CLIP or SigLIP under LLaVA, Pixtral under
// Mistral 3, SigLIP2 under LFM2-VL, the Qwen vision family: hf_vision_towers*.cpp; GLM-4.1V/4.5V's,
// and Voxtral's audio tower from audio_config: hf_towers_glm4v_voxtral.cpp); 0 for the others.
// `linears`: the tower's linear modules where remat knows them (ModelSpec::tower_linear_modules).
double vision_tower_params(HfJsonReader& top, const std::string& outer_type, int64_t text_hidden,
                           std::vector<TowerLinear>& linears);
// ... and a flat config's encoders beside its language model (marked read).
void note_flat_encoders(HfJsonReader& top, ModelSpec& m);

// Multimodal wrappers whose language model is the nested text_config.
bool is_hf_text_config_wrapper(const std::string& model_type);
// Whether PEFT converts gate/up/down LoRA targets to the routed experts' stacked weights for it.
bool peft_converts_expert_targets(const std::string& model_type);
// m.linear_modules as family `family` names them (hf_linear_modules.cpp); after the layer is read.
void set_linear_modules(const std::string& family, ModelSpec& m);
// The text model type of a wrapper whose config class builds text_config from the top-level keys
// where text_config is absent (GLM-4.1V's first releases wrote the language model flat), else "".
std::string flat_text_model_type(const std::string& wrapper_type);
// The transformers config class that ignores such top-level keys and builds its default language
// model instead (remat reads them, with a note), or "" where it reads them too.
std::string flat_text_ignoring_class(const std::string& wrapper_type);
// The model_type of the text config a wrapper builds from a text_config without one ("" where
// remat does not know it).
std::string wrapper_text_model_type(const std::string& wrapper_type);

// hf_checkpoint.cpp: a note where the checkpoint is quantized (weights costed at --precision).
void note_quantized(HfJsonReader& top, HfJsonReader& r, ModelSpec& m);
// The MTP modules of families that build them (DeepSeek-V2/V3, GLM-4.5, MiMo); noted elsewhere.
void read_mtp(HfJsonReader& r, ModelSpec& m, const HfFamily& family);
void deepseek_v4_layer(HfJsonReader& r, ModelSpec& m);  // hf_family_deepseek_v4.cpp
// The model's name from its file ("deepseek-r1.json") or folder, beside its model_type.
std::string name_from_file(const std::string& file, const std::string& model_type);

}  // namespace remat
