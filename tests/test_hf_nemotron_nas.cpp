// Nemotron-NAS's block_configs and DeciLM-7B's per-layer key/value heads: layers whose shapes
// differ one by one (LayerVariant), counted as DeciLM's modeling code builds them, costed layer by
// layer as a model of each shape alone costs its layers, and the constructs remat has no block
// for refused by name.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "remat/cost/estimate.hpp"
#include "remat/cost/params.hpp"
#include "remat/search/megatron_flags.hpp"
#include "remat/spec/pipeline_split.hpp"
#include "shell_run.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

std::string rejection(const std::string& text) { return test::hf_rejection(text, "n.json"); }

const std::string kTop = R"({"model_type": "nemotron-nas", "architectures": ["DeciLMForCausalLM"],
  "hidden_size": 768, "num_attention_heads": 8, "num_key_value_heads": null, "intermediate_size": null,
  "vocab_size": 1000, "hidden_act": "silu", "tie_word_embeddings": false, "block_configs": [)";

std::string block(const std::string& attention, const std::string& ffn) {
  return R"({"attention": {)" + attention + R"(}, "ffn": {)" + ffn + "}}";
}
const std::string kGroup2 = R"("n_heads_in_group": 2, "no_op": false, "replace_with_linear": false)";
const std::string kGroup4 = R"("n_heads_in_group": 4, "no_op": false)";
const std::string kNoAttention = R"("n_heads_in_group": null, "no_op": true)";
const std::string kMult15 = R"("ffn_mult": 1.5, "no_op": false)";  // int(2 * 1.5 * 768 / 3) = 768
const std::string kMult25 = R"("ffn_mult": 2.5)";                  // 1280
const std::string kMult07 = R"("ffn_mult": 0.7)";                  // int(358.4) = 358 -> 512
const std::string kNoFfn = R"("ffn_mult": null, "no_op": true)";

ModelSpec nas(const std::vector<std::string>& blocks) {
  std::string text = kTop;
  for (size_t i = 0; i < blocks.size(); ++i) text += (i ? ", " : "") + blocks[i];
  return parse_hf_config(text + "]}", "n.json");
}

// By hand, as DeciLMDecoderLayer builds them: attention (input norm, q and o of 768 x 768, k and v of
// 768 x kv x 96) unless no_op; MLP (post-attention norm, gate, up, down of 768 x width) unless no_op.
double attention_params(double kv_heads) { return 768 + 2 * 768.0 * 768 + 2 * 768.0 * kv_heads * 96; }
double mlp_params(double width) { return 768 + 3 * 768.0 * width; }

TEST(HfNemotronNas, EachLayerItsOwnShapeCountedAsDeciLMBuildsIt) {
  const ModelSpec m =
      nas({block(kGroup2, kMult15), block(kNoAttention, kMult25), block(kGroup4, kNoFfn), block(kGroup2, kMult07)});
  EXPECT_EQ(m.num_hidden_layers, 4);  // from the list: the config has no num_hidden_layers
  EXPECT_EQ(m.num_key_value_heads, 4);
  EXPECT_EQ(m.intermediate_size, 768);  // the first layer's: the model's own shape
  EXPECT_EQ(m.mlp_width(1), 1280);
  EXPECT_EQ(m.mlp_width(3), 512);
  EXPECT_EQ(m.attention_shape(2).kv_heads, 2);
  EXPECT_EQ(m.attention_shape(3).kv_heads, 4);
  EXPECT_EQ(m.layer_mixers, (std::vector<Mixer>{Mixer::attention, Mixer::none, Mixer::attention, Mixer::attention}));
  EXPECT_EQ(m.layer_has_ffn, (std::vector<bool>{true, true, false, true}));
  // four shapes, four kinds
  std::vector<int> kinds;
  for (int64_t i = 0; i < 4; ++i) kinds.push_back(m.layer_kind(i));
  EXPECT_EQ(kinds, (std::vector<int>{0, 9 + kLayerKinds, 2 + 2 * kLayerKinds, 3 * kLayerKinds}));
  EXPECT_EQ(m.layer_kind_count(), 4 * kLayerKinds);

  EXPECT_DOUBLE_EQ(layer_params(m, 0, 1, 1).total(), attention_params(4) + mlp_params(768));
  EXPECT_DOUBLE_EQ(layer_params(m, 1, 1, 1).total(), mlp_params(1280));
  EXPECT_DOUBLE_EQ(layer_params(m, 2, 1, 1).total(), attention_params(2));
  EXPECT_DOUBLE_EQ(layer_params(m, 3, 1, 1).total(), attention_params(4) + mlp_params(512));
  const double layers =
      2 * attention_params(4) + attention_params(2) + mlp_params(768) + mlp_params(1280) + mlp_params(512);
  EXPECT_DOUBLE_EQ(model_params(m, 4), layers + 2 * 1000.0 * 768 + 768);  // untied head, final norm
}

