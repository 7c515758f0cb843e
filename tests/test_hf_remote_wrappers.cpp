// Remote-code configs whose layers remat builds: MiniCPM-V's language model (its keys at the top,
// read as the model its modeling code builds for the config's version), VILA's llm_cfg, and
// TeleChat's LLaMA-like layers with their own biases. Counts by hand from the keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "remat/cost/params.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kMiniCpmV = R"({"model_type": "minicpmv", "architectures": ["MiniCPMV"], "hidden_size": 64,
  "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
  "vocab_size": 100, "query_num": 64, "tie_word_embeddings": false, "head_dim": 16)";

ModelSpec minicpmv(const std::string& version) {
  return parse_hf_config(kMiniCpmV + (version.empty() ? "" : R"(, "version": )" + version) + "}", "v.json");
}

// A layer by hand: q, k, v, o (64 x 64, 64 x 32 twice, 64 x 64), two norms, a SwiGLU of 128; the
// model adds an untied head, its embedding and the final norm.
constexpr double kLayer = 2 * 64.0 * 64 + 2 * 64.0 * 32 + 2 * 64 + 3 * 64.0 * 128;
constexpr double kOutside = 2 * 100.0 * 64 + 64;

TEST(HfRemoteWrappers, MiniCpmVLanguageModelByVersion) {
  // 2.5 and 4.0: LLaMA; no version (hidden_size not 2304): 2.5
  for (const std::string version : {"2.5", "4.0", "\"4.0\"", ""})
    EXPECT_DOUBLE_EQ(model_params(minicpmv(version), 2), 2 * kLayer + kOutside) << version;
  // 2.6: Qwen2, biases on q, k and v
  const ModelSpec qwen2 = minicpmv("2.6");
  EXPECT_TRUE(qwen2.qkv_bias);
  EXPECT_DOUBLE_EQ(model_params(qwen2, 2), 2 * (kLayer + 64 + 32 + 32) + kOutside);
  // 4.5: Qwen3, q and k norms of head_dim 16
  const ModelSpec qwen3 = minicpmv("4.5");
  EXPECT_EQ(qwen3.qk_norm, QkNorm::shared);
  EXPECT_DOUBLE_EQ(model_params(qwen3, 2), 2 * (kLayer + 2 * 16) + kOutside);
  EXPECT_EQ(test::hf_rejection(kMiniCpmV + R"(, "version": 3.1})", "v.json"),
            "v.json: version: is not a model remat can build: MiniCPM-V of a version whose language model remat "
            "does not know (2.0, 2.5, 2.6, 4.0, 4.5) (got 3.1)");
}

