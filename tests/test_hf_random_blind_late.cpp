// Random blind seeds 14-17 (examples/hf/random_blind/make_cases.py; cases and predictions committed
// before the steps ran on the lent H200): 14 --wide, 15 --pairs, 16 --wide --pairs, 17 --wide.
// 119 of 120 steps ran (MedGemma-27B's twin without checkpointing ran out of memory, 1.6% above what
// remat priced). As first compared 115 were within 3%; four missed:
// - MiniCPM-V 4.6 (GRPO 4 x 12k, LoRA): -16.17%. Its class's forward takes no logits_to_keep, so the
//   GRPO logits and TRL's per-row log-softmax cover every position, not the completion's 3/4
//   (probes/logits_to_keep.py: the only one of the 323 built classes). Now +0.24%.
// - Phi-3-mini (full, no checkpointing, mixed GRPO 2 x 6k): +4.27%. Under autocast each GEMM that
//   reads a norm's fp32 output saves its own bf16 cast of it; Phi-3's fused qkv_proj and gate_up_proj
//   make one each, where remat had three and two. Now +0.37% (Phi-4's EAGLE-3 draft's mixed full
//   steps +1.53% -> +0.37%, +1.31% -> +0.30%; Falcon-40B's, whose query_key_value is fused too,
//   +0.66% -> -1.49%).
// Seeds 18 (--wide --pairs) and 19 (--wide), drawn and priced after those fixes: 60 steps, all ran; 59
// within 1.43% as first compared. DeepSeek-V3's EAGLE-3 draft (one layer, MLP adapters, GRPO 4 x 4k
// under eager, no checkpointing) was -52.14%: its attention runs before the first adapter, records no
// graph and saves nothing, and the step peaks inside its forward, at the softmax: the bf16 masked
// scores, softmax(dtype=float32)'s fp32 copy of them and its fp32 output, 10 bytes a score. Now -0.45%;
// no earlier step moved.
// - Mistral-7B (DPO, LoRA r128 on q, v, 1k tokens, a 1.3 GiB step) +6.75% and DeepSeek-V3's EAGLE-3
//   draft (GRPO, all-linear with dropout) +3.30%, both non-reentrant mixed steps under eager, peak at
//   their replay's end: remat had autocast's copies of all the layer's weights alive through the
//   attention's backward, whose fp32 score gradients then set the peak. The backward frees the MLP's
//   copies with the MLP's other saved tensors first (full_layer). Now +1.25% and -0.69%; of the 1897
//   steps 31 moved, 21 closer (Allam-7B +2.01% -> -0.05%, EXAONE-4.0-32B +1.55% -> -0.03%), the
//   furthest Llama-3.1-405B's +0.43% -> -1.12%.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "hf_measured.hpp"
#include "remat/cost/exact_blocks.hpp"
#include "remat/spec/framework.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

