// Hugging Face config.json files as users have them: the committed corpus
// (tests/data/hf_configs/manifest.json) either loads within 0.5% of the
// published parameter count or is refused with its exact message; the
// loader's MoE layer rules, text_config, tied-embedding defaults, MTP and
// non-finite numbers on small configs.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "remat/cost/params.hpp"
#include "remat/cost/stage_model.hpp"
#include "remat/spec/framework.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

std::string corpus_dir() { return std::string(REMAT_TEST_DATA) + "/data/hf_configs/"; }

using test::moe_layers;
std::string rejection(const std::string& text, const std::string& label) { return test::hf_rejection(text, label); }

TEST(HfCorpus, EveryFileLoadsWithinHalfAPercentOrIsRefusedByName) {
  const auto manifest = nlohmann::json::parse(test::read_text(corpus_dir() + "manifest.json"));
  ASSERT_GE(manifest.size(), 30u);
  int loads = 0, refusals = 0;
  for (const auto& entry : manifest) {
    const std::string file = entry.at("file");
    const std::string text = test::read_text(corpus_dir() + file);
    ASSERT_FALSE(text.empty()) << file;
    ASSERT_FALSE(entry.at("source").at("repository").get<std::string>().empty()) << file;
    if (entry.at("expect") == "load") {
      ++loads;
      const std::string why = rejection(text, file);
      ASSERT_EQ(why, "") << file;
      const ModelSpec m = parse_hf_config(text, file);
      const double published = entry.at("published_params").get<double>();
      // a published total with the MTP module in it (DeepSeek's and GLM's Hub totals)
      const double mtp = entry.value("published_includes_mtp", false) ? mtp_params(m, 1, 1).total() : 0;
      EXPECT_NEAR((model_params(m, m.num_hidden_layers) + mtp) / published, 1.0, 0.005) << file;
    } else {
      ++refusals;
      EXPECT_EQ(rejection(text, file), entry.at("message").get<std::string>()) << file;
    }
  }
  EXPECT_GE(loads, 30);
  EXPECT_GE(refusals, 3);
}

// Every model type transformers 5.17 builds as a causal LM (or whose multimodal model has a
// language model), from its config class's defaults as transformers saves them, with the count
// of the model transformers built (tests/data/hf_transformers_defaults.jsonl, written by
// examples/hf/count_params.py --whole --defaults): remat loads it within 0.1% of that count
// (multi-token prediction modules left out, as transformers builds none), or refuses it with a
// one-line reason that names no source file.
TEST(HfCorpus, TransformersDefaultConfigsLoadAtItsCountOrAreRefused) {
  std::istringstream lines(test::read_text(std::string(REMAT_TEST_DATA) + "/data/hf_transformers_defaults.jsonl"));
  std::string line;
  int loads = 0, refusals = 0;
  while (std::getline(lines, line)) {
    const auto row = nlohmann::json::parse(line);
    if (!row.contains("model_type")) continue;  // the versions line
    const std::string label = row.at("model_type").get<std::string>() + ".json";
    const std::string text = row.at("config").dump();
    const std::string why = rejection(text, label);
    if (row.at("expect") == "refuse") {
      ++refusals;
      EXPECT_NE(why, "") << label;
      EXPECT_EQ(why.find(".cpp"), std::string::npos) << why;
      EXPECT_EQ(why.find('\n'), std::string::npos) << why;
      EXPECT_EQ(why.find("..."), std::string::npos) << why;  // the reason whole, not cut at the message limit
      continue;
    }
    ++loads;
    ASSERT_EQ(why, "") << label;
    ModelSpec m = parse_hf_config(text, label);
    m.num_nextn_predict_layers = 0;
    // transformers_params_reloaded: the count transformers builds from the saved config.json, where
    // its in-memory defaults build another (Nemotron-H's defaults tie the head; the file does not)
    const char* count_key =
        row.contains("transformers_params_reloaded") ? "transformers_params_reloaded" : "transformers_params";
    EXPECT_NEAR(model_params(m, m.num_hidden_layers) / row.at(count_key).get<double>(), 1.0, 0.001) << label;
  }
  EXPECT_GE(loads, 154);  // Muse-Glimmer's language model: 2026-11-29, eighteenth session
  EXPECT_EQ(loads + refusals, 226);
}

