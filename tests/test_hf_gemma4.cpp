// Gemma 4 (model_type gemma4_text, or a gemma4 wrapper's text_config): full-attention layers of
// their own head dim and key/value heads whose keys double as values, the weightless value norm,
// the MoE block beside the dense MLP, both spellings of the full-attention shape (global_head_dim
// as transformers 5.5 saved it, per_layer_config as 5.17 saves it), and what stays refused.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/params.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

std::string rejection(const std::string& text, const std::string& label) { return test::hf_rejection(text, label); }

// h 64, 4 query heads, sliding layers 2 kv heads of 16, full layers 1 kv head of 32, vocab 100;
// layer 1 of 2 is full attention.
const std::string kTiny = R"({"model_type": "gemma4_text", "hidden_size": 64, "intermediate_size": 128,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100,
    "num_hidden_layers": 2, "hidden_size_per_layer_input": 0, "sliding_window": 8,
    "layer_types": ["sliding_attention", "full_attention"], "global_head_dim": 32)";

// Gemma4TextAttention: q (h x heads hd), k and v (h x kv hd), o (heads hd x h), q_norm and k_norm of
// hd (v_norm has no weight); Gemma4TextMLP gate, up, down; four norms of h per layer.
TEST(HfGemma4, FullAttentionLayersOfTheirOwnShapeKeysAsValues) {
  const ModelSpec m =
      parse_hf_config(kTiny + R"(, "attention_k_eq_v": true, "num_global_key_value_heads": 1})", "g4.json");
  EXPECT_EQ(m.full_attention_head_dim, 32);
  EXPECT_EQ(m.full_attention_kv_heads, 1);
  EXPECT_TRUE(m.full_attention_values_from_keys);
  EXPECT_TRUE(m.layer_is_windowed(0));
  EXPECT_FALSE(m.layer_is_windowed(1));
  const double mlp = 3 * 64 * 128.0, norms = 4 * 64;
  const double sliding = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 2 * 16 + mlp + norms;
  const double full = 64 * 128 + 64 * 32 + 128 * 64 + 2 * 32 + mlp + norms;  // no v_proj
  EXPECT_DOUBLE_EQ(layer_params(m, 0, 1, 1).total(), sliding);
  EXPECT_DOUBLE_EQ(layer_params(m, 1, 1, 1).total(), full);
  EXPECT_DOUBLE_EQ(model_params(m, 2), sliding + full + 100 * 64 + 64);  // tied head, final norm

  // the full layer's projections: q 4 x 32 and k 1 x 32 wide (no v); the sliding one's q 64, k and v 32
  RankShape r;
  r.b = 1, r.s = 8;
  const auto qkv_width = [&](int64_t index) {
    const LayerDef layer = build_layer(m, r, index);
    for (const auto& op : layer.blocks[0].ops)
      if (op.name == "qkv") return op.fwd_flops / (2 * 8 * 64);
    return 0.0;
  };
  EXPECT_DOUBLE_EQ(qkv_width(0), 64 + 2 * 32);
  EXPECT_DOUBLE_EQ(qkv_width(1), 128 + 32);
}

// Without attention_k_eq_v transformers keeps every layer's key/value heads (the global count is
// ignored) and builds v_proj; transformers 5.17 writes the same model as per_layer_config.
TEST(HfGemma4, PerLayerConfigIsTheSameModel) {
  const ModelSpec old = parse_hf_config(kTiny + R"(, "num_global_key_value_heads": 1})", "g4.json");
  EXPECT_EQ(old.full_attention_kv_heads, 0);
  EXPECT_FALSE(old.full_attention_values_from_keys);
  const std::string saved = R"({"model_type": "gemma4_text", "hidden_size": 64, "intermediate_size": 128,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100,
    "num_hidden_layers": 2, "hidden_size_per_layer_input": 0, "sliding_window": 8,
    "layer_types": ["sliding_attention", "full_attention"])";
  const ModelSpec resaved = parse_hf_config(saved + R"(, "per_layer_config": {"01": {"head_dim": 32}}})", "g4.json");
  EXPECT_DOUBLE_EQ(model_params(resaved, 2), model_params(old, 2));
  EXPECT_EQ(resaved.full_attention_head_dim, 32);
  // overrides remat cannot build with one shape per layer kind are refused by name
  EXPECT_EQ(rejection(saved + R"(, "per_layer_config": {"00": {"head_dim": 32}}})", "g4.json"),
            "g4.json: per_layer_config: is not a model remat can build: overrides on a sliding-window layer; remat "
            "builds one shape for the sliding layers and one for the full-attention layers (got 00)");
  EXPECT_NE(rejection(saved + R"(, "per_layer_config": {"01": {"sliding_window": 4}}})", "g4.json"), "");
}

