// The dense block vocabulary beyond LLaMA's layer (issue 24): two-matrix MLPs,
// LayerNorm, q/k norms, partial rotary, parallel attention+MLP, biases, learned
// positions; their parameters as the families' modeling code builds them (hand
// counts of small configs), their saved bytes and FLOPs per strategy and profile,
// and the loader's resolution (architectures, aliases, nested configs, defaults).
#include <gtest/gtest.h>

#include <cmath>

#include "remat/cost/block.hpp"
#include "remat/cost/estimate.hpp"
#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/params.hpp"
#include "remat/spec/framework.hpp"
#include "remat/spec/plan.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

RankShape shape(double b, double s) {
  RankShape r;
  r.b = b, r.s = s;
  return r;
}

double layer_saved_bytes(const LayerDef& l) {
  double total = 0;
  for (const auto& b : l.blocks) total += saved_bytes(b);
  return total;
}

const Block& block_named(const LayerDef& l, const std::string& name) {
  for (const auto& b : l.blocks)
    if (b.name == name) return b;
  throw std::runtime_error("no block " + name);
}

// rows = 2 x 64 = 128, h 64, f 256, LayerNorm: x 128*64*2, mean and 1/std 128*4 each,
// x_norm 128*64*2, the pre-activation and the activation 128*256*2 each.
TEST(BlockVocabulary, TwoMatrixMlpPerStrategy) {
  RankShape r = shape(2, 64);
  r.layer_norm = true;
  const Block b = two_matrix_mlp_block(r, 64, 256, "gelu");
  const double x = 128 * 64 * 2, stats = 128 * 4, act = 128 * 256 * 2;
  const double gemm = 2 * 128 * 64 * 256.0;  // up and down, each
  const BlockCost keep = block_cost(b, BlockMode::keep, false);
  EXPECT_DOUBLE_EQ(keep.kept_bytes, 2 * x + 2 * stats + 2 * act);
  EXPECT_DOUBLE_EQ(keep.fwd_flops, 2 * gemm);
  EXPECT_DOUBLE_EQ(keep.bwd_flops, 4 * gemm);
  const BlockCost standard = block_cost(b, BlockMode::standard, false);
  EXPECT_DOUBLE_EQ(standard.kept_bytes, x);  // the block input
  EXPECT_DOUBLE_EQ(standard.recompute_flops, 2 * gemm);
  // early stop and eagle leave out the down projection's replay
  EXPECT_DOUBLE_EQ(block_cost(b, BlockMode::standard, true).recompute_flops, gemm);
  const BlockCost eagle = block_cost(b, BlockMode::eagle, false);
  EXPECT_DOUBLE_EQ(eagle.kept_bytes, x);
  EXPECT_DOUBLE_EQ(eagle.recompute_flops, gemm);
  const BlockCost offload = block_cost(b, BlockMode::offload, false);
  EXPECT_DOUBLE_EQ(offload.kept_bytes, 0);
  EXPECT_DOUBLE_EQ(offload.offload_bytes, keep.kept_bytes);
  // Megatron's `mlp` checkpoint drops the pre-activation and the activation; `layernorm` the norm's
  EXPECT_DOUBLE_EQ(module_freed_bytes(b, module_bit(MegatronModule::mlp)), 2 * act);
  EXPECT_DOUBLE_EQ(module_freed_bytes(b, module_bit(MegatronModule::layernorm)), 2 * stats + x);
  // the backward's working set: the activation's output gradient and its input's (2 x act), where
  // the gated MLP's SwiGLU holds three (3 x act); keep's transient is that working set alone
  EXPECT_DOUBLE_EQ(grad_working_bytes(b), 2 * act);
  EXPECT_DOUBLE_EQ(keep.transient_bytes, 2 * act);
  EXPECT_DOUBLE_EQ(grad_working_bytes(mlp_block(r, 64, 256)), 3 * act);
}

// The gated MLP saves gate, up and act (3 f wide); the two-matrix one 2 f wide, with the same
// input; an RMSNorm saves no mean.
TEST(BlockVocabulary, TwoMatrixAgainstGatedAndRmsNorm) {
  const RankShape r = shape(1, 128);
  const double gated = saved_bytes(mlp_block(r, 64, 256)), two = saved_bytes(two_matrix_mlp_block(r, 64, 256, "relu2"));
  EXPECT_DOUBLE_EQ(gated - two, 128 * 256 * 2.0);
  RankShape ln = r;
  ln.layer_norm = true;
  EXPECT_DOUBLE_EQ(saved_bytes(two_matrix_mlp_block(ln, 64, 256, "relu2")) - two, 128 * 4.0);
}

// transformers' gelu_new is a Python formula: under the hf profile (the model's own code) autograd
// saves three more tensors of the intermediate's size (tanh's output, 1 + tanh, 0.5 x); the fused
// GELUs and the other profiles save its input alone.
TEST(BlockVocabulary, PythonGeluSavesItsIntermediatesUnderHf) {
  RankShape r = shape(1, 128);
  const double act = 128 * 256 * 2.0;
  const double fused = saved_bytes(two_matrix_mlp_block(r, 64, 256, "gelu_new"));
  EXPECT_DOUBLE_EQ(fused, saved_bytes(two_matrix_mlp_block(r, 64, 256, "gelu")));
  r.layouts_from_model_code = true;
  EXPECT_DOUBLE_EQ(saved_bytes(two_matrix_mlp_block(r, 64, 256, "gelu_new")) - fused, 3 * act);
  EXPECT_DOUBLE_EQ(saved_bytes(two_matrix_mlp_block(r, 64, 256, "gelu_pytorch_tanh")), fused);
  EXPECT_DOUBLE_EQ(saved_bytes(two_matrix_mlp_block(r, 64, 256, "bloom_gelu")), fused);
}