// Heads that do not divide hidden_size, head_dim absent: transformers' attention takes hidden_size //
// num_attention_heads (GLM-4-MoE's config class defaults, 4096 / 96 = 42), so remat does, with a note:
// q and o 64 x (6 x 10), k and v 64 x (2 x 10).
TEST(HfCorpus, HeadDimFlooredWhereHeadsDoNotDivideHidden) {
  const ModelSpec m = parse_hf_config(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
      "num_attention_heads": 6, "num_key_value_heads": 2, "vocab_size": 100, "num_hidden_layers": 1})",
                                      "c.json");
  EXPECT_EQ(m.head_dim, 10);
  EXPECT_DOUBLE_EQ(layer_params(m, 0, 1, 1).total(), 2 * 64 * 60 + 2 * 64 * 20 + 3 * 64 * 128 + 2 * 64);
  ASSERT_FALSE(m.notes.empty());
  EXPECT_NE(m.notes.back().find("10 = hidden_size // num_attention_heads"), std::string::npos) << m.notes.back();
}

// A transformers 5 re-save spells some keys by the config class's canonical name: Qwen3-MoE's
// num_experts as num_local_experts; a key given as null is named as such.
TEST(HfCorpus, KeysUnderTheirOtherNamesAndNullRequiredKeys) {
  const std::string base = R"({"model_type": "qwen3_moe", "hidden_size": 64, "intermediate_size": 256,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100, "num_hidden_layers": 2,
      "moe_intermediate_size": 32, )";
  const ModelSpec resaved = parse_hf_config(base + R"("num_local_experts": 8, "num_experts_per_tok": 2})", "c.json");
  const ModelSpec original = parse_hf_config(base + R"("num_experts": 8, "num_experts_per_tok": 2})", "c.json");
  EXPECT_EQ(resaved.n_routed_experts, 8);
  EXPECT_EQ(model_params(resaved, 2), model_params(original, 2));
  EXPECT_EQ(rejection(base + R"("num_experts": 8, "num_experts_per_tok": null})", "c.json"),
            "c.json: num_experts_per_tok: must be an integer (null leaves it unset: the model cannot be built "
            "without it) (got null)");
  // Qwen3.5-MoE's text config has no intermediate_size: every layer is MoE
  const ModelSpec all_moe = parse_hf_config(R"({"model_type": "qwen3_moe", "hidden_size": 64,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100, "num_hidden_layers": 2,
      "moe_intermediate_size": 32, "num_experts": 8, "num_experts_per_tok": 2})",
                                            "c.json");
  EXPECT_EQ(all_moe.intermediate_size, 32);
  EXPECT_EQ(rejection(R"({"model_type": "qwen3_moe", "hidden_size": 64, "num_attention_heads": 4,
      "vocab_size": 100, "num_hidden_layers": 2, "moe_intermediate_size": 32, "num_experts": 8,
      "num_experts_per_tok": 2, "mlp_only_layers": [0]})",
                      "c.json"),
            "c.json: intermediate_size: required key is missing");
}