TEST(HfRemoteWrappers, RealConfigsAtTheirLanguageModelsCount) {
  const auto load = [](const std::string& name) {
    const std::string file = std::string(REMAT_TEST_DATA) + "/data/hf_configs/" + name + ".json";
    return parse_hf_config(test::read_text(file), name + ".json");
  };
  const ModelSpec minicpm = load("minicpm-v-4");
  EXPECT_DOUBLE_EQ(model_params(minicpm, minicpm.num_hidden_layers), 3'605'834'240.0);
  const ModelSpec vila = load("vila1.5-3b");
  EXPECT_EQ(vila.name, "./vlm (language model: llm_cfg)");
  EXPECT_DOUBLE_EQ(model_params(vila, vila.num_hidden_layers), 2'701'560'320.0);
}

// TeleChat (remote code): n_layer, n_head, ffn_hidden_size; a bias on dense (o) and on down_proj only;
// tied unless tie_word_embeddings is false; hidden_dropout before each residual add.
TEST(HfRemoteWrappers, TeleChatBiasesAndHead) {
  const std::string base = R"({"model_type": "telechat", "architectures": ["TelechatForCausalLM"], "hidden_size": 64,
    "n_head": 4, "n_layer": 2, "ffn_hidden_size": 128, "vocab_size": 100, "hidden_dropout": 0.1, "flash_attn": true)";
  const ModelSpec tied = parse_hf_config(base + "}", "t.json");
  EXPECT_TRUE(tied.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(tied.residual_dropout, 0.1);
  // a layer: query, key_value (64 x 128), dense with its bias, two norms, gate and up, down with its bias
  const double layer = 64.0 * 64 + 64.0 * 128 + 64.0 * 64 + 64 + 2 * 64 + 3 * 64.0 * 128 + 64;
  EXPECT_DOUBLE_EQ(model_params(tied, 2), 2 * layer + 100.0 * 64 + 64);
  const ModelSpec untied = parse_hf_config(base + R"(, "tie_word_embeddings": false})", "t.json");
  EXPECT_DOUBLE_EQ(model_params(untied, 2), 2 * layer + 2 * 100.0 * 64 + 64);
  EXPECT_EQ(test::hf_rejection(base + R"(, "apply_residual_connection_post_layernorm": true})", "t.json"),
            "t.json: apply_residual_connection_post_layernorm: is not a model remat can build: the residual taken "
            "after each norm, not before it (got true)");
  // the real checkpoints' weight indexes (Tele-AI/Telechat): 7,200,018,432 and 12,386,432,000
  for (const auto& [name, count] : {std::pair{"telechat-7b", 7'200'018'432.0}, {"telechat-12b-v2", 12'386'432'000.0}}) {
    const std::string file = std::string(REMAT_TEST_DATA) + "/data/hf_configs/" + name + ".json";
    const ModelSpec m = parse_hf_config(test::read_text(file), file);
    EXPECT_DOUBLE_EQ(model_params(m, m.num_hidden_layers), count) << name;
  }
}

// Hunyuan's remote code (model_type hunyuan, Tencent-Hunyuan/Hunyuan-A13B models/modeling_hunyuan.py):
// experts of intermediate_size whatever moe_intermediate_size says, a shared MLP of intermediate_size x
// num_shared_expert[0] only under use_mixed_mlp_moe, q/k norms under use_qk_norm; cross-layer
// attention refused.
TEST(HfRemoteWrappers, HunyuanRemoteCode) {
  const std::string base = R"({"model_type": "hunyuan", "architectures": ["HunYuanMoEV1ForCausalLM"],
    "hidden_size": 64, "intermediate_size": 32, "moe_intermediate_size": [48, 48], "num_attention_heads": 4,
    "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 100, "num_experts": 4, "moe_topk": [2, 2],
    "tie_word_embeddings": true, "use_qk_norm": true)";
  const ModelSpec m = parse_hf_config(base + R"(, "use_mixed_mlp_moe": true, "num_shared_expert": [2, 2]})", "h.json");
  EXPECT_EQ(m.moe_intermediate_size, 32);
  EXPECT_EQ(m.shared_mlp_width(), 64);
  // a layer: q, k, v, o; q/k norms of 16; two norms; router; 4 experts and the shared MLP (3 x 64 x 32 each, x2)
  const double attention = 2 * 64.0 * 64 + 2 * 64.0 * 32 + 2 * 16 + 2 * 64;
  const double moe = 64.0 * 4 + 4 * 3 * 64.0 * 32 + 3 * 64.0 * 64;
  EXPECT_DOUBLE_EQ(model_params(m, 2), 2 * (attention + moe) + 100.0 * 64 + 64);
  const ModelSpec without = parse_hf_config(base + R"(, "use_mixed_mlp_moe": false})", "h.json");
  EXPECT_EQ(without.n_shared_experts, 0);
  EXPECT_EQ(test::hf_rejection(base + R"(, "use_cla": true, "cla_share_factor": 2})", "h.json"),
            "h.json: use_cla: is not a model remat can build: cross-layer attention (each cla_share_factor layers "
            "share one layer's keys and values) (got true)");
  const std::string file = std::string(REMAT_TEST_DATA) + "/data/hf_configs/hunyuan-a13b-instruct.json";
  const ModelSpec a13b = parse_hf_config(test::read_text(file), file);
  EXPECT_DOUBLE_EQ(model_params(a13b, a13b.num_hidden_layers), 80'393'183'232.0);
}

// A flat config's vision tower beside the language model is named in a note (GLM-4V's vision_config,
// Qwen-VL's visual); ChatGLM's layernorm_epsilon is the norm epsilon; Qwen (1)'s no_bias false puts
// biases on c_proj and the MLP, rotary_pct rotates part of each head.
TEST(HfRemoteWrappers, FlatEncodersChatGlmEpsilonAndQwenOneKeys) {
  const ModelSpec glm = parse_hf_config(R"({"model_type": "chatglm", "hidden_size": 64, "num_layers": 2,
    "ffn_hidden_size": 128, "num_attention_heads": 4, "padded_vocab_size": 100, "kv_channels": 16,
    "layernorm_epsilon": 1.5625e-07, "vision_config": {"hidden_size": 32}})",
                                        "g.json");
  EXPECT_DOUBLE_EQ(glm.norm_eps, 1.5625e-07);
  EXPECT_NE(std::find(glm.notes.begin(), glm.notes.end(),
                      "the language model's keys at the top are read; the encoders and projectors beside it "
                      "(vision_config) are not counted"),
            glm.notes.end());
  const std::string qwen = R"({"model_type": "qwen", "hidden_size": 64, "num_hidden_layers": 2,
    "intermediate_size": 256, "num_attention_heads": 4, "kv_channels": 16, "vocab_size": 100)";
  const ModelSpec biased = parse_hf_config(qwen + R"(, "no_bias": false, "rotary_pct": 0.5})", "q.json");
  EXPECT_TRUE(biased.o_bias);
  EXPECT_TRUE(biased.mlp_bias);
  EXPECT_DOUBLE_EQ(biased.rotary_fraction, 0.5);
  const ModelSpec plain = parse_hf_config(qwen + "}", "q.json");
  // c_proj's bias (64), w1's and w2's (128 each) and the MLP's c_proj's (64), per layer
  EXPECT_DOUBLE_EQ(model_params(biased, 2) - model_params(plain, 2), 2 * (64 + 2 * 128 + 64));
}

