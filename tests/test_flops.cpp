// FLOPs add up: per op, per stage and per iteration, for every built-in model.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "remat/cost/estimate.hpp"
#include "remat/cost/stage_model.hpp"
#include "remat/spec/framework.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

// Every stage's forward, backward and recompute FLOPs, summed over the
// pipeline and multiplied by the ranks that run the same work, are the
// iteration's hardware FLOPs; without recompute they equal the model FLOPs
// (Megatron's count), with recompute they exceed them by the replays.
void expect_flops_add_up(const ModelSpec& m, const TrainingSpec& t, Strategy s, const std::string& what) {
  Plan p;
  p.strategy = s;
  const Estimate e = estimate(m, test::hardware("h100-sxm"), t, p, 1e30);
  double stage_sum = 0, recompute = 0;
  for (const StageEstimate& st : e.stages) {
    EXPECT_GT(st.flops.forward, 0) << what << " stage " << st.index;
    EXPECT_GT(st.flops.backward, st.flops.forward) << what << " stage " << st.index;
    stage_sum += st.flops.forward + st.flops.backward + st.flops.recompute;
    recompute += st.flops.recompute;
  }
  const double ranks = double(t.dp * t.tp);
  EXPECT_NEAR(stage_sum * ranks, e.iteration.hardware_flops, 1e-9 * e.iteration.hardware_flops) << what;
  EXPECT_GE(e.iteration.hardware_flops, e.iteration.model_flops * (1 - 1e-9)) << what;
  if (s == Strategy::none)
    EXPECT_NEAR(e.iteration.hardware_flops, e.iteration.model_flops, 1e-6 * e.iteration.model_flops) << what;
  else
    EXPECT_NEAR(e.iteration.hardware_flops - e.iteration.model_flops, recompute * ranks, 1e-6 * e.iteration.model_flops)
        << what;
}

TEST(Flops, StageSumsAreTheIterationAndCoverTheModel) {
  for (const auto& spec : builtin_specs()) {
    if (std::string(spec.kind) != "models") continue;
    const ModelSpec m = test::model(spec.name);
    for (int64_t pp : {1, 2, 4}) {
      if (pp > m.num_hidden_layers) continue;
      const TrainingSpec t = test::layout(1, pp, 2, m.is_moe() ? 2 : 1, 1, 2048);
      for (Strategy s : {Strategy::none, Strategy::full, Strategy::selective, Strategy::eagle})
        expect_flops_add_up(m, t, s, spec.name + std::string(" pp ") + std::to_string(pp) + " " + to_string(s));
    }
  }
}

// Without tp, estimate and the planner count the model FLOPs on the rank's own layers
// (model_flops_per_microbatch with `built`), which holds only while expert parallelism changes no
// op's model FLOPs: the layers rebuilt unsharded must give the same sum, to the bit.
TEST(Flops, ExpertParallelLayersCountTheUnshardedModelFlops) {
  std::vector<std::string> models = {std::string(REMAT_TEST_DATA) + "/data/hf_configs/deepseek-v3.json"};
  for (const auto& spec : builtin_specs())
    if (std::string(spec.kind) == "models") models.push_back(spec.name);
  for (const std::string& name : models) {
    const ModelSpec m = test::model(name);
    for (const char* framework : {kGenericFramework, kMegatronLocalFramework, kHfFramework})
      for (int64_t ep : {1, 2, 8}) {
        if (ep > 1 && (!m.is_moe() || m.n_routed_experts % ep != 0)) continue;
        for (int64_t lora_rank : {0, 16}) {
          TrainingSpec t = apply_framework(test::layout(1, 1, 8, ep, 2, 4096), framework);
          t.framework = framework;
          t.lora_rank = lora_rank;
          const TrainingSpec costed = costed_training(t, Strategy::none);
          const LayerShapes built = build_shapes(m, rank_shape(costed));
          const int64_t layers = effective_layers(m, costed);
          EXPECT_EQ(model_flops_per_microbatch(m, costed, layers, built), model_flops_per_microbatch(m, costed, layers))
              << name << " " << framework << " ep " << ep << " lora " << lora_rank;
        }
      }
  }
}

