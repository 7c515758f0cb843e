// Step 3.5's language model (issue 24: different head counts per layer type): its parameters as
// transformers' Step3p7TextConfig and modeling_step3p7.py build them, the Hub checkpoints' remote-code
// spelling, and the sliding-window layers' own query heads in the attention block, derived by hand.
#include <gtest/gtest.h>

#include "remat/cost/block.hpp"
#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/params.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/plan.hpp"
#include "remat/spec/training_spec.hpp"
#include "remat/spec/validate.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

// The remote code's spelling: hidden 64, head dim 16, 2 key/value groups; the full-attention layer 4
// query heads, the two sliding ones 6; layer 0 dense (128 wide), layers 1 and 2 with 4 experts of 32
// (top 2) beside a shared MLP of 32; one MTP layer, whose entries pad the per-layer lists.
const std::string kStep = R"({"model_type": "step3p5", "architectures": ["Step3p5ForCausalLM"],
    "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_attention_groups": 2,
    "head_dim": 16, "vocab_size": 100, "num_hidden_layers": 3, "num_nextn_predict_layers": 1,
    "layer_types": ["full_attention", "sliding_attention", "sliding_attention", "full_attention"],
    "sliding_window": 8, "max_position_embeddings": 4096, "use_head_wise_attn_gate": true,
    "attention_other_setting": {"attention_type": "sliding_attention", "num_attention_heads": 6,
        "num_attention_groups": 2, "head_dim": 16, "true_head_dim": 16},
    "rope_theta": [5000000.0, 10000.0, 10000.0, 5000000.0], "partial_rotary_factors": [0.5, 1.0, 1.0, 0.5],
    "use_moe": true, "moe_layers_enum": "1,2,3", "moe_num_experts": 4, "moe_top_k": 2,
    "moe_intermediate_size": 32, "share_expert_dim": 32, "swiglu_limits": [0.0, 0.0, 7.0, 0.0]})";

// One attention layer: q and o of heads x 16, k and v of 2 x 16, the per-head gate's g_proj (64 x
// heads), q_norm and k_norm of 16, the input norm.
double attention(double heads) { return 2 * 64 * heads * 16 + 2 * 64 * 32 + 64 * heads + 2 * 16 + 64; }

TEST(Step3p5, ParametersAsTransformersBuildsThem) {
  const ModelSpec m = parse_hf_config(kStep, "s.json");
  EXPECT_EQ(m.num_key_value_heads, 2);
  EXPECT_EQ(m.windowed_attention_heads, 6);
  EXPECT_EQ(test::moe_layers(m), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(m.sliding_window_tokens, 8);
  EXPECT_EQ(m.windowed_layers, (std::vector<bool>{false, true, true}));
  EXPECT_DOUBLE_EQ(m.rope_theta, 5e6);
  EXPECT_DOUBLE_EQ(m.rotary_fraction, (0.5 + 1 + 1) / 3);
  const double dense = 3 * 64 * 128 + 64;
  // 4 experts (gate, up, down), the router, the shared MLP, the post-attention norm
  const double moe = 4 * 3 * 64 * 32 + 4 * 64 + 3 * 64 * 32 + 64;
  EXPECT_DOUBLE_EQ(layer_params(m, 0, 1, 1).total(), attention(4) + dense);
  EXPECT_DOUBLE_EQ(layer_params(m, 1, 1, 1).total(), attention(6) + moe);
  EXPECT_DOUBLE_EQ(model_params(m, 3), attention(4) + dense + 2 * (attention(6) + moe) + 2 * 100 * 64 + 64);
}

// transformers' own spelling of the same model (a re-saved Step3p7TextConfig) builds it too.
TEST(Step3p5, TransformersSpellingLoadsTheSameModel) {
  const ModelSpec hub = parse_hf_config(kStep, "s.json");
  const ModelSpec saved = parse_hf_config(R"({"model_type": "step3p5", "hidden_size": 64, "intermediate_size": 128,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100, "num_hidden_layers": 3,
      "layer_types": ["full_attention", "sliding_attention", "sliding_attention"], "sliding_window": 8,
      "num_sliding_attention_heads": 6, "mlp_layer_types": ["dense", "sparse", "sparse"], "n_routed_experts": 4,
      "num_experts_per_tok": 2, "moe_intermediate_size": 32, "share_expert_dim": 32})",
                                          "s.json");
  EXPECT_EQ(model_params(saved, 3), model_params(hub, 3));
  EXPECT_EQ(saved.windowed_attention_heads, 6);
}