// Phi-2's remote code in both of its releases reads GPT-2's names: phi-msft, and mixformer-sequential
// where its `architecture` picks parallel blocks; another block class is refused by name.
TEST(HfRemoteWrappers, PhiRemoteCodeUnderGptTwoNames) {
  const std::string keys = R"("n_embd": 64, "n_head": 4, "n_layer": 2, "n_inner": null, "rotary_dim": 8,
    "vocab_size": 100, "activation_function": "gelu_new", "tie_word_embeddings": false)";
  // a layer: Wqkv and out_proj with bias, fc1/fc2 of 4 x 64 with bias, one LayerNorm with bias; the
  // head a LayerNorm and a Linear with bias
  const double layer = 4 * (64.0 * 64 + 64) + 2 * 64.0 * 256 + 256 + 64 + 2 * 64;
  const double outside = 100.0 * 64 + 2 * 64 + 100.0 * 64 + 100;
  const ModelSpec msft = parse_hf_config(R"({"model_type": "phi-msft", )" + keys + "}", "p.json");
  EXPECT_DOUBLE_EQ(model_params(msft, 2), 2 * layer + outside);
  EXPECT_DOUBLE_EQ(msft.rotary_fraction, 0.5);  // 8 of head_dim 16
  const std::string mixformer = R"({"model_type": "mixformer-sequential", )" + keys;
  const ModelSpec parallel = parse_hf_config(
      mixformer + R"(, "architecture": {"block_cls": "parallel", "mlp": {"mlp_cls": "fused_mlp"}}})", "m.json");
  EXPECT_DOUBLE_EQ(model_params(parallel, 2), 2 * layer + outside);
  // the same keys under a model_type remat knows only by its architecture: phi's defaults are not
  // this code's, so the missing hidden_size is refused (it was read as 2048 before)
  const std::string other = R"({"model_type": "phi-custom", "architectures": ["PhiForCausalLM"], )" + keys + "}";
  EXPECT_NE(test::hf_rejection(other, "o.json")
                .find("o.json: hidden_size: required key is missing: model_type phi-custom is read as phi, whose "
                      "defaults need not be this configuration's"),
            std::string::npos);
  EXPECT_EQ(
      test::hf_rejection(mixformer + R"(, "architecture": {"block_cls": "sequential"}})", "m.json"),
      R"(m.json: architecture: is not a model remat can build: MixFormer blocks other than parallel (got {"block_cls":"sequential"}))");
}

