// The Mamba-2 (SSD) and Gated DeltaNet blocks against the plain-PyTorch layers measured on an
// H100 (examples/hybrid/hybrid_ref.py, reports/hybrid/hybrid-h100.jsonl; mamba_ssm, causal_conv1d
// and fla are not on the image, so every layer ran unfused torch: the file's own chunked scans,
// impl "ref", and transformers 5.17's torch fallbacks, impl "transformers").
// remat's blocks model the fused kernels (mamba_ssm's mamba_split_conv1d_scan_combined, fla's
// chunk_gated_delta_rule), which save far less than an unfused scan: under full recompute
// (torch.utils.checkpoint, either replay) the kept bytes agree within 2%; without recompute the
// measured unfused layers keep, and every strategy peaks at, the multiples of remat's figures
// pinned below (reports/hybrid/README.md); remat has no unfused variant of these blocks yet.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "remat/cost/block.hpp"
#include "remat/cost/exact_blocks.hpp"
#include "remat/io/spec_loader.hpp"
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
  return parse_hf_config(R"({"model_type": "qwen3_next", "hidden_size": 4096, "intermediate_size": 12288,
      "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 151936,
      "num_hidden_layers": 4, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
      "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
      "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 512,
      "shared_expert_intermediate_size": 512, "full_attention_interval": 4})",
                         "qwen3.5-9b-gdn.json");
}

Block mixer_block(const std::string& block, double seq) {
  const ModelSpec m = hybrid_model(block);
  RankShape r;
  r.b = 1, r.s = seq;
  r.norm_fp32_upcast = true;  // the hf profile, as the reference's Llama-style input norm
  return build_layer(m, r, 0).blocks[0];
}

// The gap, not a tolerance: measured over remat's (fused-kernel) figure for the unfused torch
// layers, per block and impl, the same at seq 1024 and 4096 (both blocks are linear in the
// sequence, as remat's are); each held within 2%. kept: without recompute; peak: every strategy.
struct Gap {
  double kept, peak;
};
Gap pinned_gap(const std::string& block, const std::string& impl) {
  if (block == "mamba2") return impl == "ref" ? Gap{11.07, 5.994} : Gap{10.20, 88.64};
  return impl == "ref" ? Gap{5.187, 3.418} : Gap{3.501, 2.592};
}

TEST(HybridMeasured, KeptBytesAgainstPlainTorchOnH100) {
  std::ifstream in(std::string(REMAT_TEST_DATA) + "/../reports/hybrid/hybrid-h100.jsonl");
  ASSERT_TRUE(in) << "reports/hybrid/hybrid-h100.jsonl";
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    ASSERT_FALSE(j.contains("error")) << line;
    EXPECT_NE(j["device"].get<std::string>().find("H100"), std::string::npos);
    const std::string block = j["block"], impl = j["impl"], strategy = j["strategy"];
    const int seq = j["seq"];
    const Block b = mixer_block(block, seq);
    const double measured = j["kept_bytes"], peak = j["peak_above_inputs"];
    const bool recompute = strategy != "none";
    const BlockCost c = block_cost(b, recompute ? BlockMode::standard : BlockMode::keep, strategy == "full");
    std::printf(
        "%s %s seq %d %s: kept predicted %.1f MB measured %.1f MB (x%.4f); peak predicted %.1f MB "
        "measured %.1f MB (x%.4f); fwd %.2f ms bwd %.2f ms\n",
        block.c_str(), impl.c_str(), seq, strategy.c_str(), c.kept_bytes / 1e6, measured / 1e6, measured / c.kept_bytes,
        (c.kept_bytes + c.transient_bytes) / 1e6, peak / 1e6, peak / (c.kept_bytes + c.transient_bytes),
        double(j["fwd_s"]) * 1e3, double(j["bwd_s"]) * 1e3);
    if (recompute) {
      EXPECT_NEAR(measured, c.kept_bytes, 0.02 * c.kept_bytes) << line;
    } else {
      const double ratio = pinned_gap(block, impl).kept;
      EXPECT_NEAR(measured / c.kept_bytes, ratio, 0.02 * ratio) << block << " " << impl << " " << seq;
    }
    const double peak_ratio = pinned_gap(block, impl).peak, predicted_peak = c.kept_bytes + c.transient_bytes;
    EXPECT_NEAR(peak / predicted_peak, peak_ratio, 0.02 * peak_ratio) << line;
    ++checked;
  }
  EXPECT_EQ(checked, 21);  // ref: 2 blocks x 2 seqs x 3; transformers: Mamba-2 at 1024, GDN at both
}

}  // namespace
}  // namespace remat
