// The first decoder-only families (src/io/hf_families_classic.cpp): XGLM, CTRL, OpenAI GPT, BioGPT.
// tests/data/hf_transformers_defaults.jsonl holds each config class's defaults against the count
// transformers builds; these are small configs counted by hand from the modeling code, and the
// constructs Megatron-LM has no flag for.
#include <gtest/gtest.h>

#include <string>

#include "remat/cost/params.hpp"
#include "remat/search/megatron_flags.hpp"
#include "remat/spec/pipeline_split.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

std::vector<std::string> megatron_notes(const ModelSpec& m) {
  const TrainingSpec t = test::layout(1, 1, 1, 1, 1, 4096);
  return megatron_args(m, t, megatron_split(m, t), MegatronRecompute{}, true).notes;
}

bool names(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& line : lines)
    if (line.find(what) != std::string::npos) return true;
  return false;
}

// One pre-LN layer of width 64, MLP 256, biases everywhere: q, k, v, o (4 x (64 x 64 + 64)),
// fc1 (64 x 256 + 256), fc2 (256 x 64 + 64), two LayerNorms (2 x 128).
constexpr double kLayer = 4 * (64 * 64 + 64) + (64 * 256 + 256) + (256 * 64 + 64) + 2 * 128;

// XGLM: sinusoidal positions (no parameters), a final LayerNorm (128), the head tied to the
// 100 x 64 embeddings; CTRL the same with a bias on the head (100).
TEST(HfFamiliesClassic, SinusoidalPositionsAndTiedHeads) {
  const ModelSpec xglm = parse_hf_config(R"({"model_type": "xglm", "d_model": 64, "num_layers": 2,
      "attention_heads": 4, "ffn_dim": 256, "vocab_size": 100, "dropout": 0.2})",
                                         "x.json");
  EXPECT_DOUBLE_EQ(model_params(xglm, 2), 2 * kLayer + 128 + 100 * 64);
  EXPECT_TRUE(xglm.sinusoidal_positions);
  EXPECT_DOUBLE_EQ(xglm.residual_dropout, 0.2);
  const ModelSpec ctrl = parse_hf_config(R"({"model_type": "ctrl", "n_embd": 64, "n_layer": 2, "n_head": 4,
      "dff": 256, "vocab_size": 100})",
                                         "c.json");
  EXPECT_DOUBLE_EQ(model_params(ctrl, 2), 2 * kLayer + 128 + 100 * 64 + 100);
  EXPECT_EQ(ctrl.hidden_act, "relu");
  EXPECT_TRUE(names(megatron_notes(ctrl), "fixed sinusoidal position embeddings"));
}

// OpenAI GPT: 4 x n_embd MLP, learned positions (n_positions rows), post-LN said in a note; BioGPT:
// max_position_embeddings + 2 rows (its table's offset).
TEST(HfFamiliesClassic, LearnedPositionsAndPostLayerNorm) {
  const ModelSpec gpt = parse_hf_config(R"({"model_type": "openai-gpt", "n_embd": 64, "n_layer": 2, "n_head": 4,
      "n_positions": 32, "vocab_size": 100})",
                                        "g.json");
  EXPECT_EQ(gpt.intermediate_size, 256);
  EXPECT_EQ(gpt.position_embeddings, 32);
  EXPECT_TRUE(gpt.post_layer_norm);
  EXPECT_TRUE(names(gpt.notes, "post-LN"));
  EXPECT_TRUE(names(megatron_notes(gpt), "post-LN"));
  // remat counts a final norm (128) the model lacks: 0.1% of this toy, 1.3e-5 of OpenAI GPT
  EXPECT_DOUBLE_EQ(model_params(gpt, 2), 2 * kLayer + 128 + 100 * 64 + 32 * 64);
  const ModelSpec bio = parse_hf_config(R"({"model_type": "biogpt", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 256, "max_position_embeddings": 30, "vocab_size": 100})",
                                        "b.json");
  EXPECT_EQ(bio.position_embeddings, 32);
  EXPECT_DOUBLE_EQ(model_params(bio, 2), 2 * kLayer + 128 + 100 * 64 + 32 * 64);
}

