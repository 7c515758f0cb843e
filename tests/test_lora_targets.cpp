// --lora-targets (and a run record's PEFT target_modules) read against the model's own module
// names: LLaMA's q_proj ... down_proj, Falcon's query_key_value, GPT-2's c_attn and its two c_proj,
// PEFT's all-linear, and the names refused because remat prices no adapter on their module.
#include <gtest/gtest.h>

#include "remat/cost/streambp.hpp"
#include "remat/spec/lora_placement.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kConfigs = std::string(REMAT_TEST_DATA) + "/data/hf_configs/";
const std::string kUnseen10 = std::string(REMAT_TEST_DATA) + "/../examples/hf/unseen10/";

LoraTargets resolved(const std::string& config, const std::vector<std::string>& names) {
  const ResolvedLoraTargets r = resolve_lora_targets(test::model(config), names);
  EXPECT_EQ(r.refusal, "") << config;
  return r.targets;
}

std::string refusal(const std::string& config, const std::vector<std::string>& names) {
  return resolve_lora_targets(test::model(config), names).refusal;
}

TEST(LoraTargets, LlamaNamesAndRematWords) {
  const LoraTargets qv = resolved(kConfigs + "llama-3.2-1b-instruct.json", {"q_proj", "v_proj"});
  EXPECT_TRUE(qv.q && qv.v);
  EXPECT_FALSE(qv.k || qv.o || qv.gate || qv.up || qv.down || qv.fused_qkv);
  const LoraTargets words = resolved(kConfigs + "llama-3.2-1b-instruct.json", {"qkv", "mlp"});
  EXPECT_TRUE(words.q && words.k && words.v && words.gate && words.up && words.down);
  EXPECT_FALSE(words.o || words.fused_qkv || words.fused_gate_up);
  // PEFT's suffix match: a longer path ending in the module's name
  EXPECT_TRUE(resolved(kConfigs + "llama-3.2-1b-instruct.json", {"self_attn.o_proj"}).o);
}

TEST(LoraTargets, FalconsFusedProjectionIsOneAdapter) {
  const LoraTargets t = resolved(kUnseen10 + "falcon-7b.json", {"query_key_value", "dense_4h_to_h"});
  EXPECT_TRUE(t.q && t.k && t.v && t.fused_qkv && t.down);
  EXPECT_FALSE(t.o || t.up);
  // remat's word q names the one module that computes q
  EXPECT_TRUE(resolved(kUnseen10 + "falcon-7b.json", {"q"}).fused_qkv);
  // LLaMA's name is no Falcon module
  EXPECT_EQ(refusal(kUnseen10 + "falcon-7b.json", {"q_proj"}),
            "q_proj names no linear module of this model: query_key_value (qkv), dense (o), dense_h_to_4h (up), "
            "dense_4h_to_h (down)");
}

TEST(LoraTargets, Gpt2CProjIsTheAttentionOutputAndTheMlpDown) {
  const LoraTargets both = resolved(kConfigs + "gpt2.json", {"c_proj"});
  EXPECT_TRUE(both.o && both.down);
  const LoraTargets mlp_only = resolved(kConfigs + "gpt2.json", {"mlp.c_proj"});
  EXPECT_TRUE(mlp_only.down);
  EXPECT_FALSE(mlp_only.o);
}

TEST(LoraTargets, AllLinear) {
  const LoraTargets llama = resolved(kConfigs + "llama-3.2-1b-instruct.json", {"all-linear"});
  EXPECT_TRUE(llama.q && llama.k && llama.v && llama.o && llama.gate && llama.up && llama.down);
  EXPECT_FALSE(llama.router || llama.fused_qkv);
  const LoraTargets phi3 = resolved(kConfigs + "phi-3-mini-4k-instruct.json", {"all-linear"});
  EXPECT_TRUE(phi3.fused_qkv && phi3.fused_gate_up && phi3.o && phi3.down);
  // Qwen3-MoE: the router too, and gate/up/down onto the experts through PEFT's conversion
  const ModelSpec moe = test::model(kConfigs + "qwen3-30b-a3b.json");
  const LoraTargets all = resolve_lora_targets(moe, {"all-linear"}).targets;
  EXPECT_TRUE(all.router && all.q && all.o);
  const LoraPlacement p = lora_placement(moe, all, 16, true);
  EXPECT_EQ(p.experts_gate_up_rank, 32);
  EXPECT_EQ(p.experts_down_rank, 16);
  EXPECT_FALSE(p.linear.gate || p.linear.up || p.linear.down);
}