// Each set's steps within its bounds as measured: {file, bytes before the step %, peak %, steps}. Seeds
// 20-23 (20 and 22 --wide --pairs, 23 --wide) were drawn and priced after every fix above: all 120
// within 1.70% as first compared (mean 0.33%), the bytes before the step within 0.36%.
// Seeds 24 (--wide --pairs) and 25 (--wide), thirty-fourth session: 60 steps, all ran; as first
// compared 59 within 2.77%, Granite-3.1-1B-A400M's non-reentrant full GRPO at 4 x 3000 -4.49%: the
// routing weights' product (bf16 weights) holds three routed-rows x hidden gradients with every saved
// tensor of the experts alive; remat had placed the experts' working set at the gate_up GEMM's
// backward. Now -0.13% (OLMoE's mixed LoRA step -1.73% -> -0.14%). Their traces (peak-traces-h200/
// random-blind24, -25) also showed three terms remat had wrong, each fixed (of 2077 steps):
// - PEFT's dropout on an input that needs no gradient records no graph: the first adapted block's
//   adapters on its frozen input keep no bool mask (Llama-3.2-3B's q/k/v/o step +2.77%; 98 of 118
//   moved steps closer);
// - TRL's per-row log-probabilities on bf16 logits peak at the forward's end (logits and the rows'
//   outputs, 4 bytes a logit); the head input's gradient comes in backward beside the stacked rows'
//   gradient alone (175 of 204 moved steps closer);
// - under autocast a non-reentrant checkpoint's forward caches every trained weight's bf16 copy until
//   the loss leaves autocast, as a reentrant one does (SmolLM-1.7B's mixed GRPO -2.74% -> +0.12%; the
//   8 steps that moved all closer).
// And Gemma 4's shared_kv_states (the last layer of each attention kind keeps its keys and values in
// a dict every checkpointed layer holds as an argument): Gemma-4-31B's reentrant DPO -3.37% -> -0.16%.
// Seeds 26 (--wide --pairs) and 27 (--wide), drawn after those fixes: all 60 within 0.90% as first
// compared (mean 0.21%); 28 (--wide --pairs) and 29 (--wide), after the eager softmax's and autocast's
// time terms too: all 60 within 1.72% (mean 0.18%); 30 (--wide --pairs) and 31 (--wide), after the SFT
// head's too: 58 ran (transformers itself failed on MiniCPM-V 4.6's twin without checkpointing, a DFlash
// draft of DeepSeek-V2-Lite under eager, and StarCoder2-7B's third step, in torch's dropout; the last
// is compared on its second), all within 1.59% (mean 0.19%). Seeds 32 (--wide --pairs) and 33 (--wide),
// thirty-fifth session: 60 steps, all ran; as first compared 59 within 1.52%, Qwen3.5-397B cut to 5
// (full mixed DPO 2 x 3000, no checkpointing) -3.03%: under autocast the Gated DeltaNet rule's @ save
// bf16 casts, per chunk and of the state, where remat had the fp32 layout (test_hf_random_blind_32.cpp).
// Now -0.32%; of 2315 steps 10 moved, 9 closer. Seeds 34 (--wide --pairs) and 35 (--wide), after that
// fix: 60 steps, all ran (Phi-2's third step failed in torch's dropout; compared on its second); as
// first compared 58 within 2.14%, MiMo-V2-Flash cut to 2 (mixed LoRA 3 x 4096 under eager) +7.06%
// reentrant and -6.09% without checkpointing: the fp32 mask promotes its bf16 softmax under autocast in
// the full layers too (test_hf_random_blind_32.cpp). Now -0.38% and -0.13%; no other step moved.
// Seeds 36 (--wide --pairs) and 37 (--wide), drawn after the xIELU fix too: 60 steps, all ran, all
// within 1.16% as first compared (mean 0.14%). Seeds 38 (--wide --pairs) and 39 (--wide): 60 steps,
// all ran; as first compared 59 within 1.55%, Wizard-Vicuna-30B cut to one layer (mixed GRPO 4 x 6144,
// fp32 adapters with dropout on the MLP, no checkpointing) -7.58%: it peaks inside its layer's forward,
// which remat had not walked for a kept layer (test_hf_random_blind_32.cpp). Now -0.15%; of 2499 steps
// 7 moved, 3 closer, the other 4 (Nemotron-H's LoRA steps, over already) up by at most 0.09%. Seeds 40
// (--wide --pairs) and 41 (--wide), drawn after that: 60 steps, all ran, all within 1.52% as first
// compared (mean 0.21%). Seeds 42 (--wide --pairs) and 43 (--wide): 56 steps ran, all within 1.40% as
// first compared; the lent machine's time ran out before seed 43's last four, after Gemma-4-31B's
// step left 10 GiB allocated (transformers' own: its bytes before the step grew 0.4 GiB a step, -2.36%
// at the third). Seeds 44 (--wide --pairs) and 45 (--wide), thirty-sixth session: 60 steps, all ran; as
// first compared 59 within 1.60%, Qwen3.6-35B-A3B cut to its first layer (LoRA on the experts, GRPO
// 4 x 4096, no checkpointing) +2.92%: its routed outputs, saved for the routing weights' gradient
// alone, are not saved where the router reads the frozen input (test_hf_random_blind_44.cpp). Now
// -0.02%; of 2615 steps 5 more moved, all closer. Seeds 46 (--wide --pairs) and 47 (--wide), drawn
// after that: 60 steps, all ran, all within 1.60% as first compared (mean 0.20%). Seeds 48 (--wide
// --pairs) and 49 (--wide): 60 steps, all ran; as first compared 57 within 1.60%, Falcon-40B cut to 5
// (all-linear LoRA GRPO 2 x 8192) -10.18% reentrant and -7.68% without checkpointing, EXAONE-4.0-1.2B
// (mixed SFT at 32k, no checkpointing) +3.13%: Falcon's new architecture copies keys and values to
// every query head, its down adapter's input gradient is summed from two parts, and a norm on a GEMM's
// output saves a bf16 cast under autocast (test_hf_random_blind_44.cpp). Now -0.45%, -0.01% and
// +0.20%; of 2795 steps 19 more moved, 17 closer (Qwen3's mixed full steps), two by under 0.1%. Seeds
// 50 (--wide --pairs) and 51 (--wide), drawn after that: 59 steps ran (transformers itself failed on
// MiniCPM-V 4.6 cut to linear-attention layers alone, in its cache's get_seq_length), all within 0.91%
// as first compared (mean 0.18%). Seeds 52 (--wide --pairs) and 53 (--wide): 59 steps ran, all within
// 1.85% as first compared (mean 0.21%); the sixtieth, Qwen3.5-122B-A10B's, ran out of memory with
// remat's price within 3% of the allocated bytes PyTorch said it needed (its reserve ran out). Seed 54
// (--wide --pairs), the device time's last 100 s: 22 steps ran (the deadline skipped 8); as first
// compared 20 within 0.64%, Llama-4-Scout cut to 2 (full eager SFT 2 x 4096) +11.86% without
// checkpointing and +8.33% non-reentrant: Llama 4's eager softmax runs in bf16
// (test_hf_random_blind_44.cpp). Now -0.00% and +0.29%; no other step moved.
struct SetBounds {
  const char* file;
  double before_pct, peak_pct;
  int steps;
};

