// Keys of the families in src/io/hf_families_more.cpp that their config classes' defaults do not
// exercise (tests/data/hf_transformers_defaults.jsonl covers those): per-layer lists, other
// spellings, keys a config class turns into others, and the layers they leave to their defaults.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "remat/cost/params.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

using test::moe_layers;
std::string rejection(const std::string& text, const std::string& label) { return test::hf_rejection(text, label); }

const std::string kSmall = R"("hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100, "tie_word_embeddings": false, )";

// Hunyuan-A13B's config gives num_experts and moe_topk one per layer; transformers builds every layer
// with num_experts experts of intermediate_size and one shared MLP of intermediate_size.
TEST(HfFamiliesMore, HunyuanMoePerLayerListsOfOneValue) {
  const std::string base = R"({"model_type": "hunyuan_v1_moe", "num_hidden_layers": 2, )" + kSmall;
  const ModelSpec m = parse_hf_config(base + R"("num_experts": [4, 4], "moe_topk": [2, 2]})", "h.json");
  EXPECT_EQ(m.n_routed_experts, 4);
  EXPECT_EQ(m.num_experts_per_tok, 2);
  EXPECT_EQ(m.n_shared_experts, 1);
  EXPECT_EQ(m.moe_intermediate_size, 128);
  EXPECT_EQ(moe_layers(m), (std::vector<int64_t>{0, 1}));
  // a layer: q, k, v, o; q/k norms of head_dim; two norms; router, shared MLP and 4 experts
  const double layer = 64.0 * 64 * 2 + 64.0 * 32 * 2 + 2 * 16 + 2 * 64 + 64 * 4 + 3 * 64 * 128 + 4 * 3 * 64 * 128;
  EXPECT_DOUBLE_EQ(model_params(m, 2), 2 * layer + 2 * 100 * 64 + 64);
  EXPECT_EQ(rejection(base + R"("num_experts": [4, 8], "moe_topk": 2})", "h.json"),
            "h.json: num_experts: is not a model remat can build: a different value per layer; remat builds one "
            "layer shape (got [4,8])");
}

// Granite SWA: layer_rope_theta 0 is a layer without rotary; the MoE variant's shared MLP counts as
// shared experts of intermediate_size.
TEST(HfFamiliesMore, GraniteSwaRopeThetaPerLayerAndSharedMlp) {
  const std::string base = R"({"model_type": "granitemoe_swa", "num_hidden_layers": 4, )" + kSmall +
                           R"("num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 8, )";
  const ModelSpec m = parse_hf_config(
      base + R"("layer_rope_theta": [10000.0, 10000.0, 0, 10000.0], "shared_intermediate_size": 256})", "g.json");
  EXPECT_EQ(m.nope_layers, (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(m.n_shared_experts, 2);
  // no layer_types: GraniteMoeSWAConfig makes the first of every four layers full attention
  EXPECT_EQ(m.windowed_layers, (std::vector<bool>{false, true, true, true}));
  const ModelSpec narrow = parse_hf_config(base + R"("shared_intermediate_size": 100})", "g.json");
  EXPECT_EQ(narrow.n_shared_experts, 1);  // no multiple of 128: one shared expert 100 wide
  EXPECT_EQ(narrow.shared_mlp_width(), 100);
}

// AFMoE's num_dense_layers and num_shared_experts; EXAONE MoE's num_shared_experts and its default.
TEST(HfFamiliesMore, DenseLayersAndSharedExpertsUnderTheirOwnNames) {
  const std::string experts = R"("num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32, )";
  const ModelSpec afmoe =
      parse_hf_config(R"({"model_type": "afmoe", "num_hidden_layers": 4, )" + kSmall + experts +
                          R"("num_dense_layers": 2, "num_shared_experts": 3, "global_attn_every_n_layers": 2})",
                      "a.json");
  EXPECT_EQ(moe_layers(afmoe), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(afmoe.n_shared_experts, 3);
  EXPECT_EQ(afmoe.nope_layers, (std::vector<bool>{false, true, false, true}));  // rotary on windowed layers only
  const std::string exaone = R"({"model_type": "exaone_moe", "num_hidden_layers": 3, )" + kSmall + experts;
  const ModelSpec given = parse_hf_config(exaone + R"("num_shared_experts": 2, "first_k_dense_replace": 0})", "e.json");
  EXPECT_EQ(given.n_shared_experts, 2);
  EXPECT_EQ(moe_layers(given), (std::vector<int64_t>{0, 1, 2}));
  const ModelSpec absent = parse_hf_config(exaone + R"("mlp_layer_types": ["dense", "sparse", "dense"]})", "e.json");
  EXPECT_EQ(absent.n_shared_experts, 1);
  EXPECT_EQ(moe_layers(absent), (std::vector<int64_t>{1}));
  EXPECT_EQ(absent.notes.front(), "num_shared_experts is absent: transformers' default for exaone_moe, 1");
}

// Cohere2 MoE's first_k_dense_replace (its config class turns it into mlp_layer_types): dense layers
// of prefix_dense_intermediate_size; with rms_norm_eps null its norms are LayerNorms.
TEST(HfFamiliesMore, Cohere2MoeDensePrefixOfItsOwnWidth) {
  const ModelSpec m = parse_hf_config(R"({"model_type": "cohere2_moe", "num_hidden_layers": 3, )" + kSmall +
                                          R"("num_experts": 4, "num_experts_per_tok": 2, "num_shared_experts": 1,
      "first_k_dense_replace": 1, "prefix_dense_intermediate_size": 96, "rms_norm_eps": null})",
                                      "c.json");
  EXPECT_EQ(moe_layers(m), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(m.intermediate_size, 96);
  EXPECT_EQ(m.moe_intermediate_size, 128);
  EXPECT_EQ(m.n_shared_experts, 1);
  EXPECT_EQ(m.norm_kind, NormKind::layer);
  EXPECT_TRUE(m.parallel_attn_mlp && m.shared_input_norm);
}