// Older and remote-code spellings: Qwen (1)'s first revisions (n_embd, n_head, n_layer,
// ffn_hidden_size), StableLM's remote code (stablelm_epoch, rope_pct), ChatGLM by its
// architecture alone, a quantized checkpoint noted.
TEST(HfCorpus, OlderSpellingsLoadAsTheirFamily) {
  const ModelSpec qwen = parse_hf_config(R"({"model_type": "qwen", "n_embd": 64, "n_head": 4, "n_layer": 2,
      "ffn_hidden_size": 256, "vocab_size": 100})",
                                         "q.json");
  EXPECT_EQ(qwen.hidden_size, 64);
  EXPECT_EQ(qwen.num_hidden_layers, 2);
  EXPECT_EQ(qwen.intermediate_size, 128);  // w1 and w2 of ffn_hidden_size / 2
  const ModelSpec epoch = parse_hf_config(R"({"model_type": "stablelm_epoch", "hidden_size": 64,
      "intermediate_size": 128, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 100,
      "rope_pct": 0.5})",
                                          "s.json");
  EXPECT_DOUBLE_EQ(epoch.rotary_fraction, 0.5);
  EXPECT_EQ(epoch.norm_kind, NormKind::layer);
  const ModelSpec glm = parse_hf_config(R"({"architectures": ["ChatGLMModel"], "hidden_size": 64,
      "ffn_hidden_size": 128, "num_attention_heads": 4, "num_layers": 2, "padded_vocab_size": 100,
      "kv_channels": 16, "multi_query_attention": true, "multi_query_group_num": 2, "add_qkv_bias": true,
      "quantization_bit": 4})",
                                        "g.json");
  EXPECT_EQ(glm.num_key_value_heads, 2);
  EXPECT_NE(glm.notes.back().find("the checkpoint is quantized (quantization_bit 4)"), std::string::npos);
}

// transformers' Qwen2MoeDecoderLayer: MoE where (i + 1) % decoder_sparse_step == 0
// and i is not in mlp_only_layers.
TEST(HfCorpus, DecoderSparseStepTwoMakesOddLayersMoe) {
  const std::string base =
      R"({"model_type": "qwen2_moe", "hidden_size": 64, "intermediate_size": 256, "num_attention_heads": 4,
          "vocab_size": 100, "num_hidden_layers": 6, "num_experts": 4, "num_experts_per_tok": 2,
          "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64, "decoder_sparse_step": 2)";
  const ModelSpec m = parse_hf_config(base + "}", "q.json");
  EXPECT_EQ(moe_layers(m), (std::vector<int64_t>{1, 3, 5}));
  EXPECT_EQ(m.n_shared_experts, 2);  // 64 / 32
  const ModelSpec only = parse_hf_config(base + R"(, "mlp_only_layers": [3]})", "q.json");
  EXPECT_EQ(moe_layers(only), (std::vector<int64_t>{1, 5}));
  // dense layer: 3 h ffn = 3*64*256; MoE layer: router 64*4 + shared 2*3*64*32 + the shared expert's
  // gate 64 x 1 + routed 4*3*64*32
  EXPECT_DOUBLE_EQ(layer_params(m, 0, 1, 1).total() - layer_params(m, 1, 1, 1).total(),
                   3.0 * 64 * 256 - (64.0 * 4 + 2 * 3 * 64 * 32 + 64 + 4 * 3 * 64 * 32));
  // a shared MLP no multiple of the experts' width is one shared expert of its own width
  std::string odd = base;  // a repeated key is refused: the value itself is changed
  odd.replace(odd.find("\"shared_expert_intermediate_size\": 64"), 37, "\"shared_expert_intermediate_size\": 48");
  const ModelSpec narrow = parse_hf_config(odd + "}", "q.json");
  EXPECT_EQ(narrow.n_shared_experts, 1);
  EXPECT_EQ(narrow.shared_mlp_width(), 48);
  EXPECT_DOUBLE_EQ(layer_params(narrow, 0, 1, 1).total() - layer_params(narrow, 1, 1, 1).total(),
                   3.0 * 64 * 256 - (64.0 * 4 + 3 * 64 * 48 + 64 + 4 * 3 * 64 * 32));
}