TEST(HfRandomBlindLate, StepsOfSeeds14To64) {
  const SetBounds sets[] = {
      {"steps-random-blind14-h200.jsonl", 1.30, 1.55, 30}, {"steps-random-blind15-h200.jsonl", 0.60, 0.85, 30},
      {"steps-random-blind16-h200.jsonl", 1.00, 2.20, 29}, {"steps-random-blind17-h200.jsonl", 0.90, 2.70, 30},
      {"steps-random-blind18-h200.jsonl", 1.15, 1.45, 30}, {"steps-random-blind19-h200.jsonl", 0.60, 1.25, 30},
      {"steps-random-blind20-h200.jsonl", 0.35, 1.55, 30}, {"steps-random-blind21-h200.jsonl", 0.10, 1.25, 30},
      {"steps-random-blind22-h200.jsonl", 0.20, 1.75, 30}, {"steps-random-blind23-h200.jsonl", 0.40, 1.05, 30},
      {"steps-random-blind24-h200.jsonl", 0.30, 2.30, 30}, {"steps-random-blind25-h200.jsonl", 0.95, 1.15, 30},
      {"steps-random-blind26-h200.jsonl", 0.40, 0.60, 30}, {"steps-random-blind27-h200.jsonl", 0.50, 0.95, 30},
      {"steps-random-blind28-h200.jsonl", 0.40, 1.75, 30}, {"steps-random-blind29-h200.jsonl", 0.25, 0.70, 30},
      {"steps-random-blind30-h200.jsonl", 0.25, 1.50, 29}, {"steps-random-blind31-h200.jsonl", 0.25, 1.65, 29},
      {"steps-random-blind32-h200.jsonl", 0.35, 0.80, 30}, {"steps-random-blind33-h200.jsonl", 1.10, 1.55, 30},
      {"steps-random-blind34-h200.jsonl", 0.85, 2.20, 30}, {"steps-random-blind35-h200.jsonl", 0.40, 1.95, 30},
      {"steps-random-blind36-h200.jsonl", 0.50, 1.20, 30}, {"steps-random-blind37-h200.jsonl", 0.85, 0.65, 30},
      {"steps-random-blind38-h200.jsonl", 0.55, 1.60, 30}, {"steps-random-blind39-h200.jsonl", 0.95, 0.65, 30},
      {"steps-random-blind40-h200.jsonl", 0.30, 1.25, 30}, {"steps-random-blind41-h200.jsonl", 0.25, 1.55, 30},
      {"steps-random-blind42-h200.jsonl", 0.60, 1.45, 30}, {"steps-random-blind43-h200.jsonl", 2.40, 0.55, 26},
      {"steps-random-blind44-h200.jsonl", 1.20, 0.95, 30}, {"steps-random-blind45-h200.jsonl", 0.80, 1.65, 30},
      {"steps-random-blind46-h200.jsonl", 1.00, 0.95, 30}, {"steps-random-blind47-h200.jsonl", 0.30, 1.65, 30},
      {"steps-random-blind48-h200.jsonl", 0.20, 1.40, 30}, {"steps-random-blind49-h200.jsonl", 0.80, 0.60, 30},
      {"steps-random-blind50-h200.jsonl", 0.50, 0.95, 30}, {"steps-random-blind51-h200.jsonl", 0.70, 0.90, 29},
      {"steps-random-blind52-h200.jsonl", 1.25, 1.15, 30}, {"steps-random-blind53-h200.jsonl", 1.20, 1.90, 29},
      {"steps-random-blind54-h200.jsonl", 0.25, 0.70, 22}, {"steps-random-blind55-h200.jsonl", 0.20, 1.10, 30},
      {"steps-random-blind56-h200.jsonl", 0.35, 1.20, 30}, {"steps-random-blind57-h200.jsonl", 0.60, 1.25, 30},
      {"steps-random-blind58-h200.jsonl", 0.95, 0.90, 29}, {"steps-random-blind59-h200.jsonl", 0.90, 1.00, 30},
      {"steps-random-blind60-h200.jsonl", 0.30, 0.60, 30}, {"steps-random-blind61-h200.jsonl", 1.55, 1.90, 29},
      {"steps-random-blind62-h200.jsonl", 0.85, 2.45, 30}, {"steps-random-blind63-h200.jsonl", 0.85, 1.15, 30},
      {"steps-random-blind64-h200.jsonl", 0.20, 1.05, 30},
  };
  for (const SetBounds& set : sets)
    test::expect_steps_within(set.file, "h200", set.before_pct, set.peak_pct, set.steps);
}

