// Megatron-LM's recompute vocabulary as plan choices: selective module sets
// and full uniform/block costed from the exact blocks' tags (bytes derived
// by hand below), the best plan Megatron runs as-is, and the flags printed.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "remat/cost/estimate.hpp"
#include "remat/cost/stage_model.hpp"
#include "remat/search/layer_plan_text.hpp"
#include "remat/search/megatron_flags.hpp"
#include "remat/search/megatron_runnable.hpp"
#include "shell_run.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

using test::small_dense;  // h 1024, 8 heads of 128, 2 kv heads, SwiGLU 3584

LayerDef small_layer() { return build_layer(small_dense(4), rank_shape(test::layout(1, 1, 1, 1, 1, 2048)), 0); }

LayerChoice selective(ModuleSet s) {
  LayerChoice c{LayerMode::selective, {}};
  c.modules = s;
  return c;
}

constexpr ModuleSet kMlp = module_bit(MegatronModule::mlp);
constexpr ModuleSet kNorm = module_bit(MegatronModule::layernorm);

// Per layer, 2048 rows: x, x_norm, q, o 4 MiB each; k, v 1 MiB; rstd 8 KiB per
// norm; lse 8 heads x 2048 x fp32 = 64 KiB; gate, up, act 2048 x 3584 x 2 B =
// 14 MiB each. Saved with nothing recomputed: 68 MiB + 2 x 8 KiB + 64 KiB.
// Gradient working set: 3 x the largest tensor = 42 MiB.
const double kAllSaved = 68 * kMiB + 2 * 8192 + 65536;
const double kGrads = 42 * kMiB;

TEST(MegatronModules, SelectiveCoreAttnDropsOnlyTheSoftmaxStatistics) {
  const LayerCost c = layer_cost(small_layer(), selective(kCoreAttn), false, test::hardware("h100-sxm"));
  EXPECT_DOUBLE_EQ(c.kept_bytes, kAllSaved - 65536);  // q, k, v and o stay
  EXPECT_DOUBLE_EQ(c.transient_bytes, 65536 + kGrads);
  EXPECT_GT(c.recompute_flops, 0);
  // the attention core's forward: 4 b s^2 heads d / 2 (causal)
  EXPECT_DOUBLE_EQ(c.recompute_flops, 4.0 * 2048 * 2048 * 8 * 128 * 0.5);
}

TEST(MegatronModules, SelectiveMlpKeepsItsNormedInput) {
  const LayerCost c = layer_cost(small_layer(), selective(kMlp), false, test::hardware("h100-sxm"));
  EXPECT_DOUBLE_EQ(c.kept_bytes, kAllSaved - 42 * kMiB);  // gate, up, act dropped; x_norm stays
  EXPECT_DOUBLE_EQ(c.transient_bytes, 42 * kMiB + kGrads);
  // fc1 (2 s h 2f) + fc2 (2 s f h) replayed
  EXPECT_DOUBLE_EQ(c.recompute_flops, 2.0 * 2048 * 1024 * 7168 + 2.0 * 2048 * 3584 * 1024);
}

TEST(MegatronModules, SelectiveCoreAttnAndMlpReplaysOneHalfAtATime) {
  const LayerCost c = layer_cost(small_layer(), selective(kCoreAttn | kMlp), false, test::hardware("h100-sxm"));
  EXPECT_DOUBLE_EQ(c.kept_bytes, kAllSaved - 42 * kMiB - 65536);
  EXPECT_DOUBLE_EQ(c.transient_bytes, 42 * kMiB + kGrads);  // the MLP half is the larger
}

TEST(MegatronModules, LayernormDropsBothNormOutputsAndStatistics) {
  const LayerCost c = layer_cost(small_layer(), selective(kNorm), false, test::hardware("h100-sxm"));
  EXPECT_DOUBLE_EQ(c.kept_bytes, kAllSaved - 2 * (4 * kMiB + 8192));
  EXPECT_DOUBLE_EQ(c.recompute_flops, 0);  // two memory-bound norms
  EXPECT_GT(c.recompute_s, 0);
}

TEST(MegatronModules, DefaultSelectiveIsCoreAttn) {
  const HardwareSpec hw = test::hardware("h100-sxm");
  const LayerCost a = layer_cost(small_layer(), LayerChoice{LayerMode::selective, {}}, false, hw);
  const LayerCost b = layer_cost(small_layer(), selective(kCoreAttn), false, hw);
  EXPECT_DOUBLE_EQ(a.kept_bytes, b.kept_bytes);
  EXPECT_DOUBLE_EQ(a.recompute_s, b.recompute_s);
}