// Under the hf profile (transformers' eager layers) a LayerNorm saves its input in the stream's
// dtype (fp32 under autocast) and each reading GEMM its own bf16 cast.
TEST(BlockVocabulary, LayerNormUnderEveryProfile) {
  for (const FrameworkProfile* p : framework_profiles()) {
    TrainingSpec t = apply_framework(test::layout(1, 1, 1, 1, 1, 128), p->name);
    RankShape r = rank_shape(with_defaults(t));
    r.layer_norm = true;
    const Block b = two_matrix_mlp_block(r, 64, 256, "gelu");
    const double rows = 128;
    const double expected = rows * 64 * r.stream_bytes() + 2 * rows * 4 + rows * 64 * 2 + 2 * rows * 256 * 2;
    EXPECT_DOUBLE_EQ(saved_bytes(b), expected) << p->name;
  }
}

ModelSpec tiny(const std::string& json) { return parse_hf_config(json, "t.json"); }

// A parallel layer with one norm (GPT-J, Cohere, Falcon-7B): the MLP reads the attention block's
// normed input, so the layer saves one norm's tensors fewer than the same layer in sequence.
TEST(BlockVocabulary, ParallelBlockSharesTheNormedInput) {
  const std::string dims = R"("n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100, "rotary_dim": 8)";
  const ModelSpec par = tiny(R"({"model_type": "gptj", )" + dims + "}");
  EXPECT_TRUE(par.parallel_attn_mlp && par.shared_input_norm);
  EXPECT_DOUBLE_EQ(par.rotary_fraction, 0.5);  // rotary_dim 8 of head_dim 16
  ModelSpec seq = par;
  seq.parallel_attn_mlp = seq.shared_input_norm = false;
  const RankShape r = shape(1, 128);
  const double rows = 128;
  // the MLP's own input x, mean, 1/std and normed input
  EXPECT_DOUBLE_EQ(layer_saved_bytes(build_layer(seq, r, 0)) - layer_saved_bytes(build_layer(par, r, 0)),
                   rows * 64 * 2 + 2 * rows * 4 + rows * 64 * 2);
  // GPT-NeoX's parallel residual has two norms: only the layer input is shared
  ModelSpec two_norms = par;
  two_norms.shared_input_norm = false;
  EXPECT_DOUBLE_EQ(layer_saved_bytes(build_layer(seq, r, 0)) - layer_saved_bytes(build_layer(two_norms, r, 0)),
                   rows * 64 * 2);
  // one norm fewer per layer: 2 * 64 (LayerNorm weight and bias)
  EXPECT_DOUBLE_EQ(layer_params(seq, 0, 1, 1).total() - layer_params(par, 0, 1, 1).total(), 2 * 64.0);
}

// q/k norms save q and k before the norm and 1/rms per head and row; partial rotary rotates a share.
TEST(BlockVocabulary, QkNormAndPartialRotary) {
  ModelSpec m = test::small_dense(2);  // 8 heads of 128, 2 kv heads
  const RankShape r = shape(1, 256);
  ModelSpec qk = m;
  qk.qk_norm = QkNorm::shared;
  EXPECT_DOUBLE_EQ(saved_bytes(gqa_block(r, qk)) - saved_bytes(gqa_block(r, m)), 256 * 10 * 128 * 2.0 + 256 * 10 * 4.0);
  EXPECT_DOUBLE_EQ(layer_params(qk, 0, 1, 1).total() - layer_params(m, 0, 1, 1).total(), 2 * 128.0);
  qk.qk_norm = QkNorm::per_head;
  EXPECT_DOUBLE_EQ(layer_params(qk, 0, 1, 1).total() - layer_params(m, 0, 1, 1).total(), 10 * 128.0);
  ModelSpec partial = m;
  partial.rotary_fraction = 0.25;
  const auto rope_bytes = [&](const ModelSpec& s) {
    for (const auto& op : gqa_block(r, s).ops)
      if (op.name == "rope") return op.fwd_bytes;
    return 0.0;
  };
  EXPECT_DOUBLE_EQ(rope_bytes(partial), rope_bytes(m) / 4);
}