// Dropouts and biases their config classes set, read where the unread-keys note named them: OPT's
// dropout (0.1) after out_proj and fc2 and its do_layer_norm_before; Seed-OSS's and StarCoder2's
// residual_dropout after o_proj and the MLP (SeedOssConfig 0.1, Starcoder2Config 0); Qwen2-MoE's qkv_bias.
TEST(HfFamiliesClassic, DropoutsAndBiasesTheirConfigsSet) {
  const std::string dims = R"("hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 256, "vocab_size": 100)";
  const ModelSpec opt = parse_hf_config(R"({"model_type": "opt", "ffn_dim": 256, )" + dims + "}", "o.json");
  EXPECT_DOUBLE_EQ(opt.residual_dropout, 0.1);
  EXPECT_FALSE(opt.post_layer_norm);
  const ModelSpec opt_post = parse_hf_config(
      R"({"model_type": "opt", "dropout": 0.0, "do_layer_norm_before": false, )" + dims + "}", "o.json");
  EXPECT_DOUBLE_EQ(opt_post.residual_dropout, 0.0);
  EXPECT_TRUE(opt_post.post_layer_norm);
  EXPECT_DOUBLE_EQ(parse_hf_config(R"({"model_type": "seed_oss", )" + dims + "}", "s.json").residual_dropout, 0.1);
  EXPECT_DOUBLE_EQ(parse_hf_config(R"({"model_type": "starcoder2", "residual_dropout": 0.05, )" + dims + "}", "s.json")
                       .residual_dropout,
                   0.05);
  const std::string moe = R"({"model_type": "qwen2_moe", "num_experts": 4, "num_experts_per_tok": 2,
      "moe_intermediate_size": 32, "shared_expert_intermediate_size": 0, )" +
                          dims;
  const ModelSpec biased = parse_hf_config(moe + "}", "q.json");
  const ModelSpec unbiased = parse_hf_config(moe + R"(, "qkv_bias": false})", "q.json");
  EXPECT_TRUE(biased.qkv_bias);
  EXPECT_FALSE(unbiased.qkv_bias);
  EXPECT_DOUBLE_EQ(model_params(biased, 2) - model_params(unbiased, 2), 2 * 3 * 64.0);  // q, k, v biases of 64
}

// Another tool's config (llm-analysis: hidden_dim, num_layers, n_head, ffn_embed_dim) under a family's
// model_type: transformers reads none of those keys and builds its config class's defaults, and so
// does remat, saying which key it did not read. GPT-Neo's attention_types must cover num_layers, as
// GPTNeoConfig checks.
TEST(HfFamiliesClassic, OtherToolsSpellingsGetTheFamilysDefaultsAndANote) {
  const ModelSpec opt = parse_hf_config(
      R"({"model_type": "opt", "hidden_dim": 2048, "num_layers": 24, "n_head": 32, "ffn_embed_dim": 8192})", "o.json");
  EXPECT_DOUBLE_EQ(model_params(opt, opt.num_hidden_layers), 125239296);  // OPTConfig(): facebook/opt-125m
  EXPECT_TRUE(names(opt.notes,
                    "hidden_size is absent: transformers' default for opt, 768 (the file's hidden_dim = "
                    "2048 is not a key transformers reads for it)"));
  EXPECT_TRUE(names(opt.notes, "(the file's ffn_embed_dim = 8192 is not a key"));
  // BloomConfig(): hidden 64, 2 layers, 8 heads, vocab 250880; n_head is BLOOM's own key
  const ModelSpec bloom =
      parse_hf_config(R"({"model_type": "bloom", "hidden_dim": 4096, "num_layers": 30, "n_head": 32})", "b.json");
  EXPECT_EQ(bloom.num_attention_heads, 32);
  const double h = 64, bloom_layer = 4 * h * h + 4 * h + 8 * h * h + 5 * h + 4 * h;        // qkv o, fc1 fc2, 2 LNs
  EXPECT_DOUBLE_EQ(model_params(bloom, 2), 2 * bloom_layer + 250880 * h + 2 * h + 2 * h);  // embedding LN, final LN
  EXPECT_DOUBLE_EQ(model_params(bloom, 2), 16156544);
  EXPECT_EQ(test::hf_rejection(R"({"model_type": "gpt_neo", "hidden_size": 64, "num_layers": 32, "num_heads": 4,
      "vocab_size": 100})",
                               "n.json"),
            "n.json: attention_types: gives 24 layers for num_layers 32 (transformers' GPTNeoConfig refuses the same)");
  // llm-analysis's gpt2-xl: GPT2Config's n_embd 768 by default, its own n_head 25
  EXPECT_EQ(
      test::hf_rejection(R"({"model_type": "gpt2", "hidden_dim": 1600, "num_layers": 48, "n_head": 25})", "g.json"),
      "g.json: n_head: must divide the width n_embd = 768 (transformers' GPT-2 attention refuses the same) (got "
      "25)");
}

