// The split search's shortcuts give stage_estimate's numbers: a range's parameters from sums over
// the layers before it, and one walk over a stage's layers extended to every stage size.
#include <gtest/gtest.h>

#include "remat/cost/estimate.hpp"
#include "remat/cost/stage_model.hpp"
#include "remat/io/spec_loader.hpp"
#include "remat/spec/framework.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

// Nemotron 3 Nano: Mamba-2, MoE and attention layers in one pattern, so that ranges differ.
ModelSpec hybrid() {
  const std::string file = std::string(REMAT_TEST_DATA) + "/data/hf_configs/nemotron-3-nano-30b-a3b.json";
  return parse_hf_config(test::read_text(file), file);
}

TEST(StageWalk, LayersPlacedAlikeEndBeforeTheLastUniformChunk) {
  Plan uniform3;
  uniform3.megatron = MegatronRecompute{MegatronGranularity::full, MegatronMethod::uniform, 3, 0};
  EXPECT_EQ(layers_placed_alike(uniform3, 7), 6);  // chunks 0-2, 3-5, then 6 alone
  EXPECT_EQ(layers_placed_alike(uniform3, 6), 3);  // the chunk 3-5 is whole only at 6 layers
  EXPECT_EQ(layers_placed_alike(uniform3, 1), 0);
  Plan block2;
  block2.megatron = MegatronRecompute{MegatronGranularity::full, MegatronMethod::block, 2, 0};
  EXPECT_EQ(layers_placed_alike(block2, 7), 7);
  Plan r3;
  r3.strategy = Strategy::full, r3.recompute_layers = {3}, r3.offload_layers = {2};
  EXPECT_EQ(layers_placed_alike(r3, 9), 9);
}

TEST(StageWalk, ParamTableRangesEqualTheSumsOverTheirLayers) {
  const ModelSpec m = hybrid();
  for (int64_t ep : {1, 8}) {
    const TrainingSpec t = test::layout(2, 4, 8, ep, 1, 4096);
    const LayerParamTable table(m, t);
    ASSERT_EQ(table.layers(), m.num_hidden_layers);
    for (int64_t a = 0; a < m.num_hidden_layers; a += 5)
      for (int64_t b = a + 1; b <= m.num_hidden_layers; b += 3) {
        const LayerRangeParams tabled = table.range({a, b}), summed = layer_range_params(m, t, {a, b});
        EXPECT_EQ(tabled.params.dense, summed.params.dense) << a << ".." << b;
        EXPECT_EQ(tabled.params.expert, summed.params.expert);
        EXPECT_EQ(tabled.layers_total, summed.layers_total);
        EXPECT_EQ(tabled.largest_layer, summed.largest_layer);
        EXPECT_EQ(tabled.adapter_params, summed.adapter_params);
      }
  }
}

// One walk per first layer, extended as the split search extends it, prices each stage as
// stage_estimate does, under plans whose choices depend on the place in the stage and its length.
TEST(StageWalk, OneWalkPerFirstLayerPricesEveryStageSizeAsStageEstimate) {
  const ModelSpec m = hybrid();
  const HardwareSpec hw = apply_framework(test::hardware("h200"), kMegatronLocalFramework);
  TrainingSpec t = apply_framework(test::layout(1, 4, 1, 1, 1, 4096), kMegatronLocalFramework);
  t = costed_training(t, Strategy::full);
  const RankShape r = rank_shape(t);
  const LayerShapes shapes = build_shapes(m, r);
  std::vector<Plan> plans(4);
  plans[0].strategy = Strategy::full, plans[0].recompute_layers = {2, 3, 4, 5};
  plans[1].megatron = MegatronRecompute{MegatronGranularity::full, MegatronMethod::uniform, 3, 0};
  plans[2].megatron = MegatronRecompute{MegatronGranularity::full, MegatronMethod::block, 4, 0};
  plans[3].strategy = Strategy::eagle, plans[3].recompute_layers = {1}, plans[3].offload_layers = {2};
  int compared = 0;
  for (const Plan& plan : plans)
    for (size_t stage : {size_t(0), size_t(3)})
      for (int64_t a : {int64_t(1), int64_t(20)}) {
        LayerCostCache cache;
        const int64_t longest = 12;
        StageLayerWalk row(m, hw, t, plan, shapes, stage, a, longest, cache);
        for (int64_t k = 1; k <= longest; ++k) {
          while (row.added() < layers_placed_alike(plan, k)) row.add_next();
          StageLayerWalk walk = row;
          walk.set_length(k);
          while (walk.added() < k) walk.add_next();
          const StageEstimate got = walk.finish(stage_base(m, hw, t, r, int64_t(stage), {a, a + k}));
          const StageEstimate want = stage_estimate(m, hw, t, plan, shapes, r, stage, {a, a + k}, cache);
          EXPECT_EQ(got.memory_bytes.peak, want.memory_bytes.peak) << a << "+" << k;
          EXPECT_EQ(got.memory_bytes.activations, want.memory_bytes.activations);
          EXPECT_EQ(got.microbatch_s, want.microbatch_s);
          EXPECT_EQ(got.flops.recompute, want.flops.recompute);
          EXPECT_EQ(got.recompute_layers, want.recompute_layers);
          EXPECT_EQ(got.offload_layers, want.offload_layers);
          ++compared;
        }
      }
  EXPECT_EQ(compared, 4 * 2 * 2 * 12);
}

}  // namespace
}  // namespace remat
