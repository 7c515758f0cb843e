// A tenth blind set (examples/hf/unseen10/, H200): real configs of the models people fine-tune
// (Llama 3, Mistral, Qwen 2.5/3, Gemma 2/3, Phi-3/4, SmolLM3, Zephyr, Yi, StarCoder2, Falcon,
// DeepSeek-V2-Lite, Qwen3-30B-A3B, OLMoE, Granite MoE; set b: BLOOM, GPT-J, Phi-1, RedPajama,
// WizardCoder, StableLM, Granite Code, Mixtral) under random modes: PEFT's own target names
// (query_key_value, c_attn, ...) and all-linear, ranks 8-128, dropout, mbs 1-4, 1k-24k tokens,
// eager, mixed precision, GRPO and DPO. As first compared, 7 of 101 peaks were outside 3%; the
// terms each miss led to are named at the tests below.
#include <gtest/gtest.h>

#include <map>

#include "hf_measured.hpp"
#include "remat/cost/exact_blocks.hpp"
#include "remat/io/spec_loader.hpp"
#include "remat/spec/framework.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

// Every case within `peak_pct` of its measured peak, but the known misses, each within 1 point of
// the error it has now (a change that moves one is seen).
void expect_peaks(const std::string& file, double peak_pct, const std::map<std::string, double>& known, int steps) {
  int checked = 0;
  for (const HfComparison& c : test::measured_hf_steps(file, "h200")) {
    const auto miss = known.find(c.measured.case_name);
    if (miss != known.end())
      EXPECT_NEAR(c.peak_error_pct(), miss->second, 1.0) << c.measured.case_name;
    else
      EXPECT_LE(std::abs(c.peak_error_pct()), peak_pct) << c.measured.case_name;
    EXPECT_LE(std::abs(c.before_error_pct()), 1.6) << c.measured.case_name;
    ++checked;
  }
  EXPECT_EQ(checked, steps) << file;
}

// As first compared: Falcon-7B -92% (torch's math sdpa in fp32 for its one key/value head), GPT-2
// eager +12% (its softmax in bf16), StarCoder2's mixed steps -13.7% (DPO's per-row log-softmax in
// fp32 under autocast), +5.1% and Qwen3-8B's +3.3% (a checkpointed layer keeps no autocast weight
// copy). StarCoder2's non-reentrant mixed DPO step with LoRA dropout was -7.4%: with the model's own
// dropouts off its trace could be read (steps-unseen10-probe-h200.jsonl), and the replay holds each
// fp32 adapter's fp32 cast of a bf16 input and its fp32 dropped copy; then +3.3%. Under autocast the
// adapters' backward starts with two bf16 gradients of the layer's width, not an fp32 one and a cast
// back (the replay-start term): now -1.0%.
TEST(HfUnseen10, BlindSet) { expect_peaks("steps-unseen10-h200.jsonl", 3.0, {}, 59); }

TEST(HfUnseen10, StarCoder2DropoutProbes) { expect_peaks("steps-unseen10-probe-h200.jsonl", 3.0, {}, 4); }

TEST(HfUnseen10, FollowUps) { expect_peaks("steps-unseen10-followup-h200.jsonl", 3.0, {}, 14); }

// Set b, blind: BLOOM's reentrant step (-16.9%, now -1.07%) holds the probabilities its block
// returns and their zero gradient in the replay; Gemma 3's mixed DPO had its reference copy in bf16
// (before the step -12.4%, now -0.02%), Phi-4's first layer under a down_proj adapter saved its
// SwiGLU (+6.5%, now +0.2%), Phi-1's parallel MLP beside attention adapters (+4.4%, now +0.8%).
TEST(HfUnseen10, BlindSetB) { expect_peaks("steps-unseen10b-h200.jsonl", 3.0, {}, 42); }

// PEFT's all-linear, measured: LLaMA, Phi-3 (fused qkv_proj and gate_up_proj), StarCoder2 (c_fc,
// c_proj), GPT-2 (Conv1D c_attn, both c_proj), Falcon-7B, BLOOM, Phi-1, WizardCoder (GPTBigCode),
// Qwen3, SmolLM3, and Qwen3-30B-A3B, where it adapts the router and, through PEFT's conversion, the routed
// experts: within 1.54%.
TEST(HfUnseen10, AllLinearWithinTwoPercent) {
  int checked = 0;
  for (const std::string file : {"steps-unseen10-h200.jsonl", "steps-unseen10b-h200.jsonl"})
    for (const HfComparison& c : test::measured_hf_steps(file, "h200")) {
      if (c.measured.lora_targets != std::vector<std::string>{"all-linear"}) continue;
      EXPECT_LE(std::abs(c.peak_error_pct()), 2.0) << c.measured.case_name;
      ++checked;
    }
  EXPECT_EQ(checked, 11);
}

// Falcon-7B's attention through the math kernel, by hand: b = 1, s = 2048, 71 heads of 64, one
// key/value head. Saved: q and k scaled in fp32 (71 and 1 heads), v in fp32, the fp32
// probabilities; backward holds three more fp32 score-sized tensors.
TEST(HfUnseen10, FalconMathSdpaSavesFp32Probabilities) {
  const std::string file = std::string(REMAT_TEST_DATA) + "/../examples/hf/unseen10/falcon-7b.json";
  const ModelSpec m = model_as_built(parse_hf_config(test::read_text(file), file), kHfFramework);
  TrainingSpec t;
  t.mbs = 1, t.gbs = 1, t.seq = 2048, t.precision = Precision::bf16;
  t = apply_framework(t, kHfFramework);
  const LayerDef layer = build_layer(m, rank_shape(t), 0);
  const Block& attn = layer.blocks.front();
  const double rows = 2048, scores = 71.0 * 2048 * 2048;
  EXPECT_DOUBLE_EQ(attn.tensor_bytes("q32"), rows * 71 * 64 * 4);
  EXPECT_DOUBLE_EQ(attn.tensor_bytes("k32"), rows * 64 * 4);
  EXPECT_DOUBLE_EQ(attn.tensor_bytes("v32"), rows * 64 * 4);
  EXPECT_DOUBLE_EQ(attn.tensor_bytes("probs32"), scores * 4);
  const auto op = std::find_if(attn.ops.begin(), attn.ops.end(), [](const OpDef& o) { return o.name == "sdpa_math"; });
  ASSERT_NE(op, attn.ops.end());
  EXPECT_EQ(op->saves, (std::vector<std::string>{"q32", "k32", "v32", "probs32"}));
  EXPECT_DOUBLE_EQ(op->working_bytes, 3 * scores * 4);
}

}  // namespace
}  // namespace remat