TEST(LoraTargets, RefusedWhereRematPricesNoAdapter) {
  // V2-Lite's latent kv projections carry adapters; all-linear adapts them, the router and the converted
  // experts, and neither its shared experts nor its dense first layer (steps-all-linear-moe-h200.jsonl)
  const LoraTargets latent =
      resolved(kConfigs + "deepseek-v2-lite.json", {"q_proj", "kv_a_proj_with_mqa", "kv_b_proj"});
  EXPECT_TRUE(latent.q && latent.kv_a && latent.kv_b);
  EXPECT_FALSE(latent.q_a || latent.q_b || latent.o);
  const LoraTargets all = resolved(kConfigs + "deepseek-v2-lite.json", {"all-linear"});
  EXPECT_TRUE(all.q && all.kv_a && all.kv_b && all.o && all.router && all.gate && all.up && all.down);
  // DeepSeek-V3.2's indexer (wq_b, wk, weights_proj) takes adapters under all-linear too
  const LoraTargets indexer = resolved(kConfigs + "deepseek-v3.2-exp.json", {"all-linear"});
  EXPECT_TRUE(indexer.indexer_q && indexer.indexer_k && indexer.indexer_weights);
  // LFM2's out_proj is its attention's and its short convolutions'
  const LoraTargets both = resolved(kConfigs + "lfm2-1.2b.json", {"out_proj"});
  EXPECT_TRUE(both.o && both.mixer_out && !both.mixer_in);
  const LoraTargets attention = resolved(kConfigs + "lfm2-1.2b.json", {"self_attn.out_proj"});
  EXPECT_TRUE(attention.o && !attention.mixer_out);
  // Nemotron-H's Mamba-2 in_proj carries an adapter; its latent MoE projections do not, and PEFT itself
  // refuses its out_proj
  EXPECT_TRUE(resolved(kConfigs + "nemotron-3-nano-30b-a3b.json", {"in_proj"}).mixer_in);
  EXPECT_EQ(refusal(kConfigs + "nemotron-3-super-120b-a12b-fp8.json", {"fc1_latent_proj"}),
            "fc1_latent_proj reaches fc1_latent_proj, a module remat prices no adapter on");
  EXPECT_NE(refusal(kConfigs + "nemotron-3-nano-30b-a3b.json", {"out_proj"}).find("PEFT refuses LoRA on out_proj"),
            std::string::npos);
  // Gemma 3's SigLIP tower takes adapters too: 27 layers of q, k, v, out_proj (1152 -> 1152) and fc1, fc2
  // (1152 <-> 4304), held untrained (PEFT's 8,695,296 at rank 16: tower-probe-h200.jsonl)
  EXPECT_DOUBLE_EQ(resolved(kConfigs + "gemma-3-4b-it.json", {"all-linear"}).tower_adapter_width,
                   27.0 * (4 * 2 * 1152 + 2 * (1152 + 4304)));
  // a named target reaches the tower's modules of that name alone
  EXPECT_DOUBLE_EQ(resolved(kConfigs + "gemma-3-4b-it.json", {"q_proj"}).tower_adapter_width, 27.0 * 2 * 1152);
  // a tower whose linear modules remat does not list is refused under all-linear
  EXPECT_EQ(refusal(kConfigs + "minicpm-v-4.json", {"all-linear"}),
            "PEFT's all-linear: it adapts the vision tower's linear modules too, which remat does not price");
  EXPECT_EQ(refusal(kConfigs + "llama-3.2-1b-instruct.json", {"router"}),
            "router: this model has no mixture-of-experts router");
}

// The adapters' parameters as PEFT builds them: one lora_A (in x r) per module, so Phi-3's fused
// qkv_proj is r (h + q + k + v), not three adapters' 3 r h + r (q + k + v).
TEST(LoraTargets, FusedModulesHaveOneLoraA) {
  const ModelSpec phi3 = test::model(kConfigs + "phi-3-mini-4k-instruct.json");
  TrainingSpec t;
  t.lora_rank = 16;
  t.lora_targets = resolve_lora_targets(phi3, {"qkv_proj"}).targets;
  EXPECT_DOUBLE_EQ(lora_layer_params(phi3, t, 1, 0), 16.0 * (3072 + 3 * 3072));
  t.lora_targets = resolve_lora_targets(phi3, {"gate_up_proj"}).targets;
  EXPECT_DOUBLE_EQ(lora_layer_params(phi3, t, 1, 0), 16.0 * (3072 + 2 * 8192));
  // Qwen3-30B-A3B's router: h = 2048 in, 128 experts out
  const ModelSpec moe = test::model(kConfigs + "qwen3-30b-a3b.json");
  t.lora_targets = resolve_lora_targets(moe, {"router"}).targets;
  EXPECT_DOUBLE_EQ(lora_layer_params(moe, t, 1, 0), 16.0 * (2048 + 128));
}

// DeepSeek-V3's latent attention under LoRA (h 7168, 128 heads, q_lora_rank 1536, kv_lora_rank 512,
// q/k head 128 + 64 rope, v 128): q_a 7168 -> 1536, q_b 1536 -> 128 x 192, kv_a 7168 -> 512 + 64,
// kv_b 512 -> 128 x (128 + 128), o 128 x 128 -> 7168.
TEST(LoraTargets, LatentAttentionAdapters) {
  const ModelSpec v3 = test::model(kConfigs + "deepseek-v3.json");
  TrainingSpec t;
  t.lora_rank = 8;
  t.lora_targets =
      resolve_lora_targets(v3, {"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"}).targets;
  EXPECT_EQ(target_words(t.lora_targets), "o,q_a,q_b,kv_a,kv_b");
  const double per_layer =
      8.0 * ((7168 + 1536) + (1536 + 128 * 192) + (7168 + 512 + 64) + (512 + 128 * 256) + (128 * 128 + 7168));
  EXPECT_DOUBLE_EQ(per_layer, 795136.0);
  EXPECT_DOUBLE_EQ(lora_layer_params(v3, t, 1, 0), per_layer);
}

}  // namespace
}  // namespace remat
