// How a causal LM's forward hands its logits to the loss (ModelSpec::logits), read from transformers
// 5.17's classes (examples/hf/probes/loss_paths_probe.py, reports/hf/loss-paths-h200.jsonl) and held to
// steps written and priced before they ran (examples/hf/vision/cases_loss_paths_blind*.json).
#include <gtest/gtest.h>

#include <string>

#include "hf_measured.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kRoot = std::string(REMAT_TEST_DATA) + "/../";

// Qwen2-Audio computes its own loss on the bf16 logits; Mamba-1 and Mamba-2 cast them to fp32 in forward.
TEST(HfLossPaths, ReadFromTheClasses) {
  EXPECT_EQ(test::model(kRoot + "tests/data/hf_configs/qwen2-audio-7b-instruct.json").logits,
            ModelLogits::own_bf16_loss);
  EXPECT_EQ(test::model(kRoot + "examples/hf/unseen9/mamba-4l.json").logits, ModelLogits::fp32_in_forward);
  EXPECT_EQ(test::model(kRoot + "examples/hf/unseen9/mamba2-4l.json").logits, ModelLogits::fp32_in_forward);
  EXPECT_EQ(test::model(kRoot + "tests/data/hf_configs/llama-3.2-1b-instruct.json").logits, ModelLogits::standard);
}

// Qwen2-Audio's own loss in bf16 and under autocast (LoRA and full, none, non-reentrant, reentrant,
// eager), Qwen3-VL-MoE's all-linear (attention alone: PEFT adapts neither router nor experts), pure
// Mamba-2's in_proj adapters and Mamba-1 under DPO: within 0.60% (the mixed LoRA step was +5.38% as
// first compared, priced as transformers' loss; the others as first compared).
TEST(HfLossPaths, BlindSteps) { test::expect_steps_within("steps-loss-paths-blind-h200.jsonl", "h200", 0.7, 0.7, 9); }

}  // namespace
}  // namespace remat