// MixtralConfig's expert defaults (8 experts, top 2) where a file leaves them out (EAGLE's Mixtral
// draft head: transformers 5.17 counts 1,738,584,064), and a null num_key_value_heads as multi-head
// attention, not the class default of 8.
TEST(HfFamiliesClassic, MixtralExpertDefaultsAndNullKeyValueHeads) {
  const std::string base = R"({"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
      "num_attention_heads": 32, "num_hidden_layers": 1, "vocab_size": 32000, "tie_word_embeddings": false)";
  const ModelSpec draft = parse_hf_config(base + R"(, "num_key_value_heads": 32})", "d.json");
  EXPECT_EQ(draft.n_routed_experts, 8);
  EXPECT_EQ(draft.num_experts_per_tok, 2);
  EXPECT_TRUE(names(draft.notes, "num_local_experts is absent: transformers' default for mixtral, 8"));
  const double h = 4096, layer = 4 * h * h + 8 * h + 8 * 3 * h * 14336 + 2 * h;  // q k v o, router, experts, norms
  EXPECT_DOUBLE_EQ(model_params(draft, 1), layer + 2 * 32000 * h + h);
  EXPECT_DOUBLE_EQ(model_params(draft, 1), 1738584064);
  EXPECT_EQ(parse_hf_config(base + R"(, "num_key_value_heads": null})", "n.json").num_key_value_heads, 32);
  EXPECT_EQ(parse_hf_config(base + "}", "a.json").num_key_value_heads, 8);  // absent: MixtralConfig's 8
}

// Phi's and Persimmon's qk_layernorm are nn.LayerNorm(head_dim): a weight and a bias each, two per
// layer. Phi-2's shape with qk_layernorm: transformers 5.17 counts 2,779,694,080 (reports/hf/
// param-counts-realcfg8-h200.jsonl); PersimmonConfig turns them on by default.
TEST(HfFamiliesClassic, QkLayerNormsCarryBiases) {
  const ModelSpec phi = parse_hf_config(R"({"model_type": "phi", "vocab_size": 51200, "hidden_size": 2560,
      "intermediate_size": 10240, "num_hidden_layers": 32, "num_attention_heads": 32, "qk_layernorm": true})",
                                        "phi.json");
  EXPECT_DOUBLE_EQ(model_params(phi, 32), 2779694080.0);
  const std::string persimmon = R"({"model_type": "persimmon", "vocab_size": 100, "hidden_size": 64,
      "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4)";
  const ModelSpec with = parse_hf_config(persimmon + "}", "p.json");
  const ModelSpec without = parse_hf_config(persimmon + R"(, "qk_layernorm": false})", "p.json");
  EXPECT_DOUBLE_EQ(model_params(with, 2) - model_params(without, 2), 2 * 2 * 2 * 16.0);  // head_dim 16
}

}  // namespace
}  // namespace remat