// Layers of two shapes cost what each shape's own model costs for them: with F the fixed part
// (embedding, head, loss) and a, b one layer of each, ABAB = F + 2a + 2b, AA = F + 2a, BB = F + 2b
// and AAAA = F + 4a, so ABAB = BB + AAAA - AA in kept activations, FLOPs and time.
TEST(HfNemotronNas, MixedLayersCostWhatEachShapeCostsAlone) {
  const std::string a = block(kGroup2, kMult15), b = block(kNoAttention, kMult25);
  const ModelSpec mixed = nas({a, b, a, b}), aa = nas({a, a}), bb = nas({b, b}), aaaa = nas({a, a, a, a});
  EXPECT_TRUE(aa.layer_variants.empty());  // one shape: the model's own
  EXPECT_TRUE(bb.layer_variants.empty());
  EXPECT_EQ(bb.intermediate_size, 1280);
  const HardwareSpec hw = test::hardware("h200");
  const TrainingSpec t = test::layout(1, 1, 1, 1, 1, 2048);
  for (Strategy s : {Strategy::none, Strategy::full}) {
    const auto stage = [&](const ModelSpec& m) {
      Plan plan;
      plan.strategy = s;
      plan.recompute_layers = {m.num_hidden_layers};  // every layer
      return estimate(m, hw, t, plan, 1e30).stages.at(0);
    };
    const StageEstimate abab = stage(mixed), two_a = stage(aa), two_b = stage(bb), four_a = stage(aaaa);
    const auto sum = [&](auto field) { return field(two_b) + field(four_a) - field(two_a); };
    const double activations = sum([](const StageEstimate& e) { return e.memory_bytes.activations; });
    EXPECT_NEAR(abab.memory_bytes.activations, activations, 1e-6 * activations) << int(s);
    const double flops = sum([](const StageEstimate& e) { return e.flops.forward + e.flops.backward; });
    EXPECT_NEAR(abab.flops.forward + abab.flops.backward, flops, 1e-9 * flops) << int(s);
    const double time_s = sum([](const StageEstimate& e) { return e.time_s.forward + e.time_s.backward; });
    EXPECT_NEAR(abab.time_s.forward + abab.time_s.backward, time_s, 1e-9 * time_s) << int(s);
  }
}

// DeciLM-7B: num_key_value_heads_per_layer gives each layer its key/value heads.
TEST(HfNemotronNas, DeciPerLayerKeyValueHeads) {
  const ModelSpec m = parse_hf_config(R"({"model_type": "deci", "hidden_size": 768, "intermediate_size": 1024,
      "num_attention_heads": 8, "num_hidden_layers": 3, "vocab_size": 1000, "num_key_value_heads_per_layer": [4, 2, 4]})",
                                      "d.json");
  EXPECT_EQ(m.num_key_value_heads, 4);
  EXPECT_EQ(m.attention_shape(1).kv_heads, 2);
  EXPECT_EQ(m.mlp_width(1), 1024);
  EXPECT_DOUBLE_EQ(model_params(m, 3), 2 * attention_params(4) + attention_params(2) + 3 * (768 + 3 * 768.0 * 1024) +
                                           2 * 1000.0 * 768 + 768);
  EXPECT_EQ(test::hf_rejection(R"({"model_type": "deci", "hidden_size": 768, "intermediate_size": 1024,
      "num_attention_heads": 8, "num_hidden_layers": 2, "vocab_size": 1000, "num_key_value_heads_per_layer": [4, 3]})",
                               "d.json"),
            "d.json: num_key_value_heads_per_layer: each must divide num_attention_heads = 8 (got 3)");
}

