// LoRA on DeepSeek's latent attention projections (q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj;
// q_proj without a query latent), which remat had refused as "no adapter priced": priced as PEFT wraps
// transformers' DeepseekV3Attention, each a frozen nn.Linear with its own adapter, a frozen one saving
// no input (examples/hf/mla_lora/cases.json, written before the 8 steps ran on the H200:
// steps-mla-latent-lora-h200.jsonl, traces in peak-traces-h200/mla-latent-lora/).
#include <gtest/gtest.h>

#include <string>

#include "hf_measured.hpp"
#include "remat/cost/streambp.hpp"
#include "remat/spec/lora_placement.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kRoot = std::string(REMAT_TEST_DATA) + "/../";

// V2-Lite, DeepSeek-V3 and GLM-4.7-Flash cut to 2-4 layers; none, non-reentrant and reentrant; bf16 and
// mixed; dropout 0 to 0.1; SFT, DPO and GRPO: all within 0.22% as first compared.
// 0.3 -> 0.7: GLM-4.7-Flash's GRPO step -0.13% -> -0.61% once the per-row log-probabilities' head no
// longer counts its input's gradient at the forward's end (thirty-fourth session)
TEST(HfMlaLatentLora, Steps) { test::expect_steps_within("steps-mla-latent-lora-h200.jsonl", "h200", 0.2, 0.7, 8); }

// The harness's trainable parameters: DeepSeek-V3 cut to 4 layers at rank 16 on all five projections,
// 6,361,088; V2-Lite's kv_a_proj_with_mqa and kv_b_proj at rank 16, 462,848.
TEST(HfMlaLatentLora, AdapterParametersAsPeftBuildsThem) {
  const auto adapters = [](const std::string& file, const std::vector<std::string>& names) {
    const ModelSpec m = test::model(kRoot + file);
    TrainingSpec t;
    t.lora_rank = 16;
    t.lora_targets = resolve_lora_targets(m, names).targets;
    double p = 0;
    for (int64_t g = 0; g < 4; ++g) p += lora_layer_params(m, t, 1, g);
    return p;
  };
  EXPECT_DOUBLE_EQ(adapters("tests/data/hf_configs/deepseek-v3.json",
                            {"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"}),
                   6361088.0);
  EXPECT_DOUBLE_EQ(adapters("examples/hf/mla_unseen/deepseek-v2-lite-4l.json", {"kv_a_proj_with_mqa", "kv_b_proj"}),
                   462848.0);
}

}  // namespace
}  // namespace remat