TEST(HfCorpus, FirstKDenseReplaceAndMtpOfDeepSeekV3) {
  const ModelSpec m = parse_hf_config(test::read_text(corpus_dir() + "deepseek-v3.json"), "v3.json");
  const auto moe = moe_layers(m);
  ASSERT_EQ(moe.size(), 58u);  // 61 layers, the first 3 dense
  EXPECT_EQ(moe.front(), 3);
  EXPECT_EQ(moe.back(), 60);
  EXPECT_EQ(m.num_nextn_predict_layers, 1);
  // MTP module: MLA (q_a + norm + q_b, kv_a + norm + kv_b, o, input norm), router, shared and
  // 256 routed experts, post-attention norm, eh_proj 2h x h, enorm, hnorm, the head's norm.
  const double h = 7168;
  const double mla =
      h * 1536 + 1536 + 1536 * 128 * 192.0 + h * (512 + 64) + 512 + 512 * 128 * 256.0 + 128 * 128 * h + h;
  const double moe_ffn = h * 256 + 3 * h * 2048 + 256 * 3 * h * 2048 + h;
  EXPECT_DOUBLE_EQ(mtp_params(m, 1, 1).total(), mla + moe_ffn + 2 * h * h + 3 * h);
  // the model's count is the one transformers' DeepseekV3ForCausalLM builds (no MTP module):
  // 671,026,404,352 (examples/hf/count_params.py, reports/hf/param-counts-realcfg2-h200.jsonl)
  ModelSpec no_mtp = m;
  no_mtp.num_nextn_predict_layers = 0;
  EXPECT_DOUBLE_EQ(model_params(m, 61), model_params(no_mtp, 61));
  EXPECT_DOUBLE_EQ(model_params(m, 61), 671026404352);
  EXPECT_DOUBLE_EQ(model_params(no_mtp, 61), model_params(test::model("deepseek-v3"), 61));
  // Megatron-LM trains the module (--mtp-num-layers); transformers' class builds none, so under
  // --framework hf the model has no MTP layer, with a note saying so
  EXPECT_EQ(model_as_built(m, kMegatronLocalFramework).num_nextn_predict_layers, 1);
  const ModelSpec hf = model_as_built(m, kHfFramework);
  EXPECT_EQ(hf.num_nextn_predict_layers, 0);
  EXPECT_EQ(hf.notes.back(),
            "--framework hf builds no multi-token prediction modules: the model's 1 are left out of its memory and "
            "time");
}

// Stages get the layers the rule says: MTP weights on the last stage only; with
// decoder_sparse_step 2 the stage of layers 0-2 holds one MoE layer (1), 3-5 two (3, 5).
TEST(HfCorpus, StagesCarryTheirOwnLayersAndTheMtpModule) {
  const HardwareSpec hw = test::hardware("h200");
  TrainingSpec t = test::layout(1, 16, 128, 64, 1, 4096);
  const ModelSpec hf = parse_hf_config(test::read_text(corpus_dir() + "deepseek-v3.json"), "v3.json");
  const ModelSpec yaml = test::model("deepseek-v3");
  const auto ranges = stage_layer_ranges(hf, t);
  for (int64_t i : {0, 15}) {
    const StageBase a = stage_base(hf, hw, t, rank_shape(t), i, ranges[size_t(i)]);
    const StageBase b = stage_base(yaml, hw, t, rank_shape(t), i, ranges[size_t(i)]);
    const ParamCount mtp = i == 15 ? mtp_params(hf, 1, 64) : ParamCount{};
    EXPECT_DOUBLE_EQ(a.params.dense - b.params.dense, mtp.dense) << i;
    EXPECT_DOUBLE_EQ(a.params.expert - b.params.expert, mtp.expert) << i;
  }
  const ModelSpec q = parse_hf_config(
      R"({"model_type": "qwen3_moe", "hidden_size": 64, "intermediate_size": 256, "num_attention_heads": 4,
          "vocab_size": 100, "num_hidden_layers": 6, "num_experts": 4, "num_experts_per_tok": 2,
          "moe_intermediate_size": 32, "decoder_sparse_step": 2})",
      "q.json");
  t = test::layout(1, 2, 1, 1, 1, 128);
  const double routed = 4 * 3 * 64 * 32.0;  // one MoE layer's experts
  EXPECT_DOUBLE_EQ(stage_base(q, hw, t, rank_shape(t), 0, {0, 3}).params.expert, routed);
  EXPECT_DOUBLE_EQ(stage_base(q, hw, t, rank_shape(t), 1, {3, 6}).params.expert, 2 * routed);
}