// The drawn pairs' time ratios (seeds 15, 16 and the even seeds 18-64): 332 of 383 within 10%; each
// miss host-paced (the checkpointed step or its baseline took at least 1.25x remat's GPU time) but
// six: the EAGLE-3 draft's (1.400 measured, 1.225 predicted; under checkpointing PEFT makes the
// embeddings' output require a gradient, so its frozen attention runs a backward the step without
// checkpointing does not), Qwen2.5-7B's cut to 2 layers (a 32 ms step at 2k tokens, 1.15x remat's GPU
// time), Tongyi-DeepResearch-30B-A3B's cut to 5 (full DPO 2 x 2048, non-reentrant: 0.180 s for
// remat's 0.159, its baseline 0.140 for 0.146; the replayed MoE forward's host time) and the same
// EAGLE-3 draft's LoRA DPO step at 1024 tokens (64 ms, 1.15x remat's GPU time), an EAGLE draft of
// Llama-3-70B (one layer, reentrant LoRA on the MLP, 2 x 3000 tokens: 0.155 s for remat's 0.136, its
// baseline 0.091 for 0.092) and Llama-2-7B cut to one layer (a 34 ms reentrant mixed DPO step, 1.13x).
TEST(HfRandomBlindLate, DrawnPairsRatios) {
  int pairs = 0, within = 0;
  for (const char* file :
       {"steps-random-blind15-h200.jsonl", "steps-random-blind16-h200.jsonl", "steps-random-blind18-h200.jsonl",
        "steps-random-blind20-h200.jsonl", "steps-random-blind22-h200.jsonl", "steps-random-blind24-h200.jsonl",
        "steps-random-blind26-h200.jsonl", "steps-random-blind28-h200.jsonl", "steps-random-blind30-h200.jsonl",
        "steps-random-blind32-h200.jsonl", "steps-random-blind34-h200.jsonl", "steps-random-blind36-h200.jsonl",
        "steps-random-blind38-h200.jsonl", "steps-random-blind40-h200.jsonl", "steps-random-blind42-h200.jsonl",
        "steps-random-blind44-h200.jsonl", "steps-random-blind46-h200.jsonl", "steps-random-blind48-h200.jsonl",
        "steps-random-blind50-h200.jsonl", "steps-random-blind52-h200.jsonl", "steps-random-blind54-h200.jsonl",
        "steps-random-blind56-h200.jsonl", "steps-random-blind58-h200.jsonl", "steps-random-blind60-h200.jsonl",
        "steps-random-blind62-h200.jsonl", "steps-random-blind64-h200.jsonl"}) {
    const std::vector<HfComparison> steps = test::measured_hf_steps(file, "h200");
    for (const HfTimeRatio& r : hf_time_ratios(steps)) {
      ++pairs;
      const std::string& name = steps[r.checkpointed].measured.case_name;
      if (std::abs(r.error_pct()) <= 10)
        ++within;
      else if (name == "rb18-16-deepseek-v3-671b-eagle3-draft-sp")
        EXPECT_NEAR(r.error_pct(), -12.5, 0.1);
      else if (name == "rb30-02-qwen2.5-7b")  // a 32 ms step: 2 layers, 2k tokens, LoRA (1.15x remat's GPU time)
        EXPECT_NEAR(r.error_pct(), -11.5, 0.1);
      else if (name == "rb52-02-tongyi-deepresearch-30b-a3b")  // 0.18 s: MoE cut to 5, 2 x 2k (1.13x remat's)
        EXPECT_NEAR(r.error_pct(), -15.4, 0.1);
      else if (name == "rb54-08-deepseek-v3-671b-eagle3-draft-sp")  // a 64 ms step at 1k tokens (1.15x)
        EXPECT_NEAR(r.error_pct(), -10.2, 0.1);
      else if (name == "rb60-16-eagle-llama3-instruct-70b-draft")  // 1 layer, 2 x 3000 tokens (1.14x)
        EXPECT_NEAR(r.error_pct(), -13.5, 0.1);
      else if (name == "rb60-28-llama-2-7b-chat-hf")  // a 34 ms step: 1 layer, 2k tokens (1.13x)
        EXPECT_NEAR(r.error_pct(), -10.5, 0.1);
      else
        EXPECT_TRUE(r.host_paced()) << name;
    }
  }
  EXPECT_EQ(pairs, 383);
  EXPECT_EQ(within, 332);
}

