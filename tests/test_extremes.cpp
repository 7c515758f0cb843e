// Dims and counts at their physical extremes (vocabulary 1e6, sequence 1e7,
// 1e5 GPUs, 1e4 experts, 1e3 layers): no overflow (the sanitizer build runs
// these under UBSan), finite results, monotone where they must be, and a
// clear error one step past each bound.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "remat/cost/estimate.hpp"
#include "remat/cost/modules.hpp"
#include "remat/report/json_report.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// A dense model as large as any dim gets: 1e6 vocabulary, 1e3 layers.
ModelSpec huge_dense() {
  ModelSpec m;
  m.name = "huge-dense";
  m.hidden_size = 65536, m.intermediate_size = 262144;
  m.num_attention_heads = 512, m.num_key_value_heads = 64, m.head_dim = 128;
  m.vocab_size = 1'000'000, m.num_hidden_layers = 1000;
  return m;
}

// MoE with MLA: 1e4 experts.
ModelSpec huge_moe() {
  ModelSpec m = huge_dense();
  m.name = "huge-moe";
  m.n_routed_experts = 10'000, m.num_experts_per_tok = 16, m.moe_intermediate_size = 4096;
  m.n_shared_experts = 2, m.first_k_dense_replace = 3;
  m.head_dim = 0, m.num_key_value_heads = 512;
  m.q_lora_rank = 3072, m.kv_lora_rank = 1024, m.qk_rope_head_dim = 64, m.qk_nope_head_dim = 128, m.v_head_dim = 128;
  return m;
}

// 1e5 GPUs: tp 8, pp 100, dp 125.
TrainingSpec huge_layout(int64_t seq, int64_t ep = 1) {
  TrainingSpec t;
  t.tp = 8, t.pp = 100, t.dp = 125, t.ep = ep, t.mbs = 1, t.seq = seq;
  return t;
}

Estimate run(const ModelSpec& m, TrainingSpec t, Strategy s) {
  EXPECT_TRUE(validate_model(m, "x").empty()) << validate_model(m, "x").front().line();
  const auto problems = validate_training(t, m);
  EXPECT_TRUE(problems.empty()) << (problems.empty() ? "" : problems.front().line());
  t = with_defaults(t);
  Plan p;
  p.strategy = s;
  EXPECT_TRUE(validate_plan(p, t, m).empty());
  return estimate(m, test::hardware("h200"), t, p, default_budget_bytes(test::hardware("h200")));
}

void expect_finite(const Estimate& e, const std::string& what) {
  EXPECT_TRUE(std::isfinite(e.peak_memory_bytes) && e.peak_memory_bytes > 0) << what;
  EXPECT_LT(e.peak_memory_bytes, std::ldexp(1.0, 62)) << what;
  for (double x : {e.iteration.time_s, e.iteration.mfu, e.iteration.tokens_per_s, e.iteration.model_flops,
                   e.iteration.hardware_flops})
    EXPECT_TRUE(std::isfinite(x) && x > 0) << what << " " << x;
  for (const auto& st : e.stages)
    for (double b : {st.memory_bytes.weights, st.memory_bytes.activations, st.memory_bytes.peak})
      EXPECT_TRUE(std::isfinite(b) && b >= 0 && b < std::ldexp(1.0, 62)) << what;
}

TEST(Extremes, HundredThousandGpusTenMillionTokensFinite) {
  for (Strategy s :
       {Strategy::none, Strategy::full, Strategy::selective, Strategy::standard, Strategy::eagle, Strategy::offload}) {
    expect_finite(run(huge_dense(), huge_layout(10'000'000), s), std::string("dense ") + to_string(s));
    expect_finite(run(huge_moe(), huge_layout(10'000'000, 1000), s), std::string("moe ") + to_string(s));
  }
}

