// The model features Megatron-LM has flags for, as `remat plan` prints them for real
// config.json files (values read off each file by hand), what it cannot express named in a
// note, bad values refused with the key, and none of it changing a figure.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "remat/cost/estimate.hpp"
#include "remat/search/megatron_flags.hpp"
#include "remat/spec/pipeline_split.hpp"
#include "shell_run.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

ModelSpec corpus(const std::string& name) {
  const std::string file = std::string(REMAT_TEST_DATA) + "/data/hf_configs/" + name + ".json";
  return parse_hf_config(test::read_text(file), name + ".json");
}

MegatronArgs args_of(const ModelSpec& m) {
  const TrainingSpec t = test::layout(1, 1, 1, 1, 1, 4096);
  return megatron_args(m, t, megatron_split(m, t), MegatronRecompute{}, true);
}

std::string flags_of(const ModelSpec& m) { return " " + one_line(args_of(m).all()) + " "; }

std::string notes_of(const ModelSpec& m) {
  std::string out;
  for (const auto& n : args_of(m).notes) out += n + "\n";
  return out;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A config.json's rejection, one line per problem ("" when it loads).
std::string rejection(const std::string& text) {
  try {
    parse_hf_config(text, "c.json");
  } catch (const InputError& e) {
    std::string lines;
    for (const auto& p : e.problems()) lines += (lines.empty() ? "" : "\n") + p.line();
    return lines;
  }
  return "";
}

constexpr const char* kDims = R"("hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
    "num_key_value_heads": 2, "vocab_size": 100, "num_hidden_layers": 4)";

// Nemotron 3 Super's latent MoE: Megatron-LM's --moe-latent-size beside the experts' width
// (moe_latent_size 1024, moe_intermediate_size 2688 in the Hub config).
TEST(MegatronModelFlags, LatentMoeWidth) {
  const std::string flags = flags_of(corpus("nemotron-3-super-120b-a12b-fp8"));
  EXPECT_TRUE(has(flags, " --moe-latent-size 1024 ")) << flags;
  EXPECT_TRUE(has(flags, " --moe-ffn-hidden-size 2688 ")) << flags;
  EXPECT_FALSE(has(flags_of(corpus("nemotron-3-nano-30b-a3b")), "--moe-latent-size"));
}

TEST(MegatronModelFlags, RotaryBaseAndNormEpsilonFromTheConfig) {
  // qwen3-8b.json: rope_theta 1000000, rms_norm_eps 1e-06, rope_scaling null, sliding_window null
  const std::string qwen3 = flags_of(corpus("qwen3-8b"));
  EXPECT_TRUE(has(qwen3, " --norm-epsilon 1e-06 ")) << qwen3;
  EXPECT_TRUE(has(qwen3, " --position-embedding-type rope --rotary-base 1000000 ")) << qwen3;
  EXPECT_FALSE(has(qwen3, "--use-rope-scaling")) << qwen3;
  EXPECT_FALSE(has(qwen3, "--window-size")) << qwen3;
  // mistral-7b-instruct-v0.3.json: rope_theta 1000000.0, rms_norm_eps 1e-05, sliding_window null
  const std::string mistral = flags_of(corpus("mistral-7b-instruct-v0.3"));
  EXPECT_TRUE(has(mistral, " --norm-epsilon 1e-05 ")) << mistral;
  EXPECT_TRUE(has(mistral, " --rotary-base 1000000 ")) << mistral;
  EXPECT_FALSE(has(mistral, "--window-size")) << mistral;
  // qwen2.5-7b.json: sliding_window 131072 but use_sliding_window false
  EXPECT_FALSE(has(flags_of(corpus("qwen2.5-7b")), "--window-size"));
  // gpt2.json: learned positions, layer_norm_epsilon 1e-05: no rotary flags
  const std::string gpt2 = flags_of(corpus("gpt2"));
  EXPECT_TRUE(has(gpt2, " --norm-epsilon 1e-05 ")) << gpt2;
  EXPECT_FALSE(has(gpt2, "--rotary-base")) << gpt2;
  // the built-in YAML specs carry their config.json's values
  const std::string llama3 = flags_of(test::model("llama3-70b"));
  EXPECT_TRUE(has(llama3, " --norm-epsilon 1e-05 ")) << llama3;
  EXPECT_TRUE(has(llama3, " --rotary-base 500000 ")) << llama3;
}