// Mellum's mlp_layer_types; with no layer_types every layer is full attention.
TEST(HfFamiliesMore, MellumDenseLayersByType) {
  const ModelSpec m = parse_hf_config(R"({"model_type": "mellum", "num_hidden_layers": 3, )" + kSmall +
                                          R"("num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
      "mlp_layer_types": ["dense", "sparse", "sparse"], "sliding_window": 8})",
                                      "m.json");
  EXPECT_EQ(moe_layers(m), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(m.sliding_window_tokens, 0);
}

// MiniCPM3's v_head_dim defaults to hidden_size / heads; the latent-attention families refuse biases.
TEST(HfFamiliesMore, LatentAttentionFamilies) {
  const std::string mla = R"("kv_lora_rank": 32, "q_lora_rank": 48, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, )";
  const ModelSpec m =
      parse_hf_config(R"({"model_type": "minicpm3", "num_hidden_layers": 2, )" + mla + kSmall + R"("x": 0})", "c.json");
  EXPECT_EQ(m.v_head_dim, 16);  // 64 / 4
  EXPECT_EQ(m.kv_lora_rank, 32);
  EXPECT_EQ(rejection(R"({"model_type": "youtu", "num_hidden_layers": 2, "v_head_dim": 16, )" + mla + kSmall +
                          R"("attention_bias": true})",
                      "y.json"),
            "y.json: attention_bias: is not a model remat can build: biases on multi-head latent attention's "
            "projections (got true)");
}

// Solar Open builds its MoE in every layer whatever first_k_dense_replace says.
TEST(HfFamiliesMore, SolarOpenEveryLayerMoe) {
  const ModelSpec m = parse_hf_config(R"({"model_type": "solar_open", "num_hidden_layers": 3, )" + kSmall +
                                          R"("n_routed_experts": 4, "num_experts_per_tok": 2,
      "moe_intermediate_size": 32, "first_k_dense_replace": 1})",
                                      "s.json");
  EXPECT_EQ(moe_layers(m), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(m.n_shared_experts, 1);
  EXPECT_FALSE(m.o_bias);  // SolarOpenAttention's o_proj has no bias
}

