// An eleventh blind set (examples/hf/unseen11/, H200): real configs no measured step had used
// (Command R, Cosmos-Reason2 and Qwen2.5/3-VL, Devstral 2 and Small 2, Dolphin-Mistral-24B,
// ERNIE-4.5-300B, Falcon-180B, Gemma 3/4, GLM-4.5, gpt-oss-120b, Llama-3.1-70B, Mixtral-8x22B, OPT,
// Qwen3-235B under qwen2_moe, Qwen3.6-35B-A3B, QwQ, Qwen3-32B, LFM2.5-VL, CodeLlama-34B, EXAONE 4.5,
// LightOnOCR, Phi-3.5-vision, LLaVA-1.5, DeepSeek-V3, MiniCPM5, Muse-Glimmer, Llama-2 fine-tunes,
// Triangulum) cut to 2-8 layers under random modes. As first compared, 14 of 58 peaks were outside
// 3%; the terms each miss led to are named at the tests below.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "hf_measured.hpp"
#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/layer_cost.hpp"
#include "remat/io/spec_loader.hpp"
#include "remat/spec/framework.hpp"
#include "remat/spec/problems.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

struct KnownMiss {
  double peak_pct;
  double before_pct;
};

// Every case within 3% of its measured peak and 1.6% of the bytes before the step, but the known
// misses, each within 1 point of the error it has now (a change that moves one is seen).
void expect_steps(const std::string& file, const std::map<std::string, KnownMiss>& known, int steps) {
  int checked = 0;
  for (const HfComparison& c : test::measured_hf_steps(file, "h200")) {
    const auto miss = known.find(c.measured.case_name);
    if (miss != known.end()) {
      EXPECT_NEAR(c.peak_error_pct(), miss->second.peak_pct, 1.0) << c.measured.case_name;
      EXPECT_NEAR(c.before_error_pct(), miss->second.before_pct, 1.0) << c.measured.case_name;
    } else {
      EXPECT_LE(std::abs(c.peak_error_pct()), 3.0) << c.measured.case_name;
      EXPECT_LE(std::abs(c.before_error_pct()), 1.6) << c.measured.case_name;
    }
    ++checked;
  }
  EXPECT_EQ(checked, steps) << file;
}

// As first compared, outside 3%: Llama-3.1-70B and OPT GRPO with mbs > 1 (+153%, +87%: the log's
// sequences read as mbs x group), Falcon-180B eager (+28%: its bf16 softmax), GLM-4.5 GRPO (-16.4%)
// and DeepSeek-V3 DPO (-5.35%: fp32 routing weights), CodeLlama-34B LoRA (-8.5%: the output's
// gradient beside the layer's backward), and the vision towers remat did not count (Qwen2.5-VL,
// Qwen3-VL, Cosmos-Reason2, LightOnOCR, LFM2.5-VL: -4% .. -24% peak, -6% .. -62% before the step).
// Muse-Glimmer's tower (-5.8%, before -14.9%) is counted too now. Qwen3-32B's non-reentrant GRPO at
// 4 x 12k tokens, the last one over (+3.65%), is within 0.1% since a layer's backward frees what a
// node saved as the node's backward ends (test_hf_backward_order.cpp).
TEST(HfUnseen11, BlindSet) { expect_steps("steps-unseen11-h200.jsonl", {}, 54); }

// Variants that isolate each miss, 10 measured and 6 traced (peak-traces-h200/unseen11). GLM-4.5's
// non-reentrant GRPO step was over by 3.8%: its trace holds three fp32 routed-rows x hidden gradients
// at the peak and no bf16 cast of one, which the reentrant step's trace holds (DeepSeek-V2-Lite's two
// steps in steps-unseen12-followup-h200.jsonl do the same); priced so since, -0.02%.
TEST(HfUnseen11, FollowUps) { expect_steps("steps-unseen11-followup-h200.jsonl", {}, 16); }