TEST(MegatronModelFlags, AbsentKeysTakeTransformersDefaults) {
  const ModelSpec llama = parse_hf_config(std::string(R"({"model_type": "llama", )") + kDims + "}", "c.json");
  EXPECT_EQ(llama.rope_theta, 10000);
  EXPECT_EQ(llama.norm_eps, 1e-6);  // LlamaConfig's rms_norm_eps
  const ModelSpec gpt2 = parse_hf_config(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4,
      "vocab_size": 100})",
                                         "c.json");
  EXPECT_EQ(gpt2.norm_eps, 1e-5);  // nn.LayerNorm's
  // MixtralConfig and Phi3Config default rms_norm_eps to 1e-5
  for (const std::string& type : {R"("phi3")", R"("mixtral", "num_local_experts": 8, "num_experts_per_tok": 2)"}) {
    const ModelSpec m = parse_hf_config(R"({"model_type": )" + type + ", " + kDims + "}", "c.json");
    EXPECT_EQ(m.norm_eps, 1e-5) << type;
  }
  // transformers 5 writes rope_theta inside rope_parameters (qwen3.5-9b.json: 10000000)
  EXPECT_EQ(corpus("qwen3.5-9b").rope_theta, 1e7);
}

TEST(MegatronModelFlags, Llama3RopeScaling) {
  // llama-3.1-8b.json: rope_theta 500000.0, llama3 factor 8.0, low 1.0, high 4.0, original 8192
  const std::string l31 = flags_of(corpus("llama-3.1-8b"));
  EXPECT_TRUE(has(l31, " --rotary-base 500000 --use-rope-scaling --rope-scaling-factor 8 ")) << l31;
  EXPECT_TRUE(has(l31, " --norm-epsilon 1e-05 ")) << l31;
  // llama-3.2-1b-instruct.json: factor 32.0
  EXPECT_TRUE(has(flags_of(corpus("llama-3.2-1b-instruct")), " --use-rope-scaling --rope-scaling-factor 32 "));
  // Megatron-LM fixes low 1, high 4 and 8192: another original context is named, not printed
  const ModelSpec other = parse_hf_config(std::string(R"({"model_type": "llama", "rope_scaling": {"rope_type":
      "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 4096}, )") +
                                              kDims + "}",
                                          "c.json");
  EXPECT_FALSE(has(flags_of(other), "--use-rope-scaling"));
  EXPECT_EQ(notes_of(other),
            "Megatron-LM has no flag for llama3 rope scaling with low_freq_factor 1, high_freq_factor 4 and "
            "original_max_position_embeddings 4096 (--use-rope-scaling fixes 1, 4 and 8192): the flags above build "
            "a different layer there\n");
  // linear scaling by an integer: Megatron's sequence interpolation
  const ModelSpec linear = parse_hf_config(
      std::string(R"({"model_type": "llama", "rope_scaling": {"type": "linear", "factor": 4.0}, )") + kDims + "}",
      "c.json");
  EXPECT_TRUE(has(flags_of(linear), " --rotary-seq-len-interpolation-factor 4 "));
}