// Hand counts, module by module as the modeling code builds them.
TEST(BlockVocabulary, ParametersOfEachFamilyByHand) {
  // GPT-2: wte 100*64, wpe 32*64; per layer ln_1, ln_2 (2*128), c_attn 64*192+192, c_proj 64*64+64,
  // c_fc 64*256+256, c_proj 256*64+64; ln_f 128; head tied
  const ModelSpec gpt2 =
      tiny(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100, "n_positions": 32})");
  const double gpt2_layer = 256 + 12480 + 4160 + 16640 + 16448;
  EXPECT_DOUBLE_EQ(model_params(gpt2, 2), 6400 + 2048 + 2 * gpt2_layer + 128);
  // Falcon-40B's layout: query_key_value 64*(4+2*2)*16, dense 64*64, MLP 2*64*256, ln_attn and
  // ln_mlp (2*128); tied head
  const ModelSpec falcon = tiny(R"({"model_type": "falcon", "hidden_size": 64, "num_attention_heads": 4,
      "num_kv_heads": 2, "new_decoder_architecture": true, "num_hidden_layers": 2, "vocab_size": 100})");
  EXPECT_TRUE(falcon.parallel_attn_mlp && !falcon.shared_input_norm);
  EXPECT_DOUBLE_EQ(model_params(falcon, 2), 6400 + 2 * (8192 + 4096 + 32768 + 256.0) + 128);
  // ChatGLM: query_key_value 64*(64+2*2*16)+128 (bias), dense 64*64, dense_h_to_4h 64*256,
  // dense_4h_to_h 128*64, two RMSNorms; untied output_layer; final norm
  const ModelSpec glm = tiny(R"({"model_type": "chatglm", "hidden_size": 64, "num_layers": 2,
      "num_attention_heads": 4, "kv_channels": 16, "multi_query_attention": true, "multi_query_group_num": 2,
      "ffn_hidden_size": 128, "padded_vocab_size": 100, "add_qkv_bias": true, "add_bias_linear": false})");
  EXPECT_DOUBLE_EQ(model_params(glm, 2), 2 * 6400 + 2 * (8320 + 4096 + 24576 + 128.0) + 64);
  EXPECT_DOUBLE_EQ(glm.rotary_fraction, 0.5);
  // Cohere: one LayerNorm without bias feeding attention and MLP; q/k LayerNorms per head
  // ((4+2)*16); q 64*64, k and v 64*32, o 64*64; SwiGLU 3*64*128; tied head
  const ModelSpec cohere = tiny(R"({"model_type": "cohere", "hidden_size": 64, "intermediate_size": 128,
      "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 100,
      "use_qk_norm": true})");
  EXPECT_DOUBLE_EQ(model_params(cohere, 2), 6400 + 2 * (12288 + 96 + 64 + 24576.0) + 64);
  // Nemotron: relu^2 up and down (2*64*256), two LayerNorms with bias, untied head
  const ModelSpec nemotron = tiny(R"({"model_type": "nemotron", "hidden_size": 64, "intermediate_size": 256,
      "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 100})");
  EXPECT_EQ(nemotron.hidden_act, "relu2");
  EXPECT_DOUBLE_EQ(model_params(nemotron, 2), 2 * 6400 + 2 * (16384 + 32768 + 256.0) + 128);
  // StarCoder2: biases on q, k, v, o (64*3+64... ), c_fc and c_proj; LayerNorms with bias; tied head
  const ModelSpec sc2 = tiny(R"({"model_type": "starcoder2", "hidden_size": 64, "intermediate_size": 256,
      "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 100})");
  const double sc2_attn = 64 * 64 + 64 + 2 * (64 * 32 + 32) + 64 * 64 + 64;
  const double sc2_mlp = 64 * 256 + 256 + 256 * 64 + 64;
  EXPECT_DOUBLE_EQ(model_params(sc2, 2), 6400 + 2 * (sc2_attn + sc2_mlp + 256) + 128);
}