TEST(HfCorpus, GptOssExpertsAndSlidingWindowNote) {
  const ModelSpec m = parse_hf_config(test::read_text(corpus_dir() + "gpt-oss-120b.json"), "oss.json");
  EXPECT_EQ(m.n_routed_experts, 128);
  EXPECT_EQ(m.num_experts_per_tok, 4);
  EXPECT_EQ(m.moe_intermediate_size, 2880);
  EXPECT_EQ(moe_layers(m).size(), 36u);
  ASSERT_EQ(m.notes.size(), 2u);
  EXPECT_EQ(m.notes[1],
            "the checkpoint is quantized (mxfp4): its weights are costed at the run's --precision (as after loading "
            "them to train), not at the stored width");
  EXPECT_EQ(m.notes[0],
            "sliding_window = 128 on 18 of 36 layers: attention FLOPs and time are counted over the full causal "
            "sequence (an overestimate when --seq is longer; under --framework hf's sdpa such a layer computes the "
            "whole square and keeps its own s x s mask and repeated keys and values, which remat counts)");
}

// GptOssAttention.sinks (one per head), GptOssTopKRouter.bias and GptOssExperts' gate_up_proj_bias and
// down_proj_bias, which an earlier count left out (-0.03%): transformers 5.17 counts 20,914,757,184.
TEST(HfCorpus, GptOssCountsSinksAndExpertAndRouterBiases) {
  const ModelSpec m = parse_hf_config(test::read_text(corpus_dir() + "gpt-oss-20b.json"), "oss.json");
  const double h = 2880, experts = 32, width = 2880;
  const double attention = 64 * 64 * h + 64 * 64 + 2 * (8 * 64 * h + 8 * 64) + 64 * 64 * h + h + 64;  // q k v o, sinks
  const double moe = experts * h + experts + experts * (3 * width * h + 2 * width + h);               // router, experts
  const double layer = attention + moe + 2 * h;                                                       // two norms
  EXPECT_DOUBLE_EQ(layer_params(m, 0, 1, 1).total(), layer);
  EXPECT_DOUBLE_EQ(layer, 823186976);
  EXPECT_DOUBLE_EQ(model_params(m, m.num_hidden_layers), 24 * layer + 2 * 201088 * h + h);
  EXPECT_DOUBLE_EQ(model_params(m, m.num_hidden_layers), 20914757184);
  // over ep 4 the experts' biases split with them
  EXPECT_DOUBLE_EQ(layer_params(m, 0, 1, 4).expert, experts * (3 * width * h + 2 * width + h) / 4);
}

// A key no reader asks for is named in a note (a checkpoint's remote code may add a construct under a
// model type remat knows); generation, tokenizer and initialisation settings, and constructs switched
// off, are not.
TEST(HfCorpus, KeysNoReaderAsksForAreNamed) {
  const std::string base = R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
      "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100, "num_hidden_layers": 2,
      "bos_token_id": 1, "initializer_range": 0.02, "use_cache": true, "torch_dtype": "bfloat16",
      "attention_bias": false, "mlp_bias": false, "tie_word_embeddings": false, "pretraining_tp": 1)";
  const auto unread_note = [](const ModelSpec& m) {
    for (const std::string& note : m.notes)
      if (note.find("remat does not read") != std::string::npos) return note;
    return std::string();
  };
  EXPECT_EQ(unread_note(parse_hf_config(base + "}", "c.json")), "");
  EXPECT_EQ(
      unread_note(parse_hf_config(base + R"(, "attn_res_block_size": 12, "use_fancy_residual": false})", "c.json")),
      "keys remat does not read (where they change the layers, the model is not the one remat builds): "
      "attn_res_block_size");
  const ModelSpec nested = parse_hf_config(R"({"model_type": "mistral3", "text_config": {"model_type": "mistral",
      "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
      "vocab_size": 100, "num_hidden_layers": 2, "router_jitter_noise": 0.1}})",
                                           "c.json");
  EXPECT_EQ(unread_note(nested),
            "text_config keys remat does not read (where they change the layers, the model is not the one remat "
            "builds): router_jitter_noise");
}

