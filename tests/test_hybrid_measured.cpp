// The Mamba-2 (SSD) and Gated DeltaNet blocks against one pre-norm layer of each measured on an
// H100 (examples/hybrid/hybrid_ref.py, reports/hybrid/hybrid-h100.jsonl). mamba_ssm, causal_conv1d
// and fla are not on that image, so transformers 5.17 ran its plain-PyTorch fallbacks (impl
// "transformers"): what the hf profile predicts with its torch mixer kernels, held here within 2%
// for the kept bytes and the peak of every strategy. Impl "ref" (the script's own einsum layers)
// saves other tensors than transformers does and is not modelled: only its full-recompute kept
// bytes (the layer input) are held. The fused variant (mamba_ssm / fla, the generic profile's)
// cannot run there; its kept bytes under full recompute are the same layer input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "remat/cost/block.hpp"
#include "remat/cost/exact_blocks.hpp"
#include "remat/io/spec_loader.hpp"
#include "remat/spec/framework.hpp"
#include "remat/spec/plan.hpp"

namespace remat {
namespace {

ModelSpec hybrid_model(const std::string& block) {
  // Nemotron-H-8B's Mamba-2 layer and Qwen3.5-9B's Gated DeltaNet layer, the dims hybrid_ref.py ran
  if (block == "mamba2")
    return parse_hf_config(R"({"model_type": "nemotron_h", "hidden_size": 4096, "intermediate_size": 21504,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 131072,
        "num_hidden_layers": 1, "mamba_num_heads": 128, "mamba_head_dim": 64, "ssm_state_size": 128,
        "n_groups": 8, "conv_kernel": 4, "chunk_size": 128, "hybrid_override_pattern": "M"})",
                           "nemotron-h-8b-1l.json");
  ModelSpec m = parse_hf_config(R"({"model_type": "qwen3_next", "hidden_size": 4096, "intermediate_size": 12288,
      "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 151936,
      "num_hidden_layers": 4, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
      "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
      "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 512,
      "shared_expert_intermediate_size": 512, "full_attention_interval": 4})",
                                "qwen3.5-9b-gdn.json");
  m.norm_scale_fp32 = false;  // hybrid_ref.py puts a LlamaRMSNorm, not Qwen3-Next's, before the mixer
  return m;
}

// The mixer block as `framework` builds it for one sequence of `seq` tokens, bf16 parameters (as
// the script ran the layers: no autocast).
Block mixer_block(const std::string& block, double seq, const char* framework) {
  const ModelSpec m = hybrid_model(block);
  TrainingSpec t;
  t.mbs = 1, t.seq = int64_t(seq), t.precision = Precision::bf16;
  t = apply_framework(t, framework);
  return build_layer(m, rank_shape(t), 0).blocks[0];
}

std::vector<nlohmann::json> measured_rows() {
  std::ifstream in(std::string(REMAT_TEST_DATA) + "/../reports/hybrid/hybrid-h100.jsonl");
  EXPECT_TRUE(in) << "reports/hybrid/hybrid-h100.jsonl";
  std::vector<nlohmann::json> rows;
  std::string line;
  while (std::getline(in, line)) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

BlockCost cost_of(const Block& b, const std::string& strategy) {
  return block_cost(b, strategy == "none" ? BlockMode::keep : BlockMode::standard, strategy == "full");
}

TEST(HybridMeasured, ProfilesPickTheMixerKernels) {
  EXPECT_EQ(find_framework(kHfFramework)->mixer_kernels, MixerKernels::torch);
  EXPECT_EQ(find_framework(kGenericFramework)->mixer_kernels, MixerKernels::fused);
  EXPECT_EQ(find_framework(kMegatronLocalFramework)->mixer_kernels, MixerKernels::fused);
  // the torch fallback keeps an order of magnitude more than the fused kernels
  for (const char* block : {"mamba2", "gated_deltanet"})
    EXPECT_GT(saved_bytes(mixer_block(block, 1024, kHfFramework)),
              3 * saved_bytes(mixer_block(block, 1024, kGenericFramework)))
        << block;
}

// The log counts the layer input, which the script holds, in its kept bytes and in the base of its
// peak. remat's hf blocks save no input without recompute (the norm saves its fp32 copy; in a
// stack the input dies after the residual add), so the input is added to their kept bytes and
// taken off wherever a block saves it.
TEST(HybridMeasured, HfProfileWithinTwoPercentOfTransformersOnH100) {
  int checked = 0;
  double worst = 0;
  for (const auto& j : measured_rows()) {
    ASSERT_FALSE(j.contains("error")) << j.dump();
    EXPECT_NE(j["device"].get<std::string>().find("H100"), std::string::npos);
    if (j["impl"] != "transformers") continue;
    const std::string block = j["block"], strategy = j["strategy"];
    const int seq = j["seq"];
    const Block b = mixer_block(block, seq, kHfFramework);
    const BlockCost c = cost_of(b, strategy);
    const double kept = j["kept_bytes"], peak = j["peak_above_inputs"], input = j["input_bytes"];
    const double predicted_kept = c.kept_bytes + (strategy == "none" && !b.inputs_saved ? input : 0);
    const double predicted_peak = c.kept_bytes + c.transient_bytes - (b.inputs_saved ? input : 0);
    std::printf(
        "%s seq %d %s: kept predicted %.1f MB measured %.1f MB (x%.4f); peak predicted %.1f MB measured %.1f MB "
        "(x%.4f)\n",
        block.c_str(), seq, strategy.c_str(), predicted_kept / 1e6, kept / 1e6, predicted_kept / kept,
        predicted_peak / 1e6, peak / 1e6, predicted_peak / peak);
    EXPECT_NEAR(predicted_kept, kept, 0.02 * kept) << block << " " << seq << " " << strategy;
    EXPECT_NEAR(predicted_peak, peak, 0.02 * peak) << block << " " << seq << " " << strategy;
    worst = std::max({worst, std::abs(predicted_kept / kept - 1), std::abs(predicted_peak / peak - 1)});
    if (strategy != "none") EXPECT_DOUBLE_EQ(c.kept_bytes, input);  // the checkpoint keeps the layer input only
    ++checked;
  }
  std::printf("largest |predicted / measured - 1|: %.4f\n", worst);
  EXPECT_EQ(checked, 15);  // Mamba-2 at seq 1024, 2048, 4096, Gated DeltaNet at 1024 and 4096; three strategies each
}

// Under full recompute (either replay) every layer keeps exactly its input, whatever runs inside:
// the fused blocks and the hf profile's torch blocks both, against every measured row.
TEST(HybridMeasured, FullRecomputeKeepsTheLayerInputEveryImplAndKernel) {
  int checked = 0;
  for (const auto& j : measured_rows()) {
    if (j["strategy"] == "none") continue;
    const std::string block = j["block"], strategy = j["strategy"];
    const double kept = j["kept_bytes"];
    for (const char* framework : {kGenericFramework, kHfFramework}) {
      const BlockCost c = cost_of(mixer_block(block, j["seq"], framework), strategy);
      EXPECT_NEAR(c.kept_bytes, kept, 1e-9 * kept) << framework << " " << j.dump();
    }
    ++checked;
  }
  EXPECT_EQ(checked, 18);  // ref: 2 blocks x 2 seqs x 2 replays; transformers: 5 (block, seq) x 2 replays
}

}  // namespace
}  // namespace remat