// Families whose published totals are known to the parameter, from minimal configs with their dims.
TEST(BlockVocabulary, PublishedTotalsOfMoreFamilies) {
  const auto count = [](const std::string& json) {
    const ModelSpec m = tiny(json);
    return model_params(m, m.num_hidden_layers);
  };
  // bigscience/bloom-560m: embedding LayerNorm, ALiBi, biases everywhere, tied head
  EXPECT_DOUBLE_EQ(count(R"({"model_type": "bloom", "n_embed": 1024, "n_layer": 24, "n_head": 16,
      "vocab_size": 250880})"),
                   559214592);
  // facebook/opt-125m: positions 2048 + 2, relu MLP of ffn_dim, biases, tied head
  EXPECT_DOUBLE_EQ(count(R"({"model_type": "opt", "hidden_size": 768, "num_hidden_layers": 12, "ffn_dim": 3072,
      "num_attention_heads": 12, "vocab_size": 50272, "max_position_embeddings": 2048, "word_embed_proj_dim": 768})"),
                   125239296);
  // mosaicml/mpt-7b: no biases, LayerNorms without bias, expansion_ratio 4, tied head
  EXPECT_DOUBLE_EQ(count(R"({"model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 32,
      "expansion_ratio": 4, "vocab_size": 50432, "no_bias": true})"),
                   6649286656);
  // EleutherAI/gpt-neo-125m: learned positions, out_proj and MLP biases, tied head
  EXPECT_DOUBLE_EQ(count(R"({"model_type": "gpt_neo", "hidden_size": 768, "num_layers": 12, "num_heads": 12,
      "vocab_size": 50257, "max_position_embeddings": 2048, "attention_types": [[["global", "local"], 6]]})"),
                   125198592);
  // allenai/OLMo-1B-hf: LayerNorms without weights, tied head
  EXPECT_DOUBLE_EQ(count(R"({"model_type": "olmo", "hidden_size": 2048, "intermediate_size": 8192,
      "num_attention_heads": 16, "num_hidden_layers": 16, "vocab_size": 50304, "tie_word_embeddings": true})"),
                   1176764416);
  // Qwen/Qwen-7B (remote code): c_attn with bias, w1 and w2 of intermediate_size / 2, untied
  EXPECT_DOUBLE_EQ(count(R"({"model_type": "qwen", "hidden_size": 4096, "intermediate_size": 22016,
      "num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 151936})"),
                   7721324544);
  // hand counts, module by module (each matches its model page's rounded total)
  // EleutherAI/pythia-1b (1.01B): parallel residual with two LayerNorms, biases, untied embed_out
  EXPECT_DOUBLE_EQ(count(R"({"model_type": "gpt_neox", "hidden_size": 2048, "intermediate_size": 8192,
      "num_attention_heads": 8, "num_hidden_layers": 16, "vocab_size": 50304, "tie_word_embeddings": false})"),
                   1011781632);
  // bigcode/starcoder2-3b (3.03B): biases on every projection, LayerNorms with bias, tied head
  EXPECT_DOUBLE_EQ(count(R"({"model_type": "starcoder2", "hidden_size": 3072, "intermediate_size": 12288,
      "num_attention_heads": 24, "num_key_value_heads": 2, "num_hidden_layers": 30, "vocab_size": 49152})"),
                   3030371328);
  // stabilityai/stablelm-2-1_6b (1.64B): q, k, v biases, LayerNorms with bias, untied
  EXPECT_DOUBLE_EQ(count(R"({"model_type": "stablelm", "hidden_size": 2048, "intermediate_size": 5632,
      "num_attention_heads": 32, "num_hidden_layers": 24, "vocab_size": 100352, "use_qkv_bias": true})"),
                   1644515328);
  // CohereForAI/c4ai-command-r-v01 (35.0B): one LayerNorm without bias per parallel layer, tied
  EXPECT_DOUBLE_EQ(count(R"({"model_type": "cohere", "hidden_size": 8192, "intermediate_size": 22528,
      "num_attention_heads": 64, "num_hidden_layers": 40, "vocab_size": 256000})"),
                   34980831232);
  // THUDM/chatglm3-6b (6.24B): two key/value groups, q/k/v bias, untied output_layer
  EXPECT_DOUBLE_EQ(count(R"({"model_type": "chatglm", "hidden_size": 4096, "num_layers": 28,
      "num_attention_heads": 32, "kv_channels": 128, "multi_query_attention": true, "multi_query_group_num": 2,
      "ffn_hidden_size": 13696, "padded_vocab_size": 65024, "add_qkv_bias": true, "add_bias_linear": false})"),
                   6243584000);
  // baichuan-inc/Baichuan2-7B-Base (7.51B): LLaMA's layer, untied NormHead
  EXPECT_DOUBLE_EQ(count(R"({"model_type": "baichuan", "hidden_size": 4096, "intermediate_size": 11008,
      "num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 125696})"),
                   7505973248);
  // deepseek-ai/deepseek-moe-16b-base (16.4B): MHA, one dense layer, 64 routed + 2 shared experts
  EXPECT_DOUBLE_EQ(count(R"({"model_type": "deepseek", "hidden_size": 2048, "intermediate_size": 10944,
      "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
      "first_k_dense_replace": 1, "num_attention_heads": 16, "num_hidden_layers": 28, "vocab_size": 102400})"),
                   16375728128);
  // databricks/dbrx-base (132B): experts under ffn_config (16 gated, width 10752), kv heads under
  // attn_config, LayerNorms without bias, untied
  EXPECT_DOUBLE_EQ(count(R"({"model_type": "dbrx", "d_model": 6144, "n_heads": 48, "n_layers": 40,
      "vocab_size": 100352, "attn_config": {"kv_n_heads": 8}, "ffn_config": {"ffn_hidden_size": 10752,
      "moe_num_experts": 16, "moe_top_k": 4}})"),
                   131596523520);
  // baidu/ERNIE-4.5-21B-A3B (21.8B): layer 0 dense, layers 1-27 MoE (64 experts + 2 shared), tied
  const ModelSpec ernie = tiny(R"({"model_type": "ernie4_5_moe", "hidden_size": 2560, "intermediate_size": 12288,
      "num_attention_heads": 20, "num_key_value_heads": 4, "head_dim": 128, "num_hidden_layers": 28,
      "vocab_size": 103424, "moe_num_experts": 64, "moe_k": 6, "moe_intermediate_size": 1536,
      "moe_num_shared_experts": 2, "moe_layer_start_index": 1, "moe_layer_end_index": 27, "moe_layer_interval": 1})");
  EXPECT_FALSE(ernie.layer_is_moe(0));
  EXPECT_TRUE(ernie.layer_is_moe(1) && ernie.layer_is_moe(27));
  // with each MoE layer's score correction bias (moe_statics: 64, a parameter that never trains), as
  // transformers 5.17 counts it (reports/hf/param-counts-realcfg22-h200.jsonl)
  EXPECT_DOUBLE_EQ(model_params(ernie, 28), 21825436160 + 27 * 64);
  EXPECT_DOUBLE_EQ(layer_params(ernie, 1, 1, 1).untrained, 64);
  // zai-org/GLM-4.5-Air as transformers' Glm4MoeForCausalLM builds it (no MTP layer): q, k, v biases,
  // one dense layer, 45 MoE layers of 128 experts and one shared expert; 106,852,245,504 is the logical
  // parameter count a public fine-tuning script checks the loaded model against
  const std::string air = R"({"model_type": "glm4_moe", "attention_bias": true, "first_k_dense_replace": 1,
      "head_dim": 128, "hidden_size": 4096, "intermediate_size": 10944, "moe_intermediate_size": 1408,
      "n_routed_experts": 128, "n_shared_experts": 1, "num_attention_heads": 96, "num_experts_per_tok": 8,
      "num_hidden_layers": 46, "num_key_value_heads": 8, "partial_rotary_factor": 0.5, "use_qk_norm": false,
      "vocab_size": 151552, "num_nextn_predict_layers": )";
  EXPECT_DOUBLE_EQ(count(air + "0}"), 106852245504);
  // its MTP module (one MoE layer, eh_proj 2h x h, three norms) is costed when the config has one,
  // counted apart from the model's parameters, as transformers builds none
  const ModelSpec with_mtp = tiny(air + "1}");
  EXPECT_DOUBLE_EQ(count(air + "1}"), count(air + "0}"));
  EXPECT_DOUBLE_EQ(mtp_params(with_mtp, 1, 1).total(),
                   layer_params(with_mtp, 46, 1, 1).total() + 2.0 * 4096 * 4096 + 3 * 4096);
  EXPECT_EQ(with_mtp.notes.back().rfind("num_nextn_predict_layers = 1: the multi-token prediction modules", 0), 0u);
  // Kimi Linear loads since 2026-11-29: a config of its model_type alone takes KimiLinearConfig's
  // defaults, MLA's included (tests/data/hf_transformers_defaults.jsonl: 49,133,074,464 as built)
  const ModelSpec kimi = tiny(R"({"model_type": "kimi_linear"})");
  EXPECT_EQ(kimi.kv_lora_rank, 512);
  EXPECT_NEAR(count(R"({"model_type": "kimi_linear"})") / 49133074464.0, 1.0, 0.001);
  EXPECT_EQ(test::rejection_of(R"({"model_type": "opt", "hidden_size": 1024, "num_hidden_layers": 24, "ffn_dim": 4096,
      "num_attention_heads": 16, "vocab_size": 50272, "word_embed_proj_dim": 512})"),
            "t.json: word_embed_proj_dim: is not a model remat can build: OPT's embedding projections (project_in, "
            "project_out) to a width other than hidden_size; remat has no block for them (got 512)");
}