LayerSums stage_sums(const MegatronRecompute& r, int64_t layers) {
  const LayerDef layer = small_layer();
  LayerSums sums;
  for (int64_t j = 0; j < layers; ++j)
    sums.add(layer_cost(layer, megatron_layer_choice(r, j, layers), false, test::hardware("h100-sxm")));
  return sums;
}

TEST(MegatronFull, UniformTwoKeepsOneInputPerChunkAndReplaysTheChunk) {
  const LayerSums s = stage_sums({MegatronGranularity::full, MegatronMethod::uniform, 2, 0}, 4);
  EXPECT_DOUBLE_EQ(s.kept_bytes, 2 * 4 * kMiB);  // the inputs of layers 0 and 2
  // chunk backward: layer 0 replayed without its kept input, layer 1 whole, plus gradients
  EXPECT_DOUBLE_EQ(s.transient_bytes, (kAllSaved - 4 * kMiB) + kAllSaved + kGrads);
}

TEST(MegatronFull, BlockTwoRecomputesTheFirstTwoLayers) {
  const LayerSums s = stage_sums({MegatronGranularity::full, MegatronMethod::block, 2, 0}, 4);
  EXPECT_DOUBLE_EQ(s.kept_bytes, 2 * 4 * kMiB + 2 * kAllSaved);
  EXPECT_DOUBLE_EQ(s.transient_bytes, kAllSaved - 4 * kMiB + kGrads);
  const LayerSums all = stage_sums({MegatronGranularity::full, MegatronMethod::block, 4, 0}, 4);
  const LayerSums uniform = stage_sums({MegatronGranularity::full, MegatronMethod::uniform, 2, 0}, 4);
  EXPECT_DOUBLE_EQ(s.recompute_s * 2, all.recompute_s);  // half the layers replayed
  EXPECT_DOUBLE_EQ(uniform.recompute_s, all.recompute_s);
}

TEST(MegatronFull, UniformChunksRestartOnEveryStage) {
  // Megatron chunks each stage's layers: 3 layers in chunks of 2 are [0,1] and [2]
  const MegatronRecompute r{MegatronGranularity::full, MegatronMethod::uniform, 2, 0};
  EXPECT_EQ(megatron_layer_choice(r, 1, 3).chunk_position, 1);
  EXPECT_EQ(megatron_layer_choice(r, 2, 3).chunk_layers, 1);
  EXPECT_EQ(megatron_layer_choice(r, 2, 3).chunk_position, 0);
}