// enable_moe_block: 8 experts of 32 (top 2) beside the dense MLP of 128 = 4 shared experts of 32;
// the router's projection (h x E), its scale (h) and per-expert scale (E); three more norms.
TEST(HfGemma4, MoeBlockBesideTheDenseMlp) {
  const ModelSpec m = parse_hf_config(kTiny + R"(, "enable_moe_block": true, "num_experts": 8, "top_k_experts": 2,
      "moe_intermediate_size": 32})",
                                      "g4.json");
  EXPECT_EQ(m.n_routed_experts, 8);
  EXPECT_EQ(m.num_experts_per_tok, 2);
  EXPECT_EQ(m.n_shared_experts, 4);
  EXPECT_TRUE(m.layer_is_moe(0) && m.layer_is_moe(1));
  const double sliding_attention = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 2 * 16 + 64;
  const double ffn = 3 * 64 * 128.0 + 8 * 3 * 64 * 32 + 64 * 8 + 64 + 8 + 6 * 64;
  EXPECT_DOUBLE_EQ(layer_params(m, 0, 1, 1).total(), sliding_attention + ffn);
  // a dense MLP no multiple of the experts' width: one shared expert 128 wide, the same parameters
  const ModelSpec odd = parse_hf_config(kTiny + R"(, "enable_moe_block": true, "num_experts": 8, "top_k_experts": 2,
      "moe_intermediate_size": 48})",
                                        "g4.json");
  EXPECT_EQ(odd.n_shared_experts, 1);
  EXPECT_EQ(odd.shared_mlp_width(), 128);
  EXPECT_DOUBLE_EQ(layer_params(odd, 0, 1, 1).total(),
                   sliding_attention + 3 * 64 * 128.0 + 8 * 3 * 64 * 48 + 64 * 8 + 64 + 8 + 6 * 64);
}

// Gemma4TextConfig's defaults: every 6th layer full attention and the last one forced full,
// global_head_dim 512, and per-layer input embeddings of 256 unless a config sets 0.
TEST(HfGemma4, DefaultsAndRefusals) {
  const ModelSpec m = parse_hf_config(
      R"({"model_type": "gemma4_text", "num_hidden_layers": 8, "hidden_size_per_layer_input": 0})", "g4.json");
  EXPECT_EQ(m.full_attention_head_dim, 512);
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(m.layer_is_windowed(i), i != 5 && i != 7) << i;
  const ModelSpec ple = parse_hf_config(R"({"model_type": "gemma4_text", "num_hidden_layers": 8})", "g4.json");
  EXPECT_EQ(ple.per_layer_input_width, 256);
  EXPECT_EQ(ple.per_layer_input_vocab, 262144);
  EXPECT_NE(rejection(kTiny + R"(, "use_bidirectional_attention": "all"})", "g4.json"), "");
  EXPECT_NE(rejection(kTiny + R"(, "num_kv_shared_layers": -1})", "g4.json"), "");
  const std::string eight = R"({"model_type": "gemma4_text", "num_hidden_layers": 8, )";
  EXPECT_EQ(rejection(eight + R"("hidden_size_per_layer_input": -3})", "g4.json"),
            "g4.json: hidden_size_per_layer_input: must be 0 (none) or more (got -3)");
  EXPECT_EQ(rejection(eight + R"("hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": 0})", "g4.json"),
            "g4.json: vocab_size_per_layer_input: must be a positive integer (got 0)");
}