// Qwen3-ASR as released keeps its language model in thinker_config.text_config (qwen3_asr_text, read
// as Qwen3); the audio encoder beside it is not counted, and a note says transformers 5.17 builds
// its default language model from such a file.
TEST(HfRemoteWrappers, QwenAsrThinkerTextConfig) {
  const ModelSpec m = parse_hf_config(R"({"model_type": "qwen3_asr", "thinker_config": {"audio_config": {},
    "text_config": {"model_type": "qwen3_asr_text", "hidden_size": 64, "intermediate_size": 128,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "num_hidden_layers": 2, "vocab_size": 100,
    "tie_word_embeddings": true}}})",
                                      "a.json");
  EXPECT_DOUBLE_EQ(model_params(m, 2), 2 * (kLayer + 2 * 16) + 100.0 * 64 + 64);  // Qwen3's q/k norms, tied
  EXPECT_TRUE(std::any_of(m.notes.begin(), m.notes.end(), [](const std::string& note) {
    return note.find("transformers 5.17's Qwen3ASRConfig reads a top-level text_config only") != std::string::npos;
  }));
}

// A wrapper's text_config without a model_type is the text config its class builds (transformers
// 5.17: mllama -> MllamaTextConfig, llava -> LlamaConfig); a wrapper remat has no default for
// still requires it.
TEST(HfRemoteWrappers, NestedTextConfigWithoutModelTypeIsTheWrappersOwn) {
  const std::string text = R"("hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
      "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 100, "tie_word_embeddings": false)";
  const ModelSpec llava = parse_hf_config(R"({"model_type": "llava", "text_config": {)" + text + "}}", "l.json");
  EXPECT_DOUBLE_EQ(model_params(llava, 2), 2 * kLayer + kOutside);
  EXPECT_NE(std::find(llava.notes.begin(), llava.notes.end(),
                      "text_config.model_type is absent: read as llama, the text config transformers' llava builds"),
            llava.notes.end());
  const ModelSpec mllama = parse_hf_config(
      R"({"model_type": "mllama", "text_config": {"cross_attention_layers": [1], )" + text + "}}", "m.json");
  EXPECT_EQ(mllama.notes.front(),
            "text_config.model_type is absent: read as mllama_text_model, the text config transformers' mllama "
            "builds");
  EXPECT_EQ(test::hf_rejection(R"({"model_type": "aria", "text_config": {)" + text + "}}", "a.json"),
            "a.json: text_config.model_type: required key is missing");
}

// LLaVA 1.5 as its own repository saves it (LlavaLlamaForCausalLM, model_type llava): LLaMA's keys at
// the top, read as llama with a note (transformers' LlavaConfig would build its default instead).
TEST(HfRemoteWrappers, LlavaWithLlamasKeysAtTheTopReadsThem) {
  const ModelSpec m = parse_hf_config(R"({"model_type": "llava", "architectures": ["LlavaLlamaForCausalLM"],
      "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
      "num_hidden_layers": 2, "vocab_size": 100, "tie_word_embeddings": false, "head_dim": 16,
      "mm_hidden_size": 1024, "mm_projector_type": "mlp2x_gelu"})",
                                      "l.json");
  EXPECT_DOUBLE_EQ(model_params(m, 2), 2 * kLayer + kOutside);
  EXPECT_EQ(m.notes.front(),
            "model_type llava without text_config: the language model's keys at the top are read as llama; "
            "transformers 5.17's LlavaConfig reads text_config only, and from this file builds its default "
            "language model");
}

}  // namespace
}  // namespace remat