TEST(MegatronModelFlags, YarnForGqaAndMla) {
  // gpt-oss-20b.json: rope_theta 150000, yarn factor 32.0, original 4096, beta_fast 32.0, beta_slow 1.0,
  // truncate false, no mscale: transformers' 0.1 ln(32) + 1, Megatron's --mscale 1 --mscale-all-dim 0
  const std::string oss = flags_of(corpus("gpt-oss-20b"));
  EXPECT_TRUE(has(oss,
                  " --position-embedding-type yarn --rotary-base 150000 --rotary-scaling-factor 32 "
                  "--yarn-original-max-position-embeddings 4096 --yarn-beta-fast 32 --yarn-beta-slow 1 "
                  "--no-yarn-correction-range-round-to-int --mscale 1 --mscale-all-dim 0 "))
      << oss;
  // olmo-3.1-32b-instruct.json writes that default out: attention_factor 1.2079441541679836 = 0.1 ln(8) + 1
  const std::string olmo = flags_of(corpus("olmo-3.1-32b-instruct"));
  EXPECT_TRUE(has(olmo, " --rotary-scaling-factor 8 --yarn-original-max-position-embeddings 8192 ")) << olmo;
  EXPECT_TRUE(has(olmo, " --mscale 1 --mscale-all-dim 0 ")) << olmo;
  EXPECT_TRUE(has(olmo, " --norm-epsilon 1e-06 ")) << olmo;
  EXPECT_EQ(notes_of(corpus("olmo-3.1-32b-instruct")).find("YaRN"), std::string::npos);
  // deepseek-v3.json (MLA): yarn factor 40, mscale 1.0, mscale_all_dim 1.0, original 4096, betas 32 and 1
  // (MLATransformerConfig's own, no flag); rope stays MLA's own (rope_type yarn by default)
  const ModelSpec ds = corpus("deepseek-v3");
  const std::string dsf = flags_of(ds);
  EXPECT_TRUE(has(dsf, " --rotary-base 10000 --rotary-scaling-factor 40 --mscale 1 --mscale-all-dim 1 ")) << dsf;
  EXPECT_TRUE(has(dsf, " --norm-epsilon 1e-06 ")) << dsf;
  EXPECT_FALSE(has(dsf, "--yarn-")) << dsf;
  EXPECT_FALSE(has(dsf, "--position-embedding-type yarn")) << dsf;
  EXPECT_EQ(notes_of(ds).find("YaRN"), std::string::npos) << notes_of(ds);
  // the built-in DeepSeek-V2 carries its config's mscale 0.707
  EXPECT_TRUE(
      has(flags_of(test::model("deepseek-v2")), " --rotary-scaling-factor 40 --mscale 0.707 --mscale-all-dim 0.707 "));
}

TEST(MegatronModelFlags, SlidingWindowsAndTheirLayers) {
  // gpt-oss-20b.json: sliding_window 128 on sliding, full, sliding, ... (24 layers): window 127 to the left,
  // every 2nd layer full
  EXPECT_TRUE(has(flags_of(corpus("gpt-oss-20b")), " --window-size 127,0 --window-attn-skip-freq 2 "));
  // exaone-4.0-32b.json: sliding_window 4096, three sliding then one full (LLLG)
  EXPECT_TRUE(has(flags_of(corpus("exaone-4.0-32b")), " --window-size 4095,0 --window-attn-skip-freq 4 "));
  // Mistral v0.1's window on every layer: no skip frequency
  const ModelSpec every = parse_hf_config(
      std::string(R"({"model_type": "mistral", "sliding_window": 16, "max_position_embeddings": 64, )") + kDims + "}",
      "c.json");
  const std::string ef = flags_of(every);
  EXPECT_TRUE(has(ef, " --window-size 15,0 ")) << ef;
  EXPECT_FALSE(has(ef, "--window-attn-skip-freq")) << ef;
  // Gemma 3 without layer_types: sliding_window_pattern 6 (every 6th layer global), its own local rotary base
  const ModelSpec gemma3 = parse_hf_config(std::string(R"({"model_type": "gemma3_text", "sliding_window": 16,
      "sliding_window_pattern": 6, "max_position_embeddings": 64, "rope_theta": 1000000.0,
      "rope_local_base_freq": 10000.0, "head_dim": 16, "hidden_size": 64, "intermediate_size": 128,
      "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100, "num_hidden_layers": 12})"),
                                           "c.json");
  const std::string gf = flags_of(gemma3);
  EXPECT_TRUE(has(gf, " --window-size 15,0 --window-attn-skip-freq 6 ")) << gf;
  EXPECT_TRUE(
      has(notes_of(gemma3), "Megatron-LM has no flag for a rotary base of its own (10000) on the windowed layers"))
      << notes_of(gemma3);
  // an irregular pattern: Megatron's list expression
  const ModelSpec listed = parse_hf_config(std::string(R"({"model_type": "mistral", "sliding_window": 16,
      "max_position_embeddings": 64, "layer_types": ["full_attention", "sliding_attention", "sliding_attention",
      "full_attention"], )") + kDims + "}",
                                           "c.json");
  EXPECT_TRUE(has(flags_of(listed), " --window-attn-skip-freq '([0]*1+[1]*2+[0]*1)' ")) << flags_of(listed);
}

