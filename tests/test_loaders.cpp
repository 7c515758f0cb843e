// Spec loaders: our YAML, Hugging Face config.json, built-in files.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/params.hpp"
#include "remat/io/sha256.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

std::string read(const std::string& rel) { return test::read_text(std::string(REMAT_TEST_DATA) + "/" + rel); }

TEST(Loaders, HfConfigEqualsOurYaml) {
  const ModelSpec hf = parse_hf_config(read("data/llama3-8b-config.json"), "config.json");
  const ModelSpec ours = test::model("llama3-8b");
  EXPECT_EQ(hf.hidden_size, ours.hidden_size);
  EXPECT_EQ(hf.num_key_value_heads, 8);
  EXPECT_EQ(gqa_head_dim(hf), 128);
  EXPECT_DOUBLE_EQ(model_params(hf, 32), model_params(ours, 32));
}

TEST(Loaders, HfDeepSeekConfig) {
  const ModelSpec hf = parse_hf_config(read("data/deepseek-v3-config.json"), "config.json");
  EXPECT_EQ(hf.attention(), AttentionKind::mla);
  EXPECT_EQ(hf.n_routed_experts, 256);
  EXPECT_EQ(hf.first_k_dense_replace, 3);
  EXPECT_EQ(hf.num_nextn_predict_layers, 1);  // the YAML leaves MTP out (671B main model)
  // the model's count leaves the MTP module out, as transformers' class builds none
  EXPECT_DOUBLE_EQ(model_params(hf, 61), model_params(test::model("deepseek-v3"), 61));
  EXPECT_GT(mtp_params(hf, 1, 1).total(), 11e9);
}

TEST(Loaders, HfUnknownKeysIgnoredOursRejected) {
  EXPECT_NO_THROW(parse_hf_config(read("data/llama3-8b-config.json"), "c.json"));
  try {
    parse_model_yaml(read("bad_inputs/unknown_key.yaml"), "m.yaml");
    FAIL() << "unknown key accepted";
  } catch (const InputError& e) {
    ASSERT_EQ(e.problems().size(), 1u);
    EXPECT_EQ(e.problems()[0].line(), "m.yaml: layer_norm_eps: unknown key");
  }
}

TEST(Loaders, EveryProblemReported) {
  const std::string text =
      "name: x\nhidden_size: -1\nintermediate_size: 0\nnum_attention_heads: 4\nvocab_size: 9\n"
      "num_hidden_layers: 2\nbogus: 1\n";
  try {
    parse_model_yaml(text, "m.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.problems().size(), 1u);  // parse problems first: the unknown key
    EXPECT_EQ(e.problems()[0].key, "bogus");
  }
  try {
    parse_model_yaml(text.substr(0, text.find("bogus")), "m.yaml");
    FAIL();
  } catch (const InputError& e) {
    ASSERT_EQ(e.problems().size(), 2u);
    EXPECT_EQ(e.problems()[0].line(), "m.yaml: hidden_size: must be a positive integer (got -1)");
    EXPECT_EQ(e.problems()[1].line(), "m.yaml: intermediate_size: must be a positive integer (got 0)");
  }
}

TEST(Loaders, AllBuiltinsLoad) {
  int models = 0, hardware = 0;
  for (const auto& s : builtin_specs()) {
    if (std::string(s.kind) == "models") {
      EXPECT_NO_THROW(test::model(s.name)) << s.name;
      ++models;
    } else {
      EXPECT_NO_THROW(test::hardware(s.name)) << s.name;
      ++hardware;
    }
  }
  EXPECT_EQ(models, 9);
  EXPECT_EQ(hardware, 6);
}

TEST(Loaders, HardwareUnitsConvertedOnce) {
  const HardwareSpec a100 = test::hardware("a100-80gb-pcie");
  EXPECT_DOUBLE_EQ(a100.peak_bf16_flops, 312e12);
  EXPECT_DOUBLE_EQ(a100.hbm_bytes, 80.0 * 1024 * 1024 * 1024);  // GiB
  EXPECT_DOUBLE_EQ(a100.hbm_bytes_per_s, 1935e9);               // GB/s
  EXPECT_DOUBLE_EQ(a100.host_link_bytes_per_s, 32e9);
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(std::string(1000, 'a')).substr(0, 16), "41edece42d63e8d9");
}

}  // namespace
}  // namespace remat
