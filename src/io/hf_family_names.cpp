// Names of Hugging Face model types and architectures beside the family table
// (hf_families.cpp): aliases of a family, architecture classes, multimodal
// wrappers whose language model is text_config, and the types refused by name
// with the construct remat lacks.
#include <array>
#include <utility>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/problems.hpp"

namespace remat {

namespace {

// Other names for a family's layers, as their configs say (architectures or docs).
constexpr std::pair<const char*, const char*> kAliases[] = {
    {"glm4v_text", "glm4"},  // GLM-4.1V/4.5V's language models
    {"qwen2_vl_text", "qwen2"},
    {"qwen2_5_vl_text", "qwen2"},
    {"glm4v_moe_text", "glm4_moe"},
    {"kimi_k2", "deepseek_v3"},  // Kimi K2: architectures DeepseekV3ForCausalLM
    {"RefinedWeb", "falcon"},    // Falcon-40B's original config
    {"RefinedWebModel", "falcon"},
    {"yi", "llama"},
    {"stablelm_epoch", "stablelm"},        // StableLM's remote code before transformers ported it (stable-code-3b)
    {"exaone4_5_text", "exaone4"},         // EXAONE 4.5's first releases (transformers now writes exaone4)
    {"qwen2_5_omni_text", "qwen2"},        // Qwen2.5-Omni's thinker
    {"qwen3_omni_moe_text", "qwen3_moe"},  // Qwen3-Omni's thinker
    {"qwen3_asr_text", "qwen3"},           // Qwen3-ASR's thinker (Qwen3ASRConfig: text_config is a Qwen3Config)
    {"paddleocr_vl_text", "ernie4_5"},
    {"glm_ocr_text", "glm4"},
    {"minimax_text_01", "minimax"},  // MiniMax-Text-01's and MiniMax-M1's remote code
    {"minimax_m1", "minimax"},
};

// Architecture classes whose layers are a family's (used when model_type is unknown).
constexpr std::pair<const char*, const char*> kArchitectures[] = {
    {"LlamaForCausalLM", "llama"},
    {"MistralForCausalLM", "mistral"},
    {"Qwen2ForCausalLM", "qwen2"},
    {"Qwen3ForCausalLM", "qwen3"},
    {"Qwen2MoeForCausalLM", "qwen2_moe"},
    {"Qwen3MoeForCausalLM", "qwen3_moe"},
    {"MixtralForCausalLM", "mixtral"},
    {"DeepseekV2ForCausalLM", "deepseek_v2"},
    {"DeepseekV3ForCausalLM", "deepseek_v3"},
    {"DeepseekV32ForCausalLM", "deepseek_v32"},
    {"DeepseekV4ForCausalLM", "deepseek_v4"},
    {"GlmMoeDsaForCausalLM", "glm_moe_dsa"},
    {"DeepseekForCausalLM", "deepseek"},
    {"MiMoForCausalLM", "mimo"},
    {"MiMoV2FlashForCausalLM", "mimo_v2_flash"},
    {"LagunaForCausalLM", "laguna"},
    {"MiniCPM3ForCausalLM", "minicpm3"},  // MiniCPM3-4B's Hub config names no model_type
    {"BailingMoeForCausalLM", "bailing_moe"},
    {"XGLMForCausalLM", "xglm"},
    {"CTRLLMHeadModel", "ctrl"},
    {"OpenAIGPTLMHeadModel", "openai-gpt"},
    {"BioGptForCausalLM", "biogpt"},
    {"BitNetForCausalLM", "bitnet"},
    {"AriaTextForCausalLM", "aria_text"},
    {"Emu3ForCausalLM", "emu3_text_model"},
    {"MiniMaxForCausalLM", "minimax"},
    {"MiniMaxText01ForCausalLM", "minimax"},
    {"MiniMaxM1ForCausalLM", "minimax"},
    {"KimiLinearForCausalLM", "kimi_linear"},
    {"Step3p5ForCausalLM", "step3p5"},
    {"GemmaForCausalLM", "gemma"},
    {"Gemma2ForCausalLM", "gemma2"},
    {"Gemma4ForCausalLM", "gemma4_text"},
    {"Gemma4UnifiedForCausalLM", "gemma4_unified_text"},
    {"Phi3ForCausalLM", "phi3"},
    {"PhiForCausalLM", "phi"},
    {"GPTNeoXForCausalLM", "gpt_neox"},
    {"GPTJForCausalLM", "gptj"},
    {"GPT2LMHeadModel", "gpt2"},
    {"GPTBigCodeForCausalLM", "gpt_bigcode"},
    {"FalconForCausalLM", "falcon"},
    {"FalconH1ForCausalLM", "falcon_h1"},
    {"OlmoHybridForCausalLM", "olmo_hybrid"},
    {"RWForCausalLM", "falcon"},
    {"Starcoder2ForCausalLM", "starcoder2"},
    {"HunYuanMoEV1ForCausalLM", "hunyuan_v1_moe"},  // Hunyuan-A13B's first release: model_type hunyuan
    {"HunYuanDenseV1ForCausalLM", "hunyuan_v1_dense"},
    {"ChatGLMModel", "chatglm"},  // ChatGLM2/3's remote code; some copies leave model_type out
    {"ChatGLMForConditionalGeneration", "chatglm"},
};

constexpr std::array kTextConfigWrappers = {
    "llava",    "llava_next", "llava_onevision", "mistral3",    "qwen3_vl",    "qwen3_vl_moe",   "llama4",
    "gemma3",   "gemma4",     "paligemma",       "qwen3_5",     "qwen3_5_moe", "kimi_k25",       "lfm2_vl",
    "internvl", "glm4v",      "glm4v_moe",       "gemma3n",     "mllama",      "gemma4_unified", "aria",
    "emu3",     "step3p7",    "qwen3_asr",       "muse_glimmer"};

const char* kEncoder = "an encoder or encoder-decoder model (bidirectional attention); remat plans causal decoder LLMs";

// sized by its entries: a fixed size left over after removing one gives null names
const std::pair<const char*, const char*> kRefused[] = {
    {"bert", kEncoder},
    {"roberta", kEncoder},
    {"xlm-roberta", kEncoder},
    {"distilbert", kEncoder},
    {"albert", kEncoder},
    {"electra", kEncoder},
    {"deberta", kEncoder},
    {"deberta-v2", kEncoder},
    {"modernbert", kEncoder},
    {"t5", kEncoder},
    {"mt5", kEncoder},
    {"umt5", kEncoder},
    {"bart", kEncoder},
    {"whisper", kEncoder},
    // its language model sits under decoder_config beside acoustic and semantic tokenizers
    {"vibevoice",
     "a speech generation model (VibeVoice: a diffusion head over acoustic latents beside its "
     "language model); remat plans causal decoder LLMs"},
    {"zamba2",
     "Mamba-2 layers plus shared attention+MLP blocks reused at several depths, each use with its own LoRA "
     "(Zamba2); remat gives every layer its own weights"},
    {"gemma3n_text", "Gemma 3n's per-layer input embeddings, AltUp and LAuReL blocks; remat has no block for them"},
    {"rwkv", "RWKV's recurrent time-mixing layers, no attention; remat has no block for them"},
    {"rwkv7", "RWKV's recurrent time-mixing layers, no attention; remat has no block for them"},
    {"hymba",
     "attention heads and Mamba heads side by side in every layer, outputs combined, with learned meta "
     "tokens (Hymba); remat builds one mixer per layer"},
    {"plamo2",
     "PLaMo 2's state-space layers (B, C and dt from their own projections of the convolved input, each "
     "normed); remat's state-space block is Mamba-2's"},
    {"recurrent_gemma", "RG-LRU recurrent layers beside attention; remat has no block for recurrent layers"},
    {"jetmoe",
     "mixture-of-attention-heads (each expert its own query and output projections) beside MoE MLPs with biases "
     "(JetMoE); remat builds dense attention"},
    {"longcat_flash",
     "shortcut-connected MoE (two attention and two MLP blocks per layer beside one MoE block) with "
     "zero-computation experts; remat has no block for them"},
    {"axk1",
     "a norm on the MoE block's output in the MoE layers only (A.X K1); remat's extra norms are in every layer"},
    {"axk2",
     "DeepSeek sparse attention (its lightning indexer) and gated RMSNorms; remat has no block for sparse "
     "attention"},
    {"diffllama",
     "differential attention (two softmax maps per head subtracted with learned lambdas, then a group norm); "
     "remat builds softmax attention"},
    {"doge",
     "dynamic mask attention (a learned per-head mask keeping the top keys) and cross-domain MoE of "
     "single-neuron experts; remat has no block for them"},
    // decoders whose layers remat has no block for
    {"xlstm",
     "xLSTM's mLSTM recurrent layers (a matrix memory with exponential gates), no attention; remat has no "
     "block for them"},
    {"blt",
     "byte-level patching (a local byte encoder and decoder with cross-attention around a global transformer over "
     "patches); remat builds one decoder stack over tokens"},
    {"cpmant",
     "CPM-Ant's bucketed relative position and segment biases with a learned prompt prefix that is not causally "
     "masked; remat builds rotary-position causal decoders"},
    {"gpt_neox_japanese",
     "GPT-NeoX Japanese's layers (a bias-free per-head fused qkv and an attention output bias on the last layer "
     "only); remat's GPT-NeoX layer has biases throughout"},
    {"hrm_text",
     "two weight-shared stacks run recurrently for several cycles, only the last ones with gradients "
     "(Hierarchical Reasoning Model); remat runs each layer once"},
    {"hy_v4",
     "parallel residual streams mixed by hyper-connections, and latent attention with a sparse token indexer, "
     "attention sinks and an output gate; remat has no block for them"},
    {"inkling_text",
     "a learned relative position bias in place of rotary and short convolutions on keys, values and both block "
     "outputs in every layer; remat has no block for them"},
    {"inkling_mm_model",
     "a learned relative position bias in place of rotary and short convolutions on keys, values and both block "
     "outputs in every layer; remat has no block for them"},
    {"zaya",
     "compressed convolutional attention (causal convolutions mixing queries and keys) and a router carrying "
     "state across layers; remat has no block for them"},
    {"minimax_m3",
     "block-sparse attention (an indexer picking key blocks per query) and SwiGLU-OAI experts (MiniMax-M3); "
     "remat has no block for them"},
    {"minimax_m3_vl_text",
     "block-sparse attention (an indexer picking key blocks per query) and SwiGLU-OAI experts (MiniMax-M3); "
     "remat has no block for sparse attention over GQA"},
    {"modernbert-decoder",
     "ModernBERT's decoder (no norm before the first attention, a norm on the embeddings, an MLM-style "
     "prediction head); remat does not build those pieces"},
    {"ernie4_5_vl_moe_text",
     "separate text and vision expert sets chosen per token by modality, with 3D multimodal rotary positions; "
     "remat builds one expert set"},
    // multimodal models whose language model is not a text_config remat reads
    {"minimax_m3_vl",
     "a vision-language model whose language model has block-sparse attention (MiniMax-M3); remat has no block "
     "for it"},
    {"ernie4_5_vl_moe",
     "a vision-language model whose language model picks text or vision experts per token; remat builds one "
     "expert set"},
    {"moshi", "a speech-text model (audio codec tokens through a temporal and a per-codebook depth transformer)"},
    {"pi0", "a vision-language-action policy (bidirectional towers denoising action chunks), not a causal LM"},
    {"qwen2_5_omni",
     "an omni model (a thinker and a talker language model beside audio and vision encoders); plan its thinker's "
     "text_config as qwen2"},
    {"phi4_multimodal",
     "a multimodal model (vision and audio encoders, modality LoRA adapters); plan its text model as phi3"},
    {"kosmos-2", "a vision-language model (image latents through a resampler into a sub-LN text decoder)"},
    {"kosmos-2.5", "a document-image vision-language model (an image encoder beside a sub-LN text decoder)"},
    {"idefics", "a LLaMA decoder with gated cross-attention layers over image features"},
    {"git",
     "an image-to-text model (image tokens attended bidirectionally beside the text); remat plans causal "
     "decoder LLMs"},
    {"trocr", "the decoder of an image encoder-decoder model (every layer cross-attends to image features)"},
    {"blip", "an image-text model whose text layers cross-attend to image features"},
    {"blip_text_model", "BLIP's text model (every layer cross-attends to image features)"},
    // encoders, also as the decoder half of encoder-decoder setups
    {"bert-generation", kEncoder},
    {"big_bird", kEncoder},
    {"camembert", kEncoder},
    {"data2vec-text", kEncoder},
    {"ernie", kEncoder},
    {"megatron-bert", kEncoder},
    {"rembert", kEncoder},
    {"roberta-prelayernorm", kEncoder},
    {"roc_bert", kEncoder},
    {"roformer", kEncoder},
    {"xlm-roberta-xl", kEncoder},
    {"xmod", kEncoder},
    {"xlm",
     "XLM (cross-lingual masked and causal language modelling with language embeddings); remat plans causal "
     "decoder LLMs with rotary positions"},
    {"xlnet",
     "XLNet (permutation language modelling with two-stream attention and segment memory); remat plans causal "
     "decoder LLMs"},
};

}  // namespace

std::string hf_family_alias(const std::string& model_type) {
  for (const auto& [alias, family] : kAliases)
    if (model_type == alias) return family;
  return "";
}

std::string hf_family_of_architecture(const std::string& architecture) {
  for (const auto& [arch, family] : kArchitectures)
    if (architecture == arch) return family;
  return "";
}

std::string hf_architecture_refusal_reason(const std::string& architecture) {
  // remote code whose configs name no model_type remat knows, refused by the construct they build
  constexpr std::pair<const char*, const char*> kRefusedArchitectures[] = {
      {"CogVLMForCausalLM",
       "CogVLM's visual expert (every layer a second set of attention and MLP weights for image tokens)"},
      {"CogVLMVideoForCausalLM",
       "CogVLM's visual expert (every layer a second set of attention and MLP weights for image tokens)"},
      {"CogAgentForCausalLM",
       "CogVLM's visual expert (every layer a second set of attention and MLP weights for image tokens)"},
  };
  for (const auto& [name, reason] : kRefusedArchitectures)
    if (architecture == name) return reason;
  return "";
}

std::string hf_refusal_reason(const std::string& model_type) {
  for (const auto& [type, reason] : kRefused)
    if (model_type == type) return reason;
  return "";
}

std::string current_layer_type(const std::string& kind) {
  if (kind == "mamba") return "linear_attention";
  if (kind == "attention") return "full_attention";
  return kind;
}

namespace {

// Wrappers whose configs may write the language model's keys at the top level, the model_type
// remat reads them as, and the transformers 5.17 config class that ignores them there (nullptr:
// it passes them to its text config, as Glm4vConfig, Glm4vMoeConfig and GlmOcrConfig do; checked:
// a flat hidden_size reaches text_config).
struct FlatWrapper {
  const char *wrapper, *text_type, *ignoring_class;
};
constexpr FlatWrapper kFlatWrappers[] = {
    {"glm4v", "glm4v_text", nullptr},
    {"glm4v_moe", "glm4v_moe_text", nullptr},
    {"glm_ocr", "glm_ocr_text", nullptr},
    // Step 3.7 as serving stacks copy it (aiconfigurator's Step-3.7-Flash); Step3p7Config builds its
    // default language model from such a file, remat reads the keys given
    {"step3p7", "step3p5", "Step3p7Config"},
    // LLaVA 1.5's own release (liuhaotian/llava-v1.5-*: LlavaLlamaForCausalLM, model_type llava)
    {"llava", "llama", "LlavaConfig"},
    // Gemma 3 1B's keys under the wrapper's model_type with Gemma3ForCausalLM (executorch's MediaTek
    // copy): that class's own config, Gemma3TextConfig, reads them when it loads the file
    {"gemma3", "gemma3_text", "Gemma3Config"},
};

const FlatWrapper* find_flat_wrapper(const std::string& wrapper_type) {
  for (const FlatWrapper& w : kFlatWrappers)
    if (wrapper_type == w.wrapper) return &w;
  return nullptr;
}

}  // namespace

std::string flat_text_model_type(const std::string& wrapper_type) {
  const FlatWrapper* w = find_flat_wrapper(wrapper_type);
  return w ? w->text_type : "";
}

std::string flat_text_ignoring_class(const std::string& wrapper_type) {
  const FlatWrapper* w = find_flat_wrapper(wrapper_type);
  return w && w->ignoring_class ? w->ignoring_class : "";
}

std::string wrapper_text_model_type(const std::string& wrapper_type) {
  // transformers 5.17, each wrapper's config class given text_config without a model_type (checked
  // on the GPU machine: AutoConfig.for_model(wrapper, text_config={...}).text_config.model_type)
  static const std::pair<const char*, const char*> kDefaults[] = {
      {"llava", "llama"},
      {"llava_next", "llama"},
      {"llava_onevision", "qwen2"},
      {"mistral3", "mistral"},
      {"qwen3_vl", "qwen3_vl_text"},
      {"qwen3_vl_moe", "qwen3_vl_moe_text"},
      {"llama4", "llama4_text"},
      {"gemma3", "gemma3_text"},
      {"gemma4", "gemma4_text"},
      {"paligemma", "gemma"},
      {"qwen3_5", "qwen3_5_text"},
      {"qwen3_5_moe", "qwen3_5_moe_text"},
      {"kimi_k25", "deepseek_v3"},
      {"lfm2_vl", "lfm2"},
      {"internvl", "qwen2"},
      {"glm4v", "glm4v_text"},
      {"glm4v_moe", "glm4v_moe_text"},
      {"gemma3n", "gemma3n_text"},
      {"mllama", "mllama_text_model"},
      {"gemma4_unified", "gemma4_unified_text"},
      {"emu3", "emu3_text_model"},
      {"step3p7", "step3p5"},
      {"qwen3_asr", "qwen3"},
      {"muse_glimmer", "muse_glimmer_text"},
  };
  for (const auto& [wrapper, text] : kDefaults)
    if (wrapper_type == wrapper) return text;
  return "";
}

bool is_hf_text_config_wrapper(const std::string& model_type) {
  for (const char* w : kTextConfigWrappers)
    if (model_type == w) return true;
  return false;
}

// transformers 5.17's conversion_mapping.py: the model_types whose checkpoint conversion is
// Qwen2-MoE's (_MODEL_TO_CONVERSION_PATTERN), the ones PEFT 0.21 converts LoRA targets for (read on
// the GPU machine's install: examples/hf/peft_moe_targets.py). qwen2_moe itself is not a key there.
bool peft_converts_expert_targets(const std::string& model_type) {
  static constexpr const char* kConverted[] = {
      "afmoe",        "cohere2_moe",    "deepseek_v2",   "deepseek_v3", "deepseek_v32",   "dots1",
      "ernie4_5_moe", "exaone_moe",     "flex_olmo",     "glm4_moe",    "glm4_moe_lite",  "glm4v_moe",
      "glm_moe_dsa",  "hunyuan_v1_moe", "longcat_flash", "mellum",      "minimax",        "minimax_m2",
      "mixtral",      "olmoe",          "qwen3_moe",     "qwen3_next",  "qwen3_omni_moe", "qwen3_omni_moe_thinker",
      "solar_open",
  };
  for (const char* type : kConverted)
    if (model_type == type) return true;
  return false;
}

void note_head_of_architecture(const HfJsonReader& r, const std::vector<std::string>& archs, bool transformers_type,
                               ModelSpec& m) {
  if (archs.empty()) return;
  const std::string& a = archs.front();
  // SpecForge's and SGLang's EAGLE-3 draft heads (LlamaForCausalLMEagle3) build their own layer: q, k and
  // v read the embedding and the target's hidden state side by side, and an fc folds three of the
  // target's layers into one. Under a model_type transformers knows it builds that type's model (what
  // remat counts); under another (kimi_k2 on Kimi K2's draft) nothing builds it but the draft's own code
  if (!transformers_type && a.find("Eagle3") != std::string::npos)
    throw InputError({{r.file, r.path("architectures"), a,
                       "is not a model remat can build: an EAGLE-3 draft head (its layer reads the token "
                       "embedding and the target model's hidden states side by side), which transformers "
                       "does not build"}});
  const auto ends = [&](const char* tail) { return a.ends_with(tail); };
  std::string head;
  if (ends("ForSequenceClassification") || ends("ForRewardModel") || ends("ForTokenClassification"))
    head = "a classifier or reward model (a score head of a few outputs)";
  else if (ends("Model") && !hf_family_of_architecture(a.substr(0, a.size() - 5) + "ForCausalLM").empty())
    head = "the bare model (hidden states, as embedding models use it; no head)";  // MistralModel
  if (head.empty()) return;
  m.notes.push_back("architectures names " + a + ", " + head +
                    ": remat costs the causal LM transformers' AutoModelForCausalLM builds from this config, with "
                    "its LM head (vocabulary x hidden) and the loss over its logits");
}

}  // namespace remat