TEST(MegatronModelFlags, Llama4QkL2NormNoRopeLayersAndWhatMegatronLacks) {
  const ModelSpec m = parse_hf_config(R"({"model_type": "llama4_text", "intermediate_size_mlp": 256,
      "num_local_experts": 4, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2, "attention_chunk_size": 16,
      "max_position_embeddings": 64, "rope_theta": 500000.0, "rms_norm_eps": 1e-05, "use_qk_norm": true,
      "hidden_size": 64, "intermediate_size": 32, "num_attention_heads": 4, "vocab_size": 100,
      "num_hidden_layers": 8})",
                                      "l4.json");
  const std::string f = flags_of(m);
  EXPECT_TRUE(has(f, " --qk-l2-norm ")) << f;
  EXPECT_FALSE(has(f, "--qk-layernorm")) << f;
  EXPECT_TRUE(has(f, " --no-rope-freq 4 ")) << f;  // transformers' no_rope_layer_interval 4: layers 4 and 8
  EXPECT_TRUE(has(f, " --rotary-base 500000 ")) << f;
  EXPECT_FALSE(has(f, "--moe-shared-expert-gate")) << f;  // Llama 4's shared expert has no gate
  EXPECT_EQ(notes_of(m),
            "Megatron-LM has no flag for chunked attention (attention_chunk_size 16: each query sees its chunk only): "
            "the flags above build a different layer there\n"
            "Megatron-LM has no flag for an L2 norm of q and k on the rotary layers only (--qk-l2-norm puts it on "
            "every layer): the flags above build a different layer there\n"
            "Megatron-LM has no flag for attention temperature tuning on the layers without rotary: the flags above "
            "build a different layer there\n");
}

TEST(MegatronModelFlags, SharedExpertGateOnlyWhereTheConfigHasOne) {
  // Qwen2-MoE: shared_expert_intermediate_size, with Qwen2MoeSparseMoeBlock's shared_expert_gate
  const ModelSpec qwen2moe = parse_hf_config(std::string(R"({"model_type": "qwen2_moe", "num_experts": 4,
      "num_experts_per_tok": 2, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64, )") +
                                                 kDims + "}",
                                             "c.json");
  const std::string f = flags_of(qwen2moe);
  EXPECT_TRUE(has(f, " --moe-shared-expert-intermediate-size 64 ")) << f;
  EXPECT_TRUE(has(f, " --moe-shared-expert-gate ")) << f;
  // qwen3-30b-a3b.json has no shared expert; DeepSeek-V3's shared experts have no gate
  EXPECT_FALSE(has(flags_of(corpus("qwen3-30b-a3b")), "--moe-shared-expert-gate"));
  EXPECT_FALSE(has(flags_of(corpus("deepseek-v3")), "--moe-shared-expert-gate"));
}