// The attention block of a sliding-window layer projects and keeps 6 heads, the full layer's 4:
// q and o per token; the gate's sigmoid keeps one bf16 value per head.
TEST(Step3p5, SlidingLayersKeepTheirOwnHeads) {
  const ModelSpec m = parse_hf_config(kStep, "s.json");
  RankShape r;
  r.b = 1, r.s = 32;
  r.weights_train = true;
  auto bytes = [](const Block& b, const std::string& name) {
    for (const auto& t : b.tensors)
      if (t.name == name) return t.bytes;
    return -1.0;
  };
  const Block full = gqa_block(r, m, false, false), sliding = gqa_block(r, m, true, false);
  EXPECT_DOUBLE_EQ(bytes(full, "q"), 32 * 4 * 16 * 2.0);
  EXPECT_DOUBLE_EQ(bytes(sliding, "q"), 32 * 6 * 16 * 2.0);
  EXPECT_DOUBLE_EQ(bytes(sliding, "k"), 32 * 2 * 16 * 2.0);
  EXPECT_DOUBLE_EQ(bytes(sliding, "head_gate"), 32 * 6 * 2.0);
  EXPECT_DOUBLE_EQ(bytes(sliding, "o_gated"), 32 * 6 * 16 * 2.0);
}

TEST(Step3p5, RefusesWhatTransformersDoesNotBuild) {
  auto with = [](const std::string& from, const std::string& to) {
    std::string text = kStep;
    text.replace(text.find(from), from.size(), to);
    return test::hf_rejection(text, "s.json");
  };
  EXPECT_EQ(with(R"("num_attention_groups": 2, "head_dim": 16, "true)",
                 R"("num_attention_groups": 1, "head_dim": 16, "true)"),
            "s.json: attention_other_setting.num_attention_groups: is not a model remat can build as transformers "
            "does: its sliding-window layers take their own head count only, with the model's key/value heads and "
            "head dim (got 1)");
  EXPECT_EQ(with(R"("sliding_window": 8, )", ""),
            "s.json: sliding_window: must be a positive window: the sliding_attention layers have their own head "
            "count (6)");
  EXPECT_EQ(with(R"("moe_layers_enum": "1,2,3")", R"("moe_layers_enum": "1;2")"),
            "s.json: moe_layers_enum: must list layer indices separated by commas (got \"1;2\")");
  EXPECT_EQ(with(R"("partial_rotary_factors": [0.5, 1.0, 1.0, 0.5])", R"("partial_rotary_factors": [0.5, 1.0])"),
            "s.json: partial_rotary_factors: must hold one share per layer (num_hidden_layers = 3) (got 2 entries)");
  // tp must divide both head counts: 4 divides the full layers' 4, not the sliding layers' 6
  const ModelSpec m = parse_hf_config(kStep, "s.json");
  TrainingSpec t;
  t.tp = 4, t.pp = 1, t.dp = 1, t.mbs = 1, t.gbs = 1, t.seq = 64;
  const std::vector<Problem> problems = validate_training(t, m);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems.front().line().find("the sliding-window layers' query heads"), std::string::npos)
      << problems.front().line();
}

// Step 3.7's multimodal wrapper: its language model is text_config (Step3p7TextConfig's defaults:
// transformers builds 195,843,833,088 parameters outside the vision tower).
TEST(Step3p5, Step3p7WrapperReadsTextConfig) {
  const ModelSpec m = parse_hf_config(R"({"model_type": "step3p7", "vision_config": {"hidden_size": 1536},
      "text_config": {"model_type": "step3p5"}})",
                                      "s.json");
  EXPECT_EQ(m.num_hidden_layers, 45);
  EXPECT_EQ(m.n_routed_experts, 288);
  EXPECT_DOUBLE_EQ(model_params(m, 45), 195843833088.0);
}

// A step3p7 file with the language model's keys at the top (aiconfigurator's Step-3.7-Flash) reads them
// as step3p5's: the same model as that text config nested, and a note that transformers builds its
// default from such a file. The flat Step-3.7-Flash (vocab 128896) counted 195,844,496,640 through
// Step3p7Config(text_config=its keys) on the GPU machine: the defaults' 195,843,833,088 plus 81 x 4096
// x 2 for the larger embedding and head.
TEST(Step3p5, Step3p7WithTheLanguageModelAtTheTopReadsItsKeys) {
  std::string flat = kStep;
  flat.replace(flat.find("\"step3p5\""), 9, "\"step3p7\"");
  const ModelSpec top = parse_hf_config(flat, "s.json"), own = parse_hf_config(kStep, "s.json");
  EXPECT_DOUBLE_EQ(model_params(top, 3), model_params(own, 3));
  EXPECT_EQ(top.notes.front(),
            "model_type step3p7 without text_config: the language model's keys at the top are read as step3p5; "
            "transformers 5.17's Step3p7Config reads text_config only, and from this file builds its default "
            "language model");
  const ModelSpec flash =
      parse_hf_config(R"({"model_type": "step3p7", "hidden_size": 4096, "vocab_size": 128896})", "f.json");
  EXPECT_DOUBLE_EQ(model_params(flash, 45), 195843833088.0 + 81 * 4096 * 2);
  EXPECT_DOUBLE_EQ(model_params(flash, 45), 195844496640.0);
}

}  // namespace
}  // namespace remat