HfStep one_step(const std::string& line) { return parse_hf_run(line + "\n", "log.jsonl").front(); }

std::string grpo_line(int batch_sequences) {
  return R"({"case": "g", "config": "c.json", "mode": "full", "checkpointing": "none", "attention": "sdpa",)"
         R"( "precision": "bf16", "objective": "grpo", "gpu": "NVIDIA H200", "num_hidden_layers": 2, "seq": 2048,)"
         R"( "mbs": 4, "lora_rank": 0, "grpo_group": 4, "step": 3, "lora_dropout": 0, "lora_targets": [],)"
         R"( "batch_sequences": )" +
         std::to_string(batch_sequences) +
         R"(, "peak_allocated_bytes": 1e9, "allocated_before_bytes": 1e8, "step_time_s": 0.1})";
}

// examples/hf/hf_step.py runs one prompt's group whatever the case's mbs: Llama-3.1-70B's GRPO step
// with mbs 4 and a group of 4 ran 4 sequences, which remat had read as 16 (+153%, now -0.01%).
TEST(HfUnseen11, GrpoPromptsAreSequencesOverTheGroup) {
  EXPECT_EQ(one_step(grpo_line(4)).mbs, 1);
  EXPECT_EQ(one_step(grpo_line(8)).mbs, 2);
  try {
    one_step(grpo_line(6));
    FAIL() << "6 sequences in groups of 4 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("batch_sequences"), std::string::npos) << e.what();
  }
}

ModelSpec corpus_model(const std::string& name) {
  return test::hf_model_as_built(std::string(REMAT_TEST_DATA) + "/data/hf_configs/" + name);
}

// FalconAttention's eager path without alibi takes softmax(dtype=hidden_states.dtype) and its layer
// returns those probabilities (Falcon-180B eager: +58% / +41% / +28% as first compared).
TEST(HfUnseen11, FalconEagerSoftmaxInBf16) {
  const ModelSpec m = corpus_model("falcon-180b-chat.json");
  EXPECT_TRUE(m.eager_softmax_bf16);
  EXPECT_TRUE(m.layer_returns_attention_probs);
  TrainingSpec t;
  t.mbs = 1, t.gbs = 1, t.seq = 1024, t.precision = Precision::bf16, t.flash_attention = false;
  t = apply_framework(t, kHfFramework);
  const LayerDef layer = build_layer(m, rank_shape(t), 0);
  const Block& attn = layer.blocks.front();
  EXPECT_EQ(attn.tensor_bytes("probs32"), 0);
  const double scores = 232.0 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(attn.tensor_bytes("probs"), scores * 2);
  const auto op = std::find_if(attn.ops.begin(), attn.ops.end(), [](const OpDef& o) { return o.name == "attention"; });
  ASSERT_NE(op, attn.ops.end());
  // the returned tensor is the one PV saved: only autograd's zero gradient for it is new
  EXPECT_DOUBLE_EQ(op->reentrant_held_bytes, scores * 2);
}

// DeepSeek-V3's and GLM-4.5's routers hand the experts fp32 weights: grouped_mm's weighted outputs
// are fp32 (GLM-4.5 GRPO -16.4%, DeepSeek-V3 DPO -5.35% as first compared). GLM-4.5 cut to 4 layers
// (3 dense), 1 x 1024 tokens, top 8 of 160 experts of width 5120: 8192 routed rows.
TEST(HfUnseen11, Fp32RoutingWeightsWeighTheExpertsInFp32) {
  ModelSpec m = corpus_model("glm-4.5.json");
  EXPECT_TRUE(m.router_fp32_input);
  m.num_hidden_layers = 4;
  TrainingSpec t;
  t.mbs = 1, t.gbs = 1, t.seq = 1024, t.precision = Precision::bf16;
  t = apply_framework(t, kHfFramework);
  const LayerDef layer = build_layer(m, rank_shape(t), 3);
  const double rows = 1024.0 * 8, h = 5120;
  bool found = false;
  for (const Block& b : layer.blocks)
    for (const OpDef& op : b.ops)
      if (op.name == "experts_probs_out") {
        found = true;
        EXPECT_DOUBLE_EQ(op.fwd_working_bytes, 2 * rows * h * 4);
        // three fp32 gradients and the scattered one in bf16, which a non-reentrant backward frees
        EXPECT_DOUBLE_EQ(op.working_bytes, 3 * rows * h * 4 + rows * h * 2);
        EXPECT_DOUBLE_EQ(op.early_stop_released_bytes, rows * h * 2);
        EXPECT_DOUBLE_EQ(op.reentrant_held_bytes, 0);
      }
  EXPECT_TRUE(found);
}