TEST(MegatronModelFlags, RopeScalingMegatronLacksIsNamed) {
  // phi-3.5-vision-instruct-lm.json: longrope
  EXPECT_EQ(notes_of(corpus("phi-3.5-vision-instruct-lm")),
            "Megatron-LM has no flag for rope scaling of type longrope: the flags above build a different layer "
            "there\n");
  // devstral-small-2-24b.json: rope_parameters with llama_4_scaling_beta 0.1
  EXPECT_TRUE(has(notes_of(corpus("devstral-small-2-24b")),
                  "Megatron-LM has no flag for Llama 4's position-dependent query scaling (llama_4_scaling_beta 0.1)"));
  EXPECT_TRUE(has(flags_of(corpus("devstral-small-2-24b")), " --rotary-base 100000000 "));
  // qwen2.5-vl-7b-instruct.json: mrope, the same as rope on text
  EXPECT_TRUE(has(notes_of(corpus("qwen2.5-vl-7b-instruct")), "mrope (multimodal rotary sections) runs as plain rope"));
}

TEST(MegatronModelFlags, BadValuesAreRefusedWithKeyAndValue) {
  const std::string llama = std::string(R"({"model_type": "llama", )") + kDims;
  EXPECT_EQ(rejection(llama + R"(, "rms_norm_eps": 0})"), "c.json: rms_norm_eps: must be a positive number (got 0)");
  EXPECT_EQ(rejection(llama + R"(, "rms_norm_eps": -1e-06})"),
            "c.json: rms_norm_eps: must be a positive number (got -1e-06)");
  EXPECT_EQ(rejection(llama + R"(, "rms_norm_eps": NaN})"),
            "c.json: rms_norm_eps: must be a finite number (got \"NaN\")");
  EXPECT_EQ(rejection(llama + R"(, "rope_theta": -10000})"),
            "c.json: rope_theta: must be a positive number (got -10000)");
  EXPECT_EQ(rejection(llama + R"(, "rope_scaling": {"rope_type": "llama3", "factor": 0}})"),
            "c.json: rope_scaling.factor: must be a positive number (got 0)");
}

// The command line: exit code 2, the file, the key and the value (YAML and config.json alike).
TEST(MegatronModelFlags, BadValuesExitTwoOnTheCommandLine) {
  const std::string dir = testing::TempDir() + "/remat_numerics_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::string yaml = test::read_text(std::string(REMAT_TEST_DATA) + "/../models/llama3-8b.yaml");
  yaml.replace(yaml.find("norm_eps: 1.0e-5"), 16, "norm_eps: .nan");
  std::ofstream(dir + "/bad.yaml") << yaml;
  std::ofstream(dir + "/bad.json") << R"({"model_type": "llama", "rope_theta": -1, )" << kDims << "}";
  const auto y = test::run_shell(test::remat_command({"plan", "--model", dir + "/bad.yaml"}) + " 2>&1");
  EXPECT_EQ(y.exit_code, 2) << y.out;
  EXPECT_TRUE(has(y.out, "bad.yaml: norm_eps: must be a positive finite number (got nan)")) << y.out;
  const auto j = test::run_shell(test::remat_command({"plan", "--model", dir + "/bad.json"}) + " 2>&1");
  EXPECT_EQ(j.exit_code, 2) << j.out;
  EXPECT_TRUE(has(j.out, "bad.json: rope_theta: must be a positive number (got -1)")) << j.out;
  std::filesystem::remove_all(dir);
}

// Numerics and masks reach the flags only: the plan's memory and time are the same without them.
TEST(MegatronModelFlags, NoFigureChanges) {
  const ModelSpec with = corpus("gpt-oss-20b");
  ModelSpec without = with;
  without.rope_theta = 10000, without.norm_eps = 1e-5, without.rope_scaling = RopeScaling{};
  without.sliding_window_tokens = 0, without.windowed_layers.clear();
  const TrainingSpec t = test::layout(1, 2, 1, 1, 1, 4096);
  const HardwareSpec hw = test::hardware("h100-sxm");
  const Plan p{};
  const auto a = estimate(with, hw, t, p, 1e30), b = estimate(without, hw, t, p, 1e30);
  EXPECT_EQ(a.peak_memory_bytes, b.peak_memory_bytes);
  EXPECT_EQ(a.iteration.time_s, b.iteration.time_s);
}

}  // namespace
}  // namespace remat