// remat's YAML names the same construction: GPT-J's parallel layer with one LayerNorm.
TEST(BlockVocabulary, YamlSpecsNameTheLayer) {
  const ModelSpec m = parse_model_yaml(R"(name: tiny-parallel
hidden_size: 64
intermediate_size: 256
num_attention_heads: 4
vocab_size: 100
num_hidden_layers: 2
mlp_kind: two_matrix
hidden_act: gelu_new
norm: layernorm
norm_bias: true
mlp_bias: true
parallel_attn_mlp: true
shared_input_norm: true
rotary_fraction: 0.5
)",
                                       "t.yaml");
  // untied embedding and head 2*100*64; per layer q, k, v, o 4*64*64, one LayerNorm 2*64, up
  // 64*256+256, down 256*64+64; final LayerNorm 2*64
  EXPECT_DOUBLE_EQ(model_params(m, 2), 12800 + 2 * (16384 + 128 + 16640 + 16448.0) + 128);
  EXPECT_THROW(parse_model_yaml("name: x\nhidden_size: 64\nintermediate_size: 256\nnum_attention_heads: 4\n"
                                "vocab_size: 100\nnum_hidden_layers: 2\nqk_norm: full\n",
                                "t.yaml"),
               InputError);
}

TEST(BlockVocabulary, LoaderKeyedOnWhatTheFileSays) {
  const std::string mla = R"("hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
      "vocab_size": 100, "num_hidden_layers": 3, "kv_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16,
      "v_head_dim": 16, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
      "n_shared_experts": 1, "first_k_dense_replace": 1)";
  // Kimi K2: model_type kimi_k2 is DeepSeek-V3's layer (its architectures say so)
  const ModelSpec k2 = tiny(R"({"model_type": "kimi_k2", "architectures": ["DeepseekV3ForCausalLM"], )" + mla + "}");
  EXPECT_EQ(k2.n_routed_experts, 4);
  EXPECT_EQ(k2.attention(), AttentionKind::mla);
  EXPECT_EQ(k2.notes[0], "model_type kimi_k2 is read as deepseek_v3 (the same layers under another name)");
  // Kimi K2.5: the multimodal wrapper's text_config is a kimi_k2
  const ModelSpec k25 = tiny(R"({"model_type": "kimi_k25", "text_config": {"model_type": "kimi_k2", )" + mla + "}}");
  EXPECT_DOUBLE_EQ(model_params(k25, 3), model_params(k2, 3));
  // an unknown model_type whose architectures remat knows
  const std::string dims = R"("hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
      "vocab_size": 100, "num_hidden_layers": 2)";
  const ModelSpec acme = tiny(R"({"model_type": "acme", "architectures": ["Qwen2ForCausalLM"], )" + dims + "}");
  EXPECT_TRUE(acme.qkv_bias);
  EXPECT_EQ(acme.notes[0], "model_type acme is read as qwen2 (architectures: Qwen2ForCausalLM)");
  // InternVL's remote code nests the language model as llm_config
  const ModelSpec internvl = tiny(
      R"({"model_type": "internvl_chat", "llm_config": {"model_type": "internlm2", "bias": false, )" + dims + "}}");
  EXPECT_FALSE(internvl.qkv_bias);
  EXPECT_DOUBLE_EQ(model_params(internvl, 2), model_params(tiny(R"({"model_type": "llama", )" + dims + "}"), 2));
  // DeepSeek v1 (MHA, fine-grained experts): layer 0 dense, then MoE
  const ModelSpec ds = tiny(R"({"model_type": "deepseek", "n_routed_experts": 8, "num_experts_per_tok": 2,
      "moe_intermediate_size": 32, "n_shared_experts": 2, "first_k_dense_replace": 1, )" +
                            dims + "}");
  EXPECT_FALSE(ds.layer_is_moe(0));
  EXPECT_TRUE(ds.layer_is_moe(1));
  // MiniCPM: dense, or MoE in every layer with num_experts of intermediate_size (MiniCPM-MoE)
  const ModelSpec cpm = tiny(R"({"model_type": "minicpm", "num_experts": 8, "num_experts_per_tok": 2, )" + dims + "}");
  EXPECT_TRUE(cpm.layer_is_moe(0));
  EXPECT_EQ(cpm.moe_intermediate_size, 128);
  EXPECT_TRUE(cpm.tie_word_embeddings);
  EXPECT_FALSE(tiny(R"({"model_type": "minicpm", )" + dims + "}").is_moe());
  // Gemma 3's text_config leaves vocab_size out (Gemma3TextConfig's 262208); head_dim 256 is not h / heads
  const ModelSpec g3 = tiny(R"({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text",
      "hidden_size": 2560, "intermediate_size": 10240, "num_attention_heads": 8, "num_hidden_layers": 34}})");
  EXPECT_EQ(g3.vocab_size, 262208);
  EXPECT_EQ(g3.head_dim, 256);
  EXPECT_EQ(g3.num_key_value_heads, 4);
  // Qwen2.5-VL re-saved by newer transformers keeps the language model only in text_config
  const ModelSpec vl =
      tiny(R"({"model_type": "qwen2_5_vl", "text_config": {"model_type": "qwen2_5_vl_text", )" + dims + "}}");
  EXPECT_TRUE(vl.qkv_bias);
  EXPECT_EQ(vl.hidden_size, 64);
  // MiMo: Qwen2 layers plus MTP modules of the same dense layer (+ 2h x h input_proj, three norms)
  const ModelSpec mimo = tiny(R"({"model_type": "mimo", "num_nextn_predict_layers": 1, )" + dims + "}");
  EXPECT_DOUBLE_EQ(mtp_params(mimo, 1, 1).total(), layer_params(mimo, 2, 1, 1).total() + 2 * 64 * 64 + 3 * 64);
}