// The layer output's gradient beside a checkpointed layer's backward, and a reentrant replay's
// output (CodeLlama-34B's LoRA steps at 12k-49k tokens: -4.0% .. -8.5% as first compared). Two
// layers of Llama-3.2-1B at 4096 tokens: the transient grows by one bf16 hidden row per token under
// early stop, two under the full replay.
TEST(HfUnseen11, CheckpointedLayerHoldsItsOutputGradient) {
  const ModelSpec m = corpus_model("llama-3.2-1b-instruct.json");
  TrainingSpec t;
  t.mbs = 1, t.gbs = 1, t.seq = 4096, t.precision = Precision::bf16;
  t = apply_framework(t, kHfFramework);
  LayerDef layer = build_layer(m, rank_shape(t), 0);
  ASSERT_TRUE(layer.pytorch_autograd);
  const double row = 4096.0 * 2048 * 2;
  EXPECT_DOUBLE_EQ(layer.input_bytes, row);
  // without PyTorch's engine the SwiGLU's gradients would also sit on the down projection's input
  // (f-wide) in place of its weight gradient (f x h): see HfBackwardOrder
  const double swiglu_freeing = 8192.0 * 2048 * 2 - 4096.0 * 8192 * 2;
  LayerChoice full;
  full.mode = LayerMode::full;
  for (const bool early_stop : {true, false}) {
    const double with = layer_cost(layer, full, early_stop, HardwareSpec{}).transient_bytes;
    layer.pytorch_autograd = false;
    const double without = layer_cost(layer, full, early_stop, HardwareSpec{}).transient_bytes;
    layer.pytorch_autograd = true;
    EXPECT_NEAR(with - without, (early_stop ? 1 : 2) * row + swiglu_freeing, 1) << early_stop;
  }
}

// PEFT's all-linear on a multimodal wrapper adapts its towers' linear modules too. Measured while remat
// refused them (reports/hf/refused-unseen11-vision-all-linear-h200.jsonl), these steps are priced now that
// remat lists the towers' modules (held adapters, never trained): Gemma 4 31B's and EXAONE 4.5's within
// 0.63% as first compared; MuSE-Glimmer's since its tower's modules are listed too: +0.21%.
TEST(HfUnseen11, AllLinearOnVisionWrappers) {
  int priced = 0;
  const std::string root = std::string(REMAT_TEST_DATA) + "/../";
  for (const HfStep& s : last_steps(parse_hf_run(
           test::read_text(root + "reports/hf/refused-unseen11-vision-all-linear-h200.jsonl"), "refused.jsonl"))) {
    if (s.oom) continue;
    ModelSpec m = test::model(root + s.config);
    m.set_layer_count(s.num_layers);
    const HfComparison c = compare_hf(s, m, test::hardware("h200"), "refused.jsonl");
    ++priced;
    EXPECT_LT(std::abs(c.peak_error_pct()), 0.8)
        << s.case_name;  // 0.7 before SFT's bf16 head dropped its input gradient
    EXPECT_LT(std::abs(c.before_error_pct()), 0.1) << s.case_name;
  }
  EXPECT_EQ(priced, 4);
}

}  // namespace
}  // namespace remat