TEST(HfCorpus, TextConfigIsTheLanguageModel) {
  const ModelSpec m = parse_hf_config(test::read_text(corpus_dir() + "devstral-small-2-24b.json"), "d.json");
  EXPECT_EQ(m.hidden_size, 5120);
  EXPECT_EQ(m.name, "d (mistral3) (language model: text_config)");  // named by its file, "d.json"
  EXPECT_FALSE(m.tie_word_embeddings);
  // an absent vocab_size takes LlamaConfig's default, said in a note
  const ModelSpec llava = parse_hf_config(R"({"model_type": "llava", "text_config": {"model_type": "llama",
      "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_hidden_layers": 2}})",
                                          "l.json");
  EXPECT_EQ(llava.vocab_size, 32000);
  EXPECT_EQ(llava.notes[0], "text_config.vocab_size is absent: transformers' default for llama, 32000");
  EXPECT_EQ(rejection(R"({"model_type": "llava", "text_config": {"model_type": "llama", "hidden_size": 64,
      "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 10}})",
                      "l.json"),
            "");
  EXPECT_EQ(
      rejection(R"({"model_type": "llava", "text_config": {"model_type": "mistral3_text", "hidden_size": 64}})",
                "l.json"),
      "l.json: text_config.model_type: is not a model remat can build: an architecture remat has no mapping "
      "for (no architectures given); if its layers are a known family's, set model_type to it (got mistral3_text)");
  EXPECT_EQ(rejection(R"({"model_type": "llava"})", "l.json"),
            "l.json: text_config: must be the language model's configuration (an object) for model_type llava");
}

const char* kDims = R"("hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "vocab_size": 100,
    "num_hidden_layers": 2)";

TEST(HfCorpus, TiedEmbeddingsDefaultPerFamily) {
  // head_dim and kv heads given: Gemma3TextConfig's defaults (256, 4) would differ from LLaMA's
  const ModelSpec gemma = parse_hf_config(
      std::string(R"({"model_type": "gemma3_text", "head_dim": 16, "num_key_value_heads": 4, )") + kDims + "}",
      "g.json");
  EXPECT_TRUE(gemma.tie_word_embeddings);  // Gemma3TextConfig's default
  const ModelSpec llama = parse_hf_config(std::string(R"({"model_type": "llama", )") + kDims + "}", "l.json");
  EXPECT_FALSE(llama.tie_word_embeddings);  // LlamaConfig's default
  // embedding 100*64 once when tied, twice when not; Gemma 3 has two more norms per layer
  // (pre- and post-feedforward beside input and post-attention: 2*64) and q/k norms of head_dim (2*16)
  EXPECT_DOUBLE_EQ(model_params(llama, 2) - model_params(gemma, 2), 100.0 * 64 - 2 * (2 * 64 + 2 * 16));
}

TEST(HfCorpus, RefusedByNameWithTheReason) {
  const auto line = [](const std::string& type) {
    return rejection(R"({"model_type": ")" + type + R"(", )" + kDims + "}", "c.json");
  };
  EXPECT_EQ(line("bert"),
            "c.json: model_type: is not a model remat can build: an encoder or encoder-decoder model (bidirectional "
            "attention); remat plans causal decoder LLMs (got bert)");
  EXPECT_EQ(line("rwkv"),
            "c.json: model_type: is not a model remat can build: RWKV's recurrent time-mixing layers, no attention; "
            "remat has no block for them (got rwkv)");
  // an unknown model_type: its remote code, or the architecture it names, never a source path
  EXPECT_EQ(rejection(R"({"model_type": "acme", "architectures": ["AcmeForCausalLM"], "auto_map": {}, )" +
                          std::string(kDims) + "}",
                      "c.json"),
            "c.json: model_type: is not a model remat can build: remote code (auto_map) with its own layers "
            "(AcmeForCausalLM) that remat has no mapping for; if they are a known family's, set model_type to it "
            "(got acme)");
  EXPECT_EQ(rejection(R"({"model_type": "acme", "architectures": ["AcmeForCausalLM"], )" + std::string(kDims) + "}",
                      "c.json"),
            "c.json: model_type: is not a model remat can build: an architecture remat has no mapping for "
            "(AcmeForCausalLM); if its layers are a known family's, set model_type to it (got acme)");
  // a hybrid whose model_type remat does not know is refused by its construct
  EXPECT_EQ(
      rejection(R"({"model_type": "acme", "hybrid_override_pattern": "M-M*", )" + std::string(kDims) + "}", "c.json"),
      "c.json: hybrid_override_pattern: is not a model remat can build: Mamba-2/attention/MLP layers by pattern "
      "in another model type (remat's hybrids: nemotron_h, bamba, granitemoehybrid, mamba2, falcon_h1, "
      "qwen3_next, lfm2, jamba)");
  EXPECT_EQ(rejection(std::string("{") + kDims + "}", "c.json"),
            "c.json: model_type: required key is missing (remat picks the architecture by it)");
}