// transformers' eager attention at the softmax, forward: 4 bytes a score beside the saved 4 + 2 (the
// bf16 scores and softmax(dtype=float32)'s fp32 copy, before the bf16 probabilities exist). Llama 3.2
// 1B at 4k: 32 heads x 4096^2 scores.
TEST(HfRandomBlindLate, EagerSoftmaxForwardWorkingSet) {
  TrainingSpec t;
  t.mbs = 1, t.gbs = 1, t.seq = 4096, t.precision = Precision::bf16, t.flash_attention = false;
  t = apply_framework(t, kHfFramework);
  const ModelSpec m = test::model(std::string(REMAT_TEST_DATA) + "/data/hf_configs/llama-3.2-1b-instruct.json");
  const LayerDef layer = build_layer(m, with_model(rank_shape(t), m), 0);
  double fwd_working = 0;
  for (const Block& b : layer.blocks)
    for (const OpDef& op : b.ops)
      if (op.kind == OpKind::attention) fwd_working = op.fwd_working_bytes;
  EXPECT_DOUBLE_EQ(fwd_working, 4.0 * 32 * 4096 * 4096);
}

// MiniCPMV4_6ForConditionalGeneration computes every position's logits whatever logits_to_keep says:
// GRPO's head prices them all. Qwen3.5's 248,094-token vocabulary at 12,288 tokens, 4 sequences:
// the bf16 logits and TRL's bf16 log-softmax of each row, 4 bytes a logit.
TEST(HfRandomBlindLate, MiniCpmV46LogitsForEveryPosition) {
  const std::string dir = std::string(REMAT_TEST_DATA) + "/../examples/hf/unseen13/realcfg/";
  EXPECT_TRUE(test::model(dir + "minicpm-v-4.6-llm-tpu.json").logits_every_position);
  EXPECT_FALSE(test::model(std::string(REMAT_TEST_DATA) + "/data/hf_configs/qwen3-4b.json").logits_every_position);
  for (const HfComparison& c : test::measured_hf_steps("steps-random-blind17-h200.jsonl", "h200"))
    if (c.measured.case_name == "rb17-27-minicpm-v-4.6-llm-tpu") {
      EXPECT_NEAR(c.peak_error_pct(), 0.10, 0.05);
      // the measured step: its peak above the bytes before it holds the 4 x 12,288 x 248,094 logits'
      // 4 bytes each (46.5 GB) and the layers' 21.8 GB
      EXPECT_GT(c.measured.peak_bytes - c.measured.before_bytes, 4.0 * 4 * 12288 * 248094);
    }
}