// Nemotron-H: one block per pattern character. Hand count of a small one, h 64:
// M: norm 64, in_proj 64 x (2*128 + 2*1*16 + 4) = 64*292, conv1d (128+32) x (4+1), dt_bias, A_log, D 3*4,
//    gated norm 128, out_proj 128*64;
// *: norm 64, q 64*64, k and v 64*32, o 64*64 (no biases);
// -: norm 64, up 64*256, down 256*64 (relu^2);
// embeddings 100*64 untied twice, final norm 64.
TEST(BlockVocabulary, NemotronHMamba2LayersByHand) {
  const std::string base = R"({"model_type": "nemotron_h", "hidden_size": 64, "intermediate_size": 256,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100, "num_hidden_layers": 3,
      "mamba_num_heads": 4, "mamba_head_dim": 32, "ssm_state_size": 16, "n_groups": 1, "conv_kernel": 4,
      "chunk_size": 32, "hybrid_override_pattern": )";
  const ModelSpec m = tiny(base + R"("M*-"})");
  EXPECT_EQ(m.mixer(0), Mixer::mamba2);
  EXPECT_EQ(m.mixer(1), Mixer::attention);
  EXPECT_EQ(m.mixer(2), Mixer::none);
  EXPECT_FALSE(m.has_ffn(0) || m.has_ffn(1));
  const double mamba = 64 + 64 * 292 + 160 * 5 + 12 + 128 + 128 * 64;
  const double attention = 64 + 4096 + 2 * 2048 + 4096, mlp = 64 + 2 * 64 * 256;
  EXPECT_DOUBLE_EQ(layer_params(m, 0, 1, 1).total(), mamba);
  EXPECT_DOUBLE_EQ(layer_params(m, 1, 1, 1).total(), attention);
  EXPECT_DOUBLE_EQ(layer_params(m, 2, 1, 1).total(), mlp);
  EXPECT_DOUBLE_EQ(model_params(m, 3), 2 * 6400 + mamba + attention + mlp + 64);
  // what the Mamba-2 block keeps per strategy, rows 2 x 64 = 128: its input x, 1/rms, the normed
  // input (in_proj), the in_proj output z x B C dt (292 wide), the scan output (128) and its 1/rms
  const Block b = build_layer(m, shape(2, 64), 0).blocks[0];
  const double rows = 128;
  EXPECT_DOUBLE_EQ(saved_bytes(b),
                   rows * 64 * 2 + rows * 4 + rows * 64 * 2 + rows * 292 * 2 + rows * 128 * 2 + rows * 4);
  EXPECT_DOUBLE_EQ(block_cost(b, BlockMode::standard, false).kept_bytes, rows * 64 * 2);
  // scan FLOPs per row and head: Q (N + P) + 4 N P, plus the conv 2 K conv_dim per row
  const double scan = rows * 4 * (32 * (16 + 32) + 4 * 16 * 32) + 2 * rows * 160 * 4;
  EXPECT_DOUBLE_EQ(block_cost(b, BlockMode::keep, false).fwd_flops, 2 * rows * 64 * 292 + scan + 2 * rows * 128 * 64);
  // transformers 5's re-save: the pattern as layers_block_type words, no num_hidden_layers, and
  // the older Mamba key names NemotronHConfig still reads
  const ModelSpec resaved = tiny(R"({"model_type": "nemotron_h", "hidden_size": 64, "intermediate_size": 256,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100, "mamba_num_heads": 4,
      "mamba_head_dim": 32, "ssm_state_size": 16, "mamba_n_groups": 1, "mamba_d_conv": 4, "mamba_chunk_size": 32,
      "layers_block_type": ["linear_attention", "full_attention", "mlp"]})");
  EXPECT_EQ(resaved.num_hidden_layers, 3);
  EXPECT_EQ(resaved.layer_mixers, m.layer_mixers);
  EXPECT_EQ(resaved.layer_has_ffn, m.layer_has_ffn);
  EXPECT_DOUBLE_EQ(model_params(resaved, 3), model_params(m, 3));
}