TEST(HfCorpus, NoSilentDefaultForKeysThatChangeTheModel) {
  const std::string llama = std::string(R"({"model_type": "llama", )") + kDims;
  EXPECT_EQ(rejection(llama + R"(, "num_local_experts": 8})", "c.json"),
            "c.json: num_local_experts: is not a model remat can build: experts in a model_type (llama) that remat's "
            "table maps as dense (got 8)");
  EXPECT_EQ(rejection(llama + R"(, "layer_types": ["full_attention", "mamba"]})", "c.json"),
            "c.json: layer_types: is not a model remat can build: Mamba layers beside attention layers in another "
            "model type (remat's hybrids: nemotron_h, bamba, granitemoehybrid, mamba2, falcon_h1, qwen3_next, "
            "lfm2, jamba) (got mamba)");
  EXPECT_EQ(rejection(llama + R"(, "block_configs": [{}]})", "c.json"),
            "c.json: block_configs: is not a model remat can build: layers of different shapes (block_configs) in "
            "another model type (remat reads them in nemotron-nas)");
  EXPECT_EQ(rejection(llama + R"(, "num_nextn_predict_layers": 0})", "c.json"), "");
  // MTP in a family without a known MTP layout (ERNIE 4.5's Paddle configs): noted, not counted
  const ModelSpec with_mtp = parse_hf_config(llama + R"(, "num_nextn_predict_layers": 1})", "c.json");
  EXPECT_EQ(with_mtp.num_nextn_predict_layers, 0);
  EXPECT_EQ(model_params(with_mtp, with_mtp.num_hidden_layers),
            model_params(parse_hf_config(llama + "}", "c.json"), with_mtp.num_hidden_layers));
  EXPECT_NE(with_mtp.notes.back().find("num_nextn_predict_layers = 1: the multi-token prediction modules are not "
                                       "counted"),
            std::string::npos);
}

TEST(HfCorpus, Llama4InterleavedExpertsAndSharedExpert) {
  const std::string text = std::string(R"({"model_type": "llama4_text", "intermediate_size_mlp": 256,
      "num_local_experts": 4, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2, "attention_chunk_size": 16,
      "max_position_embeddings": 64, )") +
                           R"("hidden_size": 64, "intermediate_size": 32, "num_attention_heads": 4,
      "vocab_size": 100, "num_hidden_layers": 4})";
  const ModelSpec m = parse_hf_config(text, "l4.json");
  EXPECT_EQ(moe_layers(m), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(m.intermediate_size, 256);
  EXPECT_EQ(m.moe_intermediate_size, 32);
  EXPECT_EQ(m.n_shared_experts, 1);
  // a MoE layer's feed-forward: router 64*4 + shared 3*64*32 + routed 4*3*64*32; dense: 3*64*256
  EXPECT_DOUBLE_EQ(layer_params(m, 1, 1, 1).expert, 4 * 3 * 64 * 32.0);
  EXPECT_DOUBLE_EQ(layer_params(m, 0, 1, 1).total() - layer_params(m, 1, 1, 1).total(),
                   3 * 64 * 256.0 - (64 * 4 + 3 * 64 * 32.0 + 4 * 3 * 64 * 32.0));
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_EQ(m.notes[0].rfind("attention_chunk_size = 16 on its windowed layers", 0), 0u) << m.notes[0];
}

