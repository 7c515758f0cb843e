// The table of Hugging Face families. Tied-embedding defaults are those of each
// family's transformers configuration class (PretrainedConfig's default True is
// overridden to False by Llama, Mistral, Qwen2/3, Phi-3, Mixtral, the MoE and
// DeepSeek classes; the Gemma classes keep True).
#include "hf_families.hpp"

#include <array>
#include <utility>

namespace remat {

namespace {

constexpr std::array kFamilies = {
    HfFamily{"llama", false, HfExperts::none, false},
    HfFamily{"mistral", false, HfExperts::none, false},
    HfFamily{"ministral", false, HfExperts::none, false},
    HfFamily{"ministral3", false, HfExperts::none, false},
    HfFamily{"qwen2", false, HfExperts::none, false},
    HfFamily{"qwen3", false, HfExperts::none, false},
    HfFamily{"qwen3_vl_text", false, HfExperts::none, false},
    HfFamily{"qwen2_vl", false, HfExperts::none, true},
    HfFamily{"qwen2_5_vl", false, HfExperts::none, true},
    HfFamily{"phi3", false, HfExperts::none, false},
    HfFamily{"olmo2", false, HfExperts::none, false},
    HfFamily{"granite", false, HfExperts::none, false},
    HfFamily{"internlm2", false, HfExperts::none, false},
    HfFamily{"gemma", true, HfExperts::none, false},
    HfFamily{"gemma2", true, HfExperts::none, false},
    HfFamily{"gemma3_text", true, HfExperts::none, false},
    HfFamily{"mixtral", false, HfExperts::mixtral, false},
    HfFamily{"gpt_oss", false, HfExperts::mixtral, false},
    HfFamily{"olmoe", false, HfExperts::olmoe, false},
    HfFamily{"qwen2_moe", false, HfExperts::qwen, false},
    HfFamily{"qwen3_moe", false, HfExperts::qwen, false},
    HfFamily{"qwen3_vl_moe_text", false, HfExperts::qwen, false},
    HfFamily{"deepseek_v2", false, HfExperts::deepseek, false},
    HfFamily{"deepseek_v3", false, HfExperts::deepseek, false},
    HfFamily{"llama4_text", false, HfExperts::llama4, false},
};

constexpr std::array kTextConfigWrappers = {"llava",     "llava_next",   "llava_onevision", "mistral3",
                                            "qwen3_vl",  "qwen3_vl_moe", "llama4",          "gemma3",
                                            "paligemma", "qwen3_5",      "qwen3_5_moe"};

const char* kEncoder = "an encoder or encoder-decoder model (bidirectional attention); remat plans causal decoder LLMs";
const char* kTwoMatrixMlp =
    "its MLP is two matrices with a GELU, not gated; remat's layer has a gated three-matrix MLP only";
const char* kLinearAttention =
    "layer_types has linear_attention (Gated DeltaNet) layers beside attention; remat models attention layers only";
const char* kMamba = "mixes Mamba (state-space) layers with attention; remat models attention layers only";

const std::array<std::pair<const char*, const char*>, 37> kRefused = {{
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
    {"gpt2", kTwoMatrixMlp},
    {"gpt_bigcode", kTwoMatrixMlp},
    {"starcoder2", kTwoMatrixMlp},
    {"phi", kTwoMatrixMlp},
    {"gpt_neox", kTwoMatrixMlp},
    {"gptj", kTwoMatrixMlp},
    {"opt", kTwoMatrixMlp},
    {"bloom", kTwoMatrixMlp},
    {"falcon", kTwoMatrixMlp},
    {"qwen3_next", kLinearAttention},
    {"qwen3_5_text", kLinearAttention},
    {"qwen3_5_moe_text", kLinearAttention},
    {"nemotron_h",
     "hybrid_override_pattern mixes Mamba-2, MLP or MoE and attention blocks layer by layer; remat models "
     "attention layers only"},
    {"jamba", kMamba},
    {"falcon_h1", kMamba},
    {"zamba2", kMamba},
    {"bamba", kMamba},
    {"granitemoehybrid", kMamba},
    {"lfm2", "mixes short convolution layers with attention (layer_types); remat models attention layers only"},
    {"mamba", "a state-space model without attention; remat models attention layers only"},
    {"mamba2", "a state-space model without attention; remat models attention layers only"},
    {"nemotron-nas",
     "block_configs give each layer its own attention and FFN shape (some layers have no attention); remat "
     "models one layer shape"},
    {"mllama",
     "text_config.cross_attention_layers add cross-attention layers over the image; remat models self-attention "
     "decoders only"},
}};

}  // namespace

const HfFamily* find_hf_family(const std::string& model_type) {
  for (const auto& f : kFamilies)
    if (model_type == f.model_type) return &f;
  return nullptr;
}

std::string hf_refusal_reason(const std::string& model_type) {
  for (const auto& [type, reason] : kRefused)
    if (model_type == type) return reason;
  return "";
}

bool is_hf_text_config_wrapper(const std::string& model_type) {
  for (const char* w : kTextConfigWrappers)
    if (model_type == w) return true;
  return false;
}

}  // namespace remat