// LLaMA3-8B at pp 2 (the case): every stage does a layer's share of
// the forward, 16 layers each; the stage with the head does more.
TEST(Flops, LayersCountOnEveryStage) {
  const ModelSpec m = test::model("llama3-8b");
  Plan p;
  const Estimate e = estimate(m, test::hardware("h100-sxm"), test::layout(1, 2, 1, 1, 1, 4096), p, 1e30);
  ASSERT_EQ(e.stages.size(), 2u);
  // one layer's forward per token: 2 x (4096 x 6144 qkv + 4096 x 4096 o + 3 x 4096 x 14336 mlp) matmul
  // FLOPs, plus attention's 2 x 2 x 4096 x seq/2 (causal) x 4096; 16 layers, 4096 tokens
  const double tokens = 4096, h = 4096;
  const double matmul = 2 * tokens * (h * 6144 + h * h + 3 * h * 14336);
  const double attention = 2 * 2 * tokens * (tokens / 2) * h;
  const double microbatches = double(e.microbatches);
  EXPECT_NEAR(e.stages[0].flops.forward / microbatches, 16 * (matmul + attention), 0.01 * 16 * (matmul + attention));
  EXPECT_GT(e.stages[1].flops.forward, e.stages[0].flops.forward + microbatches * 2 * tokens * h * 128256 * 0.99);
}

// Multi-token prediction (DeepSeek-V3's one module): its layer, eh_proj and LM head on the last
// stage, in the model's FLOPs and in the stage's; its layer's activations and its head's logits in
// the last stage's memory.
TEST(Flops, MultiTokenPredictionIsCosted) {
  ModelSpec m = test::model(std::string(REMAT_TEST_DATA) + "/data/hf_configs/deepseek-v3.json");
  ASSERT_EQ(m.num_nextn_predict_layers, 1);
  m.num_hidden_layers = 8;
  ModelSpec without = m;
  without.num_nextn_predict_layers = 0;
  const TrainingSpec t = test::layout(1, 2, 8, 8, 1, 4096);
  expect_flops_add_up(m, t, Strategy::none, "deepseek-v3 mtp");
  expect_flops_add_up(m, t, Strategy::full, "deepseek-v3 mtp full");
  Plan p;
  const HardwareSpec hw = test::hardware("h100-sxm");
  const Estimate with_mtp = estimate(m, hw, t, p, 1e30), plain = estimate(without, hw, t, p, 1e30);
  EXPECT_DOUBLE_EQ(with_mtp.stages[0].memory_bytes.activations, plain.stages[0].memory_bytes.activations);
  EXPECT_DOUBLE_EQ(with_mtp.stages[0].flops.forward, plain.stages[0].flops.forward);
  // the last stage holds one microbatch: one more MoE layer's saved tensors (as a decoder layer of
  // the stage saves them) and eh_proj's input, 4 x tokens x h x 2 bytes
  const double layer_kept = plain.stages[1].memory_bytes.activations / 4;  // 4 MoE layers, 1 in flight
  EXPECT_NEAR(with_mtp.stages[1].memory_bytes.activations - plain.stages[1].memory_bytes.activations,
              layer_kept + 4 * 4096.0 * 7168 * 2, 0.01 * layer_kept);
  EXPECT_GT(with_mtp.stages[1].memory_bytes.transient_peak, plain.stages[1].memory_bytes.transient_peak);
  EXPECT_GT(with_mtp.stages[1].time_s.forward, plain.stages[1].time_s.forward);
  EXPECT_GT(with_mtp.iteration.model_flops, plain.iteration.model_flops);
}

TEST(Flops, LoraHardwareFlopsCoverTheModel) {
  const ModelSpec m = test::model("qwen3-8b");
  TrainingSpec t = test::layout(1, 1, 1, 1, 1, 2048);
  t.lora_rank = 16;
  expect_flops_add_up(m, t, Strategy::none, "qwen3-8b lora none");
  expect_flops_add_up(m, t, Strategy::full, "qwen3-8b lora full");
}

// Every object holding both counts, at any depth of a JSON value.
void collect_flops_pairs(const nlohmann::json& j, std::vector<std::pair<double, double>>& out) {
  if (j.is_object() && j.contains("hardware_flops") && j.contains("model_flops") && j["model_flops"].is_number())
    out.emplace_back(j["hardware_flops"].get<double>(), j["model_flops"].get<double>());
  if (j.is_structured())
    for (const auto& child : j) collect_flops_pairs(child, out);
}

// Every committed JSON report: hardware FLOPs >= model FLOPs wherever both appear.
TEST(Flops, CommittedReportsHardwareCoversModel) {
  const std::filesystem::path root = std::filesystem::path(REMAT_TEST_DATA).parent_path();
  int checked = 0;
  for (const char* dir : {"reports", "examples"})
    for (const auto& f : std::filesystem::recursive_directory_iterator(root / dir)) {
      if (f.path().extension() != ".json") continue;
      const auto j = nlohmann::json::parse(test::read_text(f.path().string()), nullptr, false);
      std::vector<std::pair<double, double>> pairs;
      if (!j.is_discarded()) collect_flops_pairs(j, pairs);
      for (const auto& [hardware, model] : pairs) {
        EXPECT_GE(hardware, model * (1 - 1e-9)) << f.path();
        ++checked;
      }
    }
  EXPECT_GE(checked, 3);  // the plan reports under reports/
}

}  // namespace
}  // namespace remat