// Nemotron 3's MoE blocks (E): a norm, the router 64 x 8, 8 two-matrix relu^2 experts of 32
// (up 64*32, down 32*64 each) and one shared MLP of moe_shared_expert_intermediate_size 64
// (two experts' width); no mixer. transformers' NemotronHMoE; n_shared_experts is not read.
TEST(BlockVocabulary, NemotronHTwoMatrixExpertsByHand) {
  const std::string base = R"({"model_type": "nemotron_h", "hidden_size": 64, "intermediate_size": 256,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100, "mamba_num_heads": 4,
      "mamba_head_dim": 32, "ssm_state_size": 16, "n_groups": 1, "n_routed_experts": 8, "num_experts_per_tok": 2,
      "moe_intermediate_size": 32, "n_shared_experts": 1, "moe_shared_expert_intermediate_size": 64, )";
  const ModelSpec m = tiny(base + R"("layers_block_type": ["linear_attention", "moe", "full_attention", "mlp"]})");
  EXPECT_EQ(m.mixer(1), Mixer::none);
  EXPECT_TRUE(m.has_ffn(1) && m.layer_is_moe(1));
  EXPECT_FALSE(m.layer_is_moe(3));
  EXPECT_EQ(m.n_shared_experts, 2);
  const ParamCount moe = layer_params(m, 1, 1, 1);
  EXPECT_DOUBLE_EQ(moe.dense, 64 + 64 * 8 + 2 * 64 * 64);
  EXPECT_DOUBLE_EQ(moe.expert, 8 * 2 * 64 * 32);
  EXPECT_DOUBLE_EQ(layer_params(m, 3, 1, 1).total(), 64 + 2 * 64 * 256);  // the dense relu^2 MLP
  // the routed experts run up (h -> f), relu^2, down (f -> h) on K copies of the rows: 2 x 2 GEMMs
  // of 2 rows h f FLOPs each, no gate
  const LayerDef layer = build_layer(m, shape(1, 64), 1);
  double routed_flops = 0;
  for (const Block& b : layer.blocks)
    if (b.name == "moe.routed") routed_flops = block_cost(b, BlockMode::keep, false).fwd_flops;
  const double copies = 64 * 2;
  EXPECT_DOUBLE_EQ(routed_flops, 2 * (2 * copies * 64 * 32));
  // a latent MoE (Nemotron 3 Super's moe_latent_size 16): fc1_latent_proj 64 x 16 and
  // fc2_latent_proj 16 x 64 beside the router and shared MLP; the experts read and write 16
  const ModelSpec latent = tiny(base + R"("moe_latent_size": 16, "layers_block_type": ["moe"]})");
  EXPECT_EQ(latent.moe_latent_size, 16);
  EXPECT_DOUBLE_EQ(layer_params(latent, 0, 1, 1).dense, 64 + 64 * 8 + 2 * 64 * 64 + 2 * 64 * 16);
  EXPECT_DOUBLE_EQ(layer_params(latent, 0, 1, 1).expert, 8 * 2 * 16 * 32);
  const auto fwd_flops = [](const LayerDef& l, const char* name) {
    for (const Block& b : l.blocks)
      if (b.name == name) return block_cost(b, BlockMode::keep, false).fwd_flops;
    return -1.0;
  };
  const LayerDef plain_layer = build_layer(m, shape(1, 64), 1), latent_layer = build_layer(latent, shape(1, 64), 0);
  EXPECT_DOUBLE_EQ(fwd_flops(latent_layer, "moe.routed"), 2 * (2 * copies * 16 * 32));
  // the down projection (64 rows, 64 -> 16) beside the router, the up projection (16 -> 64) in the combine
  EXPECT_DOUBLE_EQ(fwd_flops(latent_layer, "moe.shared") - fwd_flops(plain_layer, "moe.shared"), 2 * 64 * 64 * 16.0);
  EXPECT_DOUBLE_EQ(fwd_flops(latent_layer, "moe.combine") - fwd_flops(plain_layer, "moe.combine"), 2 * 64 * 16 * 64.0);
  EXPECT_EQ(test::rejection_of(base + R"("moe_latent_size": 65, "layers_block_type": ["moe"]})"),
            "t.json: moe_latent_size: must be between 1 and hidden_size = 64 (null: no latent projection) (got 65)");
  // another family's latent width is a layout remat does not know: refused by name
  EXPECT_EQ(test::rejection_of(R"({"model_type": "qwen3_moe", "hidden_size": 64, "intermediate_size": 128,
      "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100, "num_hidden_layers": 2,
      "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "moe_latent_size": 16})"),
            "t.json: moe_latent_size: is not a model remat can build: latent MoE (experts narrower than hidden_size = "
            "64, between two projections) outside Nemotron-H's layout (got 16)");
}