TEST(MegatronRunnable, PicksTheCheapestReplayThatFits) {
  const ModelSpec m = small_dense(4);
  const HardwareSpec hw = test::hardware("h100-sxm");
  TrainingSpec t = test::layout(1, 2, 1, 1, 1, 2048);
  Plan none;
  none.megatron = MegatronRecompute{};
  const double none_peak = estimate(m, hw, t, none, 1e30).peak_memory_bytes;
  // searched, the split moves a layer off the last stage (its LM head and fp32 logits peak) instead
  const RunnablePlan searched = runnable_megatron_plan(m, hw, t, {none_peak - 1, false});
  ASSERT_TRUE(searched.best);
  EXPECT_EQ(describe(searched.best->setting), "none");
  EXPECT_EQ(searched.split.layers_per_stage, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(searched.split.first_stage_layers, 3);
  t.layers_per_stage = {2, 2};  // given: kept
  const RunnablePlan at_none = runnable_megatron_plan(m, hw, t, {none_peak, false});
  ASSERT_TRUE(at_none.best);
  EXPECT_EQ(describe(at_none.best->setting), "none");
  // one byte less: core attention's replay is the cheapest that frees anything (layernorm is
  // never offered: fused away under Transformer Engine, failing at run time without it)
  const RunnablePlan local = runnable_megatron_plan(m, hw, t, {none_peak - 1, false});
  ASSERT_TRUE(local.best);
  EXPECT_EQ(describe(local.best->setting), "selective core_attn");
  EXPECT_EQ(one_line(recompute_flags(local.best->setting)),
            "--recompute-granularity selective --recompute-modules core_attn");
  for (const auto& c : local.candidates) EXPECT_EQ(c.setting.modules & module_bit(MegatronModule::layernorm), 0u);
  const RunnablePlan te = runnable_megatron_plan(m, hw, t, {none_peak - 1, true});
  ASSERT_TRUE(te.best);
  EXPECT_EQ(describe(te.best->setting), "selective core_attn");
  // its time and peak are those of estimate on the same flags
  Plan p;
  p.megatron = local.best->setting;
  const Estimate e = estimate(m, hw, local.training, p, none_peak - 1);
  EXPECT_DOUBLE_EQ(e.iteration.time_s, local.best->time_s);
  EXPECT_DOUBLE_EQ(e.peak_memory_bytes, local.best->peak_bytes);
}

TEST(MegatronFlagsText, FullFlagsAlwaysCarryMethodAndNumLayers) {
  EXPECT_EQ(one_line(recompute_flags({MegatronGranularity::full, MegatronMethod::block, 2, 0})),
            "--recompute-granularity full --recompute-method block --recompute-num-layers 2");
  EXPECT_EQ(one_line(recompute_flags({MegatronGranularity::full, MegatronMethod::uniform, 1, 0})),
            "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1");
  EXPECT_EQ(one_line(recompute_flags({MegatronGranularity::selective, MegatronMethod::uniform, 0, kCoreAttn | kMlp})),
            "--recompute-granularity selective --recompute-modules core_attn mlp");
  EXPECT_TRUE(recompute_flags(MegatronRecompute{}).empty());
  EXPECT_EQ(paste_safe({"--a 1", "--b"}), "  --a 1 \\\n  --b \\\n");
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(MegatronFlagsText, NoSettingPrintsWhatMegatronRefuses) {
  const std::pair<const char*, TrainingSpec> cases[] = {{"llama3-70b", test::layout(8, 4, 1, 1, 4, 4096)},
                                                        {"deepseek-v3", test::layout(1, 16, 128, 64, 1, 4096)},
                                                        {"deepseek-v2", test::layout(1, 16, 128, 32, 1, 4096)},
                                                        {"moe-mla-moe-toy", test::layout(1, 2, 1, 1, 1, 4096)}};
  for (const auto& [name, t] : cases) {
    const ModelSpec m = test::model(name);
    for (bool te : {false, true}) {
      const MegatronSplit split = megatron_split(m, t);
      for (const MegatronRecompute& r : megatron_settings(m, t, te)) {
        const std::string line = one_line(megatron_args(m, t, split, r, te).all());
        SCOPED_TRACE(std::string(name) + ": " + line);
        EXPECT_EQ(contains(line, "--recompute-method"), contains(line, "--recompute-num-layers"));
        EXPECT_FALSE(contains(line, "selective") && contains(line, "--recompute-method"));
        EXPECT_FALSE(contains(line, "offload"));  // no offloading in a Megatron-runnable plan
        const std::string modules = one_line(recompute_flags(r)) + " ";
        EXPECT_FALSE(contains(modules, " moe ") && contains(modules, "moe_act"));
        EXPECT_FALSE(contains(modules, "mla_up_proj") && m.attention() != AttentionKind::mla);
        EXPECT_FALSE(contains(modules, " layernorm") && te);
        EXPECT_FALSE(contains(line, "moe_act") && !contains(line, "--moe-grouped-gemm"));
      }
    }
  }
}

TEST(MegatronSplitFlags, DeepSeek63LayersOn16StagesNamesTheLastStage) {
  const ModelSpec m = test::model("deepseek-v3");
  TrainingSpec t = test::layout(1, 16, 128, 64, 1, 4096);
  t.num_layers_override = 63;
  const MegatronSplit s = megatron_split(m, t);
  // remat: 15 stages of 4, the last 3
  EXPECT_EQ(s.last_stage_layers, 3);
  EXPECT_EQ(s.first_stage_layers, 0);
  const std::string line = one_line(megatron_args(m, t, s, MegatronRecompute{}, false).all());
  EXPECT_TRUE(contains(line, "--num-layers 63 ")) << line;
  EXPECT_TRUE(contains(line, "--decoder-last-pipeline-num-layers 3 ")) << line;
  EXPECT_FALSE(contains(line, "--decoder-first-pipeline-num-layers")) << line;
  EXPECT_TRUE(contains(line, "--moe-layer-freq '([0]*3+[1]*60)'")) << line;
}

TEST(MegatronSplitFlags, AnySplitIsALayoutAndNoted) {
  TrainingSpec t = test::layout(1, 4, 1, 1, 1, 2048);
  const ModelSpec m = small_dense(10);  // remat: 3,3,2,2; not first/last alone: a layout
  const MegatronSplit s = megatron_split(m, t);
  EXPECT_EQ(s.layers_per_stage, (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(s.layout, "Et*3|t*3|t*2|t*2L");
  const MegatronArgs a = megatron_args(m, t, s, MegatronRecompute{}, false);
  const std::string line = one_line(a.all());
  EXPECT_TRUE(contains(line, "--pipeline-model-parallel-layout 'Et*3|t*3|t*2|t*2L'")) << line;
  EXPECT_FALSE(contains(line, "--decoder-first-pipeline-num-layers")) << line;
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_EQ(a.notes[0],
            "pipeline split 3x2,2x2 layers per stage (Megatron-LM: --pipeline-model-parallel-layout "
            "'Et*3|t*3|t*2|t*2L')");
}

TEST(LayerPlanText, SelectiveModuleSetsRoundTrip) {
  const ModelSpec m = test::model("llama3-70b");
  const TrainingSpec t = test::layout(8, 4, 1, 1, 4, 4096);
  const auto parsed = parse_layer_plan("0-1:selective(mlp+core_attn);2:selective", m, t);
  EXPECT_EQ(parsed.at(0).modules, kCoreAttn | kMlp);
  EXPECT_EQ(parsed.at(2).modules, kCoreAttn);
  std::vector<LayerChoice> v;
  for (const auto& [g, c] : parsed) v.push_back(c);
  EXPECT_EQ(format_layer_plan(v, 0, m, t), "0-1:selective(core_attn+mlp);2:selective");
}

// What `remat plan` prints for Megatron-LM, pasted back into `remat estimate`, gives the same time and peak.
TEST(MegatronCli, PrintedFlagsEstimateToThePlansNumbers) {
  for (const std::vector<std::string> layout : {std::vector<std::string>{},
                                                {"--model", "deepseek-v3", "--num-layers", "63", "--tp", "1", "--pp",
                                                 "16", "--dp", "128", "--ep", "64", "--mbs", "1"}}) {
    std::vector<std::string> args = {"plan", "--json", "-"};
    args.insert(args.end(), layout.begin(), layout.end());
    const auto plan = test::run_shell(test::remat_command(args));
    ASSERT_EQ(plan.exit_code, 0) << plan.out;
    const auto mj = nlohmann::json::parse(plan.out)["megatron"];
    std::vector<std::string> est = {"estimate", "--json", "-"};
    est.insert(est.end(), layout.begin(), layout.end());
    std::vector<std::string> flags = mj["split_flags"];
    for (const auto& f : mj["recompute_flags"]) flags.push_back(f);
    for (std::string s : flags) {
      std::erase(s, '\'');  // the layout's shell quotes
      size_t start = 0;
      while (start < s.size()) {
        const size_t sp = std::min(s.find(' ', start), s.size());
        est.push_back(s.substr(start, sp - start));
        start = sp + 1;
      }
    }
    const auto e = test::run_shell(test::remat_command(est));
    const auto ej = nlohmann::json::parse(e.out);
    EXPECT_NEAR(ej["iteration"]["time_s"].get<double>(), mj["time_s"].get<double>(), 1e-9);
    EXPECT_NEAR(ej["peak_memory_bytes"].get<double>(), mj["peak_bytes"].get<double>(), 1.0);
  }
}

}  // namespace
}  // namespace remat

namespace remat {
namespace {

// Megatron-LM refuses top-1 routing without --moe-router-pre-softmax (Llama 4 Scout, Maverick).
TEST(MegatronFlagsText, TopOneRoutingTakesPreSoftmax) {
  ModelSpec m = test::model("moe-mla-moe-toy");
  const TrainingSpec t = test::layout(1, 2, 1, 1, 1, 4096);
  m.num_experts_per_tok = 1;
  std::string line = one_line(megatron_args(m, t, megatron_split(m, t), MegatronRecompute{}, false).all());
  EXPECT_NE(line.find("--moe-router-topk 1 --moe-router-pre-softmax"), std::string::npos) << line;
  m.num_experts_per_tok = 2;
  line = one_line(megatron_args(m, t, megatron_split(m, t), MegatronRecompute{}, false).all());
  EXPECT_EQ(line.find("--moe-router-pre-softmax"), std::string::npos) << line;
}

}  // namespace
}  // namespace remat