// MiMo-V2-Flash as transformers writes it and as its Hub (remote-code) config spells it: sliding-window
// layers with twice the key/value heads, value heads narrower than q and k, dense layers by list.
// Hand count: embeddings and head 2 x 100 x 64, final norm 64; per layer two norms (128), q 64 x 4 x 24,
// o 4 x 16 x 64; full layer k 64 x 1 x 24, v 64 x 1 x 16; windowed k and v twice that; layer 0's
// dense MLP 3 x 64 x 128; MoE layers 4 experts of 3 x 64 x 32 and a 4 x 64 router.
TEST(HfFamiliesMore, MiMoV2FlashNarrowValuesAndWindowedKeyValueHeads) {
  const std::string dims = R"("num_hidden_layers": 3, "hidden_size": 64, "intermediate_size": 128,
      "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 24, "v_head_dim": 16, "vocab_size": 100,
      "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, )";
  const double full = 128 + 64 * 4 * 24 + 4 * 16 * 64 + 64 * 24 + 64 * 16;
  const double windowed = full + 64 * 24 + 64 * 16;
  const double expected = full + 3 * 64 * 128 + 2 * (windowed + 4 * 3 * 64 * 32 + 4 * 64) + 2 * 100 * 64 + 64;
  const ModelSpec ported = parse_hf_config(
      R"({"model_type": "mimo_v2_flash", )" + dims +
          R"("sliding_window": 8, "layer_types": ["full_attention", "sliding_attention", "sliding_attention"],
             "mlp_layer_types": ["dense", "sparse", "sparse"]})",
      "m.json");
  const ModelSpec hub =
      parse_hf_config(R"({"model_type": "mimo_v2_flash", "architectures": ["MiMoV2FlashForCausalLM"], )" + dims +
                          R"("sliding_window_size": 8, "hybrid_layer_pattern": [0, 1, 1], "moe_layer_freq": [0, 1, 1],
             "swa_num_attention_heads": 4, "swa_num_key_value_heads": 2, "swa_head_dim": 24, "swa_v_head_dim": 16,
             "n_shared_experts": null, "add_swa_attention_sink_bias": true})",
                      "hub.json");
  // the Hub file's add_swa_attention_sink_bias: a sink logit per head in its two windowed layers
  // (transformers 5.17 counts MiMo-V2-Flash's 39 x 64: param-counts-realcfg13-h200.jsonl)
  EXPECT_DOUBLE_EQ(model_params(hub, 3) - model_params(ported, 3), 2 * 4);
  for (const ModelSpec* m : {&ported, &hub}) {
    EXPECT_DOUBLE_EQ(model_params(*m, 3), expected + (m == &hub ? 2 * 4 : 0));
    EXPECT_EQ(m->windowed_layers, (std::vector<bool>{false, true, true}));
    EXPECT_EQ(moe_layers(*m), (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(m->attention_shape(0).kv_heads, 1);
    EXPECT_EQ(m->attention_shape(1).kv_heads, 2);
    EXPECT_EQ(m->attention_shape(1).value_head_dim, 16);
    EXPECT_TRUE(m->router_fp32_input);
  }
  // without either list: MiMoV2FlashConfig's layer 0 and every 6th full, the first layer dense
  const ModelSpec defaults = parse_hf_config(
      R"({"model_type": "mimo_v2_flash", "sliding_window": 8, )" +
          std::string(dims).replace(dims.find("\"num_hidden_layers\": 3"), 22, "\"num_hidden_layers\": 7") +
          R"("attention_bias": false})",
      "d.json");
  EXPECT_EQ(defaults.windowed_layers, (std::vector<bool>{false, true, true, true, true, false, true}));
  EXPECT_EQ(moe_layers(defaults), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(rejection(R"({"model_type": "mimo_v2_flash", )" + dims + R"("swa_v_head_dim": 24})", "m.json"),
            "m.json: swa_v_head_dim: is not a model remat can build: sliding-window layers with their own value head "
            "width (16 in the full-attention layers); remat builds one per model (got 24)");
  EXPECT_EQ(rejection(R"({"model_type": "mimo_v2_flash", )" + dims + R"("moe_layer_freq": [0, 1]})", "m.json"),
            "m.json: moe_layer_freq: must hold one 0 (dense) or 1 (MoE) per layer (num_hidden_layers = 3) (got [0,1])");
}

// Laguna: q/k norms of head_dim, a g_proj gate per head (gating true) or per output element (false),
// one shared MLP beside the experts, the first layer dense. Hand count: per layer q and o 64 x 64, k
// and v 64 x 32, q/k norms 2 x 16, two norms 128; g_proj 64 x 4 per head (64 x 64 per element); layer
// 0's MLP 3 x 64 x 128; layer 1's router 4 x 64, shared MLP 3 x 64 x 32, 4 experts of 3 x 64 x 32
// (the router's score-correction bias, 4 numbers it does not train, left out); embeddings and head
// 2 x 100 x 64, final norm 64.
TEST(HfFamiliesMore, LagunaGatePerHeadAndSharedMlp) {
  const std::string base = R"({"model_type": "laguna", "num_hidden_layers": 2, )" + kSmall +
                           R"("num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                              "shared_expert_intermediate_size": 32, )";
  const double attention = 2 * 64 * 64 + 2 * 64 * 32 + 2 * 16 + 128;
  const double layers = 2 * attention + 3 * 64 * 128 + 4 * 64 + 3 * 64 * 32 + 4 * 3 * 64 * 32;
  const ModelSpec per_head =
      parse_hf_config(base + R"("gating": true, "num_attention_heads_per_layer": [4, 4]})", "l.json");
  EXPECT_TRUE(per_head.attention_head_gate);
  EXPECT_EQ(moe_layers(per_head), (std::vector<int64_t>{1}));
  EXPECT_DOUBLE_EQ(model_params(per_head, 2), layers + 2 * 64 * 4 + 2 * 100 * 64 + 64);
  const ModelSpec per_element = parse_hf_config(base + R"("gating": false})", "l.json");
  EXPECT_TRUE(per_element.attention_output_gate);
  EXPECT_DOUBLE_EQ(model_params(per_element, 2), layers + 2 * 64 * 64 + 2 * 100 * 64 + 64);
  EXPECT_EQ(rejection(base + R"("num_attention_heads_per_layer": [4, 8]})", "l.json"),
            "l.json: num_attention_heads_per_layer: is not a model remat can build: head counts that differ within one "
            "layer type (layer_types); remat builds one per type (got [4,8])");
  // Laguna-XS.2 / S-2.1: one count on the full-attention layers, another on the sliding ones; the
  // sliding layer's q and o take 8 heads of 16 (2 x 64 x 64 more) and its gate one per head (64 x 4 more)
  const std::string typed = base + R"("layer_types": ["full_attention", "sliding_attention"], "sliding_window": 16, )";
  const ModelSpec per_type = parse_hf_config(typed + R"("num_attention_heads_per_layer": [4, 8]})", "l.json");
  EXPECT_EQ(per_type.num_attention_heads, 4);
  EXPECT_EQ(per_type.windowed_attention_heads, 8);
  EXPECT_DOUBLE_EQ(model_params(per_type, 2), model_params(per_head, 2) + 2 * 64 * 64 + 64 * 4);
  EXPECT_EQ(rejection(typed + R"("num_attention_heads_per_layer": [4]})", "l.json"),
            "l.json: num_attention_heads_per_layer: must hold one head count per layer (num_hidden_layers = 2) (got 1 "
            "entries)");
}

// Aria's language model: every layer MoE, moe_num_experts SwiGLU experts of intermediate_size,
// moe_topk per token, one shared SwiGLU MLP moe_num_shared_experts x intermediate_size wide, a
// router without bias; by its config class's defaults (8, 2, 2) where the keys are absent.
TEST(HfFamiliesMore, AriaTextSharedMlpBesideExpertsInEveryLayer) {
  const std::string base = R"({"model_type": "aria_text", "num_hidden_layers": 2, )" + kSmall;
  const ModelSpec m =
      parse_hf_config(base + R"("moe_num_experts": 4, "moe_topk": 2, "moe_num_shared_experts": 2})", "a.json");
  EXPECT_EQ(moe_layers(m), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(m.num_experts_per_tok, 2);
  const double attention = 2 * 64 * 64 + 2 * 64 * 32, norms = 2 * 64;
  const double experts = 4 * 3 * 64 * 128, shared = 3 * 64 * 256, router = 64 * 4;
  EXPECT_DOUBLE_EQ(model_params(m, 2), 2 * (attention + norms + experts + shared + router) + 2 * 100 * 64 + 64);
  const ModelSpec defaults = parse_hf_config(base + "\"rms_norm_eps\": 1e-6}", "a.json");
  EXPECT_EQ(defaults.n_routed_experts, 8);
  EXPECT_EQ(defaults.num_experts_per_tok, 2);
  EXPECT_EQ(defaults.n_shared_experts, 2);
}

// Emu3's language model: LLaMA's layer, each block's output dropped by attention_dropout before the
// residual add as well as the attention probabilities (Emu3TextConfig's default 0.1).
TEST(HfFamiliesMore, Emu3TextDropsBlockOutputsByAttentionDropout) {
  const std::string base = R"({"model_type": "emu3_text_model", "num_hidden_layers": 2, )" + kSmall;
  const ModelSpec m = parse_hf_config(base + R"("attention_dropout": 0.2})", "e.json");
  EXPECT_DOUBLE_EQ(m.residual_dropout, 0.2);
  EXPECT_DOUBLE_EQ(m.attention_dropout, 0.2);
  const double layer = 2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 128 + 2 * 64;
  EXPECT_DOUBLE_EQ(model_params(m, 2), 2 * layer + 2 * 100 * 64 + 64);
  const ModelSpec defaults = parse_hf_config(base + "\"rms_norm_eps\": 1e-5}", "e.json");
  EXPECT_DOUBLE_EQ(defaults.residual_dropout, 0.1);
  EXPECT_DOUBLE_EQ(defaults.attention_dropout, 0.1);
  const ModelSpec wrapped = parse_hf_config(
      R"({"model_type": "emu3", "text_config": {"model_type": "emu3_text_model", "num_hidden_layers": 2, )" + kSmall +
          R"("attention_dropout": 0.0}, "vq_config": {"model_type": "emu3_vqgan"}})",
      "w.json");
  EXPECT_DOUBLE_EQ(wrapped.residual_dropout, 0.0);
  EXPECT_DOUBLE_EQ(model_params(wrapped, 2), model_params(m, 2));
}

}  // namespace
}  // namespace remat