// Gemma 4 E2B/E4B's constructs on the tiny model of 4 layers (sliding, full, sliding, full), the last
// two sharing keys and values (num_kv_shared_layers 2) with double-wide MLPs, per-layer inputs of 8
// from a vocabulary of 50: a shared layer has q and o and q_norm only, an MLP of 256; every layer
// adds the branch's gate (h x 8), projection (8 x h) and norm; the model adds the per-layer
// embedding (50 x 4 x 8), its projection from the hidden state (h x 4 x 8) and norm (8).
TEST(HfGemma4, PerLayerInputsAndSharedKeysAndValues) {
  const ModelSpec m = parse_hf_config(R"({"model_type": "gemma4_text", "hidden_size": 64, "intermediate_size": 128,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100, "num_hidden_layers": 4,
      "hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": 50, "sliding_window": 8, "global_head_dim": 32,
      "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
      "num_kv_shared_layers": 2, "use_double_wide_mlp": true})",
                                      "g4.json");
  EXPECT_FALSE(m.layer_shares_kv(1));
  EXPECT_TRUE(m.layer_shares_kv(2) && m.layer_shares_kv(3));
  EXPECT_EQ(m.layer_kind(0), kWindowedAttentionKinds);
  EXPECT_EQ(m.layer_kind(2), kSharedKvAttentionKinds + 3);
  EXPECT_EQ(m.layer_kind(3), kSharedKvAttentionKinds);
  const double branch = 2 * 64 * 8 + 64, norms = 4 * 64;
  const double sliding = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 2 * 16 + 3 * 64 * 128.0 + norms + branch;
  const double full = 64 * 128 + 2 * 64 * 64 + 128 * 64 + 2 * 32 + 3 * 64 * 128.0 + norms + branch;
  const double shared_sliding = 2 * 64 * 64 + 16 + 3 * 64 * 256.0 + norms + branch;
  const double shared_full = 2 * 64 * 128 + 32 + 3 * 64 * 256.0 + norms + branch;
  EXPECT_DOUBLE_EQ(layer_params(m, 2, 1, 1).total(), shared_sliding);
  EXPECT_DOUBLE_EQ(layer_params(m, 3, 1, 1).total(), shared_full);
  const double model_side = 100 * 64 + 50 * 32 + 64 * 32 + 8 + 64;
  EXPECT_DOUBLE_EQ(model_params(m, 4), sliding + full + shared_sliding + shared_full + model_side);
  // the shared layer projects queries only and keeps no keys or values of its own
  RankShape r;
  r.b = 1, r.s = 8;
  const LayerDef layer = build_layer(m, r, 3);
  EXPECT_DOUBLE_EQ(layer.blocks[0].tensor_bytes("k") + layer.blocks[0].tensor_bytes("v"), 0);
  EXPECT_EQ(layer.blocks.back().name, "per_layer_input");
}

// The Gemma 4 configs counted by transformers 5.17 itself on the GPU machine
// (reports/hf/param-counts-gemma4-h100.jsonl, examples/hf/gemma4/probe.sh): the 31B's
// language model, a 26B-A4B-like MoE shape, one without keys as values, one leaving out most keys,
// E2B (per-layer inputs, KV sharing, double-wide MLPs) and E2B cut to 10 layers sharing 5 load at
// transformers' count to the parameter.
TEST(HfGemma4, ConfigsLoadAtTransformersCount) {
  std::ifstream lines(std::string(REMAT_TEST_DATA) + "/../reports/hf/param-counts-gemma4-h100.jsonl");
  std::string line;
  int loads = 0;
  while (std::getline(lines, line)) {
    const auto row = nlohmann::json::parse(line);
    if (!row.contains("file")) continue;
    const std::string file = row.at("file");
    const std::string dir = file.rfind("gemma-4-", 0) == 0 && file.find("text") == std::string::npos
                                ? "/data/hf_configs/"
                                : "/../examples/hf/gemma4/";
    const std::string text = test::read_text(std::string(REMAT_TEST_DATA) + dir + file);
    ASSERT_FALSE(text.empty()) << file;
    const ModelSpec m = parse_hf_config(text, file);
    EXPECT_DOUBLE_EQ(model_params(m, m.num_hidden_layers), row.at("params").get<double>()) << file;
    ++loads;
  }
  EXPECT_EQ(loads, 7);
}

}  // namespace
}  // namespace remat