// Qwen3-Next: Gated DeltaNet layers, every full_attention_interval-th layer attention with an
// output gate, then MoE. Hand count of the mixers, h 64, 2 key heads and 4 value heads of 16:
// GDN: norm 64, in_proj_qkvz 64 x (2*32 + 2*64), in_proj_ba 64 x 8, conv1d (2*32+64) x 4,
//      dt_bias and A_log 2*4, gated norm 16, out_proj 64*64;
// attention: norm 64, q_proj 64 x (4*16) x 2 (with the gate), k and v 64*32, o 64*64, q/k norms 2*16.
TEST(BlockVocabulary, Qwen3NextGatedDeltaNetByHand) {
  const ModelSpec m = tiny(R"({"model_type": "qwen3_next", "hidden_size": 64, "intermediate_size": 128,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100, "num_hidden_layers": 4,
      "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 16, "linear_value_head_dim": 16,
      "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32,
      "full_attention_interval": 4})");
  EXPECT_EQ(m.mixer(0), Mixer::gated_deltanet);
  EXPECT_EQ(m.mixer(3), Mixer::attention);
  EXPECT_TRUE(m.attention_output_gate);
  const double gdn = 64 + 64 * 192 + 64 * 8 + 128 * 4 + 8 + 16 + 64 * 64;
  const double attention = 64 + 64 * 128 + 2 * 2048 + 4096 + 32;
  // MoE: post-attention norm 64, router 64*4, one shared expert 3*64*32 and its gate 64 x 1, four
  // experts 4*3*64*32
  const double moe = 64 + 256 + 3 * 64 * 32 + 64 + 4 * 3 * 64 * 32;
  EXPECT_DOUBLE_EQ(layer_params(m, 0, 1, 1).total(), gdn + moe);
  EXPECT_DOUBLE_EQ(layer_params(m, 3, 1, 1).total(), attention + moe);
  // the Gated DeltaNet block keeps its input under recompute; none keeps q, k, v, the conv input,
  // the decay and beta, the WY matrix (64 fp32 per value head), the output, its norm and 1/rms
  const Block b = build_layer(m, shape(1, 128), 0).blocks[0];
  const double rows = 128, x = rows * 64 * 2;
  EXPECT_DOUBLE_EQ(block_cost(b, BlockMode::standard, false).kept_bytes, x);
  EXPECT_DOUBLE_EQ(saved_bytes(b), x + rows * 4 + x + rows * 192 * 2 + 2 * rows * 128 * 2 + rows * 4 * 6 +
                                       rows * 4 * 64 * 4 + 2 * rows * 64 * 2 + rows * 4 * 4);
  // the attention output gate: the sigmoid and the gated output (Wo's input, kept by every strategy)
  ModelSpec ungated = m;
  ungated.attention_output_gate = false;
  const RankShape r = shape(1, 128);
  EXPECT_DOUBLE_EQ(saved_bytes(gqa_block(r, m)) - saved_bytes(gqa_block(r, ungated)), 2 * rows * 64 * 2.0);
  EXPECT_DOUBLE_EQ(block_cost(gqa_block(r, m), BlockMode::standard, false).kept_bytes, x + rows * 64 * 2);
}

// Every new piece through estimate under every profile and strategy: finite, and every
// recompute strategy keeps fewer activations on the first stage than none.
TEST(BlockVocabulary, EveryStrategyAndProfileEstimates) {
  const std::vector<std::string> corpus = {"gpt2.json", "falcon-7b.json", "phi-1.json", "exaone-4.0-32b.json",
                                           "qwen3.5-9b.json"};
  const HardwareSpec hw0 = test::hardware("h200");
  for (const std::string& file : corpus) {
    ModelSpec m = parse_hf_config(test::read_text(std::string(REMAT_TEST_DATA) + "/data/hf_configs/" + file), file);
    m.num_hidden_layers = 4;
    for (const FrameworkProfile* p : framework_profiles()) {
      TrainingSpec t = test::layout(1, 2, 1, 1, 1, 1024);
      t.gbs = 8;
      t = with_defaults(apply_framework(t, p->name));
      const HardwareSpec hw = apply_framework(hw0, p->name);
      double none_kept = 0;
      for (Strategy s : {Strategy::none, Strategy::full, Strategy::selective, Strategy::standard, Strategy::eagle,
                         Strategy::offload}) {
        Plan plan;
        plan.strategy = s;
        plan.recompute_layers = {2, 2};  // every layer of both stages
        const Estimate e = estimate(m, hw, t, plan, default_budget_bytes(hw));
        ASSERT_TRUE(std::isfinite(e.peak_memory_bytes) && e.peak_memory_bytes > 0) << file << " " << p->name;
        ASSERT_TRUE(std::isfinite(e.iteration.time_s) && e.iteration.time_s > 0) << file << " " << p->name;
        const double kept = e.stages[0].memory_bytes.activations;
        if (s == Strategy::none) none_kept = kept;
        // Megatron's selective modules (core_attn) have nothing to drop in a Gated DeltaNet layer
        const bool nothing_to_drop = s == Strategy::selective && m.mixer(0) != Mixer::attention;
        if (s != Strategy::none && !nothing_to_drop)
          EXPECT_LT(kept, none_kept) << file << " " << p->name << " " << to_string(s);
      }
    }
  }
}

}  // namespace
}  // namespace remat