// What remat has no block for is refused by name, with the block's path.
TEST(HfNemotronNas, RefusedConstructsNamedWithTheirBlock) {
  const auto config = [](const std::string& attention, const std::string& ffn) {
    return kTop + block(kGroup2, kMult15) + ", " + block(attention, ffn) + "]}";
  };
  EXPECT_EQ(rejection(config(R"("no_op": false, "replace_with_linear": true)", kMult15)),
            "n.json: block_configs[1].attention.replace_with_linear: is not a model remat can build: attention "
            "replaced by one linear layer (got true)");
  EXPECT_EQ(rejection(config(R"("n_heads_in_group": 8, "window_length": 4096)", kMult15)),
            "n.json: block_configs[1].attention.window_length: is not a model remat can build: sliding-window "
            "attention in some layers of block_configs (got 4096)");
  EXPECT_EQ(rejection(config(kGroup2, R"("ffn_mult": 1.0, "moe": {"num_local_experts": 8})")),
            "n.json: block_configs[1].ffn.moe: is not a model remat can build: mixture-of-experts blocks in "
            "block_configs (got {\"num_local_experts\":8})");
  EXPECT_EQ(rejection(config(R"("n_heads_in_group": 3)", kMult15)),
            "n.json: block_configs[1].attention.n_heads_in_group: must be a positive divisor of "
            "num_attention_heads = 8 (got 3)");
  EXPECT_EQ(rejection(config(R"("n_heads_in_group": "two")", kMult15)),
            "n.json: block_configs[1].attention.n_heads_in_group: must be an integer (got \"two\")");
  EXPECT_EQ(rejection(config(kGroup2, R"("ffn_mult": 1.0, "shift": 2)")),
            "n.json: block_configs[1].ffn.shift: is not a model remat can build: a block variant remat does not "
            "know (got 2)");
  EXPECT_EQ(rejection(kTop + block(kGroup2, kMult15) + R"(], "num_hidden_layers": 2})"),
            "n.json: block_configs: must list one block per layer (num_hidden_layers = 2) (got 1 entries)");
  std::string given_heads = kTop + block(kGroup2, kMult15) + "]}";
  given_heads.replace(given_heads.find(R"("num_key_value_heads": null)"), 27, R"("num_key_value_heads": 2)");
  EXPECT_EQ(rejection(given_heads),
            "n.json: num_key_value_heads: must be null where block_configs give each layer's "
            "(its first block's is 4) (got 2)");
  EXPECT_EQ(rejection(kTop + R"(]})"),
            "n.json: block_configs: must be a list of one {attention, ffn} object per layer (got [])");
}

// Megatron-LM builds the layers from the same file (--heterogeneous-layers-config-path); a real
// config's count is DeciLM's: Llama-3.3-Nemotron-Super-49B-v1, 49,867,145,216 by hand.
TEST(HfNemotronNas, SuperFortyNineBillionCountAndMegatronFlags) {
  const std::string file = std::string(REMAT_TEST_DATA) + "/data/hf_configs/llama-3.3-nemotron-super-49b-v1.json";
  const ModelSpec m = parse_hf_config(test::read_text(file), file);
  EXPECT_DOUBLE_EQ(model_params(m, m.num_hidden_layers), 49'867'145'216.0);
  int64_t without_attention = 0;
  for (int64_t i = 0; i < m.num_hidden_layers; ++i) without_attention += m.mixer(i) == Mixer::none;
  EXPECT_EQ(without_attention, 31);
  EXPECT_EQ(m.layer_variants.size(), 6u);  // the model's own shape and 5 other MLP widths
  const TrainingSpec t = test::layout(4, 2, 1, 1, 1, 4096);
  const std::string flags = one_line(megatron_args(m, t, megatron_split(m, t), MegatronRecompute{}, true).all());
  EXPECT_NE(flags.find("--heterogeneous-layers-config-path " + file), std::string::npos) << flags;
  EXPECT_NE(flags.find("--num-query-groups 8"), std::string::npos) << flags;
}

// The JSON report lists each layer's MLP width and key/value heads where layers differ (0: none).
TEST(HfNemotronNas, ReportListsEachLayersShape) {
  const std::string file = std::string(REMAT_TEST_DATA) + "/data/hf_configs/llama-3.3-nemotron-super-49b-v1.json";
  const test::ShellResult r = test::run_shell(test::remat_command({"estimate", "--model", file, "--hardware", "h200",
                                                                   "--tp", "1", "--pp", "1", "--json", "-"}) +
                                              " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 1);  // 1: the 49B model does not fit one H200 (the report is written)
  const nlohmann::json model = nlohmann::json::parse(r.out).at("model");
  const auto widths = model.at("layer_mlp_widths").get<std::vector<int64_t>>();
  const auto heads = model.at("layer_key_value_heads").get<std::vector<int64_t>>();
  ASSERT_EQ(widths.size(), 80u);
  ASSERT_EQ(heads.size(), 80u);
  // block 0: n_heads_in_group 8 of 64 heads, ffn_mult 2.625 (int(2 x 2.625 x 8192 / 3) = 14336)
  EXPECT_EQ(widths[0], 14336);
  EXPECT_EQ(heads[0], 8);
  EXPECT_EQ(std::count(heads.begin(), heads.end(), 0), 31);           // the blocks without attention
  EXPECT_EQ(*std::max_element(widths.begin(), widths.end()), 28672);  // ffn_mult 5.25
}

}  // namespace
}  // namespace remat