// transformers writes float('inf') as Infinity (Nemotron-H's time_step_limit).
TEST(HfCorpus, NonFiniteNumbersIgnoredOrRefusedByKey) {
  const std::string llama = std::string(R"({"model_type": "llama", )") + kDims;
  const ModelSpec m =
      parse_hf_config(llama + R"(, "time_step_limit": [0.0, Infinity], "x": -Infinity, "y": NaN})", "c.json");
  EXPECT_EQ(m.hidden_size, 64);
  EXPECT_EQ(rejection(R"({"model_type": "llama", "intermediate_size": 128, "num_attention_heads": 4,
      "vocab_size": 100, "num_hidden_layers": 2, "hidden_size": Infinity})",
                      "c.json"),
            "c.json: hidden_size: must be an integer (got \"Infinity\")");
  // 67 characters, cut short: the parser stops one past the end, the file's offset (not the quoted copy's 69)
  EXPECT_EQ(rejection(R"({"model_type": "llama", "name": "NaN Infinity", "hidden_size": NaN,)", "c.json"),
            "c.json: byte 68: malformed JSON");
  // Infinityx is no token: the parser stops at its first character, the 30th
  EXPECT_EQ(rejection(R"({"model_type": "llama", "x": Infinityx})", "c.json"), "c.json: byte 30: malformed JSON");
}

// Muse-Glimmer's language model (MuseGlimmerTextDecoderLayer, transformers 5.17): Gemma's four norms,
// weightless q and k norms, a gate projection of hidden to heads x head_dim, no rotary where
// layer_rope_theta is 0, a weightless norm on the embeddings, the logits scaled before the softcap.
TEST(HfCorpus, MuseGlimmerLayersByHand) {
  const ModelSpec m = parse_hf_config(R"({"model_type": "muse_glimmer", "text_config": {"model_type":
    "muse_glimmer_text", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 16, "num_hidden_layers": 4, "vocab_size": 100, "sliding_window": 32,
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],
    "layer_rope_theta": [10000.0, 10000.0, 10000.0, 0], "output_multiplier": 0.2, "final_logit_softcapping": 20.0,
    "qk_scale_factor": 3.87, "post_norm_eps": 1e-08, "tie_word_embeddings": false}})",
                                      "g.json");
  EXPECT_TRUE(m.layer_is_nope(3));
  EXPECT_FALSE(m.layer_is_nope(0));
  EXPECT_TRUE(m.logits_multiplied);
  EXPECT_DOUBLE_EQ(m.final_logit_softcap, 20.0);
  // q, gate and o 64 x 64 each, k and v 64 x 32, four norms of 64, SwiGLU 128; no q/k norm weights
  const double layer = 3 * 64.0 * 64 + 2 * 64.0 * 32 + 4 * 64 + 3 * 64.0 * 128;
  EXPECT_DOUBLE_EQ(model_params(m, 4), 4 * layer + 2 * 100.0 * 64 + 64);
}

}  // namespace
}  // namespace remat

namespace remat {
namespace {

// A config.json without _name_or_path is named by its file, or by its folder for a Hub checkout's
// config.json, with its model_type beside it (DeepSeek-R1 is not "deepseek_v3").
TEST(HfCorpus, ModelsAreNamedByTheirFile) {
  const std::string text = test::read_text(std::string(REMAT_TEST_DATA) + "/data/hf_configs/deepseek-v3.json");
  EXPECT_EQ(parse_hf_config(text, "/models/DeepSeek-R1/config.json").name, "DeepSeek-R1 (deepseek_v3)");
  EXPECT_EQ(parse_hf_config(text, "deepseek-r1.json").name, "deepseek-r1 (deepseek_v3)");
  EXPECT_EQ(parse_hf_config(text, "config.json").name, "deepseek_v3");
}

}  // namespace
}  // namespace remat