TEST(Extremes, ReportByteCountsStayIntegers) {
  const ModelSpec m = huge_moe();
  TrainingSpec t = with_defaults(huge_layout(10'000'000, 1000));
  const Estimate e = run(m, t, Strategy::none);
  const Json j = estimate_report({}, m, test::hardware("h200"), t, Plan{}, e);
  for (const auto& st : j["stages"])
    for (const auto& [key, v] : st["memory_bytes"].items()) {
      ASSERT_TRUE(v.is_number_integer()) << key;
      EXPECT_GE(v.get<int64_t>(), 0) << key;
    }
  EXPECT_EQ(t.gpus(), 100'000);
}

TEST(Extremes, MemoryAndTimeMonotoneInSeqUpToTenMillion) {
  for (const ModelSpec& m : {huge_dense(), huge_moe()}) {
    double last_mem = 0, last_time = 0;
    for (int64_t seq = 1; seq <= 10'000'000; seq *= 10) {
      const Estimate e = run(m, huge_layout(seq, m.is_moe() ? 1000 : 1), Strategy::eagle);
      expect_finite(e, m.name + " seq " + std::to_string(seq));
      EXPECT_GE(e.peak_memory_bytes, last_mem) << m.name << " seq " << seq;
      EXPECT_GE(e.iteration.time_s, last_time) << m.name << " seq " << seq;
      last_mem = e.peak_memory_bytes, last_time = e.iteration.time_s;
    }
  }
}

TEST(Extremes, MemoryMonotoneInVocabularyLayersAndExperts) {
  double last = 0;
  for (int64_t vocab : {1000, 32000, 128256, 1'000'000}) {
    ModelSpec m = huge_dense();
    m.vocab_size = vocab;
    const double peak = run(m, huge_layout(8192), Strategy::full).peak_memory_bytes;
    EXPECT_GE(peak, last) << "vocab " << vocab;
    last = peak;
  }
  last = 0;
  for (int64_t layers : {100, 200, 500, 1000}) {
    ModelSpec m = huge_dense();
    m.num_hidden_layers = layers;
    const double peak = run(m, huge_layout(8192), Strategy::full).peak_memory_bytes;
    EXPECT_GE(peak, last) << "layers " << layers;
    last = peak;
  }
  last = 0;
  for (int64_t experts : {16, 160, 1000, 10'000}) {
    ModelSpec m = huge_moe();
    m.n_routed_experts = experts;
    const double peak = run(m, huge_layout(8192, 8), Strategy::none).peak_memory_bytes;
    EXPECT_GE(peak, last) << "experts " << experts;
    last = peak;
  }
}

TEST(Extremes, ModulesFiniteAtTenMillionTokens) {
  for (const ModelSpec& m : {huge_dense(), huge_moe()}) {
    TrainingSpec t = with_defaults(huge_layout(10'000'000, m.is_moe() ? 1000 : 1));
    for (Formulas f : {Formulas::paper, Formulas::exact})
      for (const auto& row : module_rows(m, test::hardware("h200"), t, f)) {
        EXPECT_TRUE(std::isfinite(row.kept_bytes) && row.kept_bytes >= 0) << m.name << " " << row.block;
        EXPECT_TRUE(std::isfinite(row.total_flops()) && std::isfinite(row.fwd_s + row.bwd_s + row.recompute_s))
            << row.block;
      }
  }
}

std::string first(const std::vector<Problem>& p) { return p.empty() ? std::string("(accepted)") : p.front().line(); }

TEST(Extremes, ModelBoundsAcceptedAtTheLimitRejectedOnePast) {
  struct Case {
    const char* key;
    int64_t ModelSpec::*field;
    int64_t limit;
  };
  const Case cases[] = {{"hidden_size", &ModelSpec::hidden_size, limits::kHidden},
                        {"intermediate_size", &ModelSpec::intermediate_size, limits::kFfn},
                        {"vocab_size", &ModelSpec::vocab_size, limits::kVocab},
                        {"num_hidden_layers", &ModelSpec::num_hidden_layers, limits::kLayers},
                        {"head_dim", &ModelSpec::head_dim, limits::kHeadDim},
                        {"moe_layer_freq", &ModelSpec::moe_layer_freq, limits::kLayers},
                        {"paper_num_hidden_layers", &ModelSpec::paper_num_hidden_layers, limits::kLayers}};
  for (const auto& c : cases) {
    ModelSpec m = test::model("llama3-8b");
    m.*c.field = c.limit;
    EXPECT_EQ(first(validate_model(m, "m.yaml")), "(accepted)") << c.key;
    for (int64_t bad : {c.limit + 1, kMax}) {
      m.*c.field = bad;
      EXPECT_EQ(first(validate_model(m, "m.yaml")), std::string("m.yaml: ") + c.key + ": must be at most " +
                                                        std::to_string(c.limit) + " (got " + std::to_string(bad) + ")");
    }
  }
}

TEST(Extremes, LayoutProductsCannotOverflow) {
  const ModelSpec m = test::model("deepseek-v3");
  TrainingSpec t;
  t.tp = t.pp = t.dp = limits::kParallel;  // each within bounds, product 1e21
  EXPECT_EQ(first(validate_training(t, m)),
            "command line: --dp: makes tp * pp * dp more than 10000000 GPUs (got 10000000)");
  t = TrainingSpec{};
  t.mbs = limits::kMbs, t.seq = limits::kSeq;
  EXPECT_EQ(first(validate_training(t, m)),
            "command line: --seq: makes mbs * seq more than 10000000000 tokens per microbatch (got 100000000)");
  for (int64_t TrainingSpec::*field : {&TrainingSpec::tp, &TrainingSpec::pp, &TrainingSpec::dp, &TrainingSpec::ep,
                                       &TrainingSpec::mbs, &TrainingSpec::seq, &TrainingSpec::gbs}) {
    t = TrainingSpec{};
    t.*field = kMax;
    EXPECT_NE(first(validate_training(t, m)).find("must be at most"), std::string::npos);
    t.*field = std::numeric_limits<int64_t>::min();
    EXPECT_NE(first(validate_training(t, m)).find("must be at least"), std::string::npos);
  }
  t = TrainingSpec{};
  t.pp = 4, t.layers_per_stage = {kMax, kMax, kMax, 3};  // the sum would overflow
  EXPECT_EQ(first(validate_training(t, m)),
            "command line: --layers-per-stage: every stage needs between 1 and 61 layers "
            "(got 9223372036854775807,9223372036854775807,9223372036854775807,3)");
  t.layers_per_stage = {};
  t = with_defaults(t);
  Plan p;
  p.recompute_layers = {kMax}, p.offload_layers = {kMax};  // r + o would overflow
  EXPECT_EQ(first(validate_plan(p, t, m)),
            "command line: --recompute-layers: values must be at most 100000 (got 9223372036854775807)");
}

TEST(Extremes, DefaultGlobalBatchIsChecked) {
  TrainingSpec t;
  t.mbs = limits::kMbs, t.dp = 1'000'000, t.pp = 10;  // 4 * pp * mbs * dp = 4e12 > 1e12
  EXPECT_THROW(with_defaults(t), InputError);
  t.gbs = 1000;
  EXPECT_EQ(with_defaults(t).gbs, 1000);
}

TEST(Extremes, HardwareRatesBounded) {
  HardwareSpec h = test::hardware("h100-sxm");
  h.peak_bf16_flops = 1e3;  // 1e-9 TFLOP/s
  EXPECT_EQ(first(validate_hardware(h, "h.yaml")), "h.yaml: peak_bf16_tflops: must be at least 0.001 (got 1e-09)");
  h = test::hardware("h100-sxm");
  h.hbm_bytes_per_s = 1e300;
  EXPECT_EQ(first(validate_hardware(h, "h.yaml")), "h.yaml: hbm_GBps: must be at most 10000000 (got 1e+291)");
  h = test::hardware("h100-sxm");
  h.efficiency.memory_bound = 1e-300;
  EXPECT_EQ(first(validate_hardware(h, "h.yaml")),
            "h.yaml: efficiency.memory_bound: must be a fraction in [0.001, 1] (got 1e-300)");
}

}  // namespace
}  // namespace remat