// Under autocast each GEMM reading a norm's fp32 output casts it to bf16 and saves the cast: Llama's
// q, k and v three, Phi-3's fused qkv_proj one; Llama's gate and up two, Phi-3's gate_up_proj one.
TEST(HfRandomBlindLate, AutocastCastsOfTheNormedInputPerReader) {
  TrainingSpec t;
  t.mbs = 1, t.gbs = 1, t.seq = 4096, t.precision = Precision::mixed;
  t = apply_framework(t, kHfFramework);
  const auto x_norm_casts = [&](const std::string& config, const std::string& block) {
    const ModelSpec m = test::model(std::string(REMAT_TEST_DATA) + "/data/hf_configs/" + config);
    const LayerDef layer = build_layer(m, with_model(rank_shape(t), m), 0);
    const double one_cast = 4096.0 * double(m.hidden_size) * 2;
    for (const Block& b : layer.blocks)
      if (b.name == block)
        for (const TensorDef& td : b.tensors)
          if (td.name == "x_norm") return td.bytes / one_cast;
    return 0.0;
  };
  EXPECT_DOUBLE_EQ(x_norm_casts("llama-3.2-1b-instruct.json", "gqa"), 3);
  EXPECT_DOUBLE_EQ(x_norm_casts("llama-3.2-1b-instruct.json", "mlp"), 2);
  EXPECT_DOUBLE_EQ(x_norm_casts("phi-3-mini-4k-instruct.json", "gqa"), 1);
  EXPECT_DOUBLE_EQ(x_norm_casts("phi-3-mini-4k-instruct.json", "mlp"), 1);
}

}  // namespace
}  // namespace remat
