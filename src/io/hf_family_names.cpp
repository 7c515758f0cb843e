// Names of Hugging Face model types and architectures beside the family table
// (hf_families.cpp): aliases of a family, architecture classes, multimodal
// wrappers whose language model is text_config, and the types refused by name
// with the construct remat lacks.
#include <array>
#include <utility>

#include "hf_families.hpp"

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
    {"GlmMoeDsaForCausalLM", "glm_moe_dsa"},
    {"DeepseekForCausalLM", "deepseek"},
    {"MiMoForCausalLM", "mimo"},
    {"MiMoV2FlashForCausalLM", "mimo_v2_flash"},
    {"LagunaForCausalLM", "laguna"},
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
    {"ChatGLMModel", "chatglm"},  // ChatGLM2/3's remote code; some copies leave model_type out
    {"ChatGLMForConditionalGeneration", "chatglm"},
};

constexpr std::array kTextConfigWrappers = {
    "llava",    "llava_next", "llava_onevision", "mistral3", "qwen3_vl",       "qwen3_vl_moe", "llama4",
    "gemma3",   "gemma4",     "paligemma",       "qwen3_5",  "qwen3_5_moe",    "kimi_k25",     "lfm2_vl",
    "internvl", "glm4v",      "glm4v_moe",       "gemma3n",  "gemma4_unified", "aria",         "emu3"};

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
    {"zamba2",
     "Mamba-2 layers plus shared attention+MLP blocks reused at several depths, each use with its own LoRA "
     "(Zamba2); remat gives every layer its own weights"},
    {"nemotron-nas",
     "layers of different shapes (block_configs: some without attention, each its own FFN width); remat builds "
     "one layer shape"},
    {"mllama",
     "cross-attention layers over the image (text_config.cross_attention_layers); remat builds self-attention "
     "decoders only"},
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
     "shortcut-connected MoE layers (two attention and two MLP blocks per layer beside one MoE block) with "
     "zero-computation experts; remat builds one attention and one feed-forward per layer"},
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

bool is_hf_text_config_wrapper(const std::string& model_type) {
  for (const char* w : kTextConfigWrappers)
    if (model_type == w) return true;
  return false;
}

}  // namespace remat
