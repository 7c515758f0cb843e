// Blind set 19 (examples/hf/unseen19/make_cases.py, seed 19): 44 steps on 22 configs no step had used,
// drawn and committed before they ran (steps-unseen19-h200.jsonl, traces in peak-traces-h200/unseen19/).
// Two of Phi-2's non-reentrant LoRA steps with dropout stopped in torch's replay ("dropout returned
// NULL without setting an exception", set 17's Phi-2 step too); one of them ran none. The EAGLE
// Mixtral draft (model_type mixtral, architectures LlamaForCausalLM) was first built as Llama, by the
// harness's reading of set 17 for flat files; that reading is now kept to wrapper model types (Gemma 3),
// so the draft is built as AutoModelForCausalLM builds it and remat reads it (Mixtral, 8 experts by
// default, with a note), and its two steps were run again (the last two lines).
#include <gtest/gtest.h>

#include <string>

#include "hf_measured.hpp"
#include "remat/cost/params.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

TEST(HfUnseen19, BlindSteps) { test::expect_steps_within("steps-unseen19-h200.jsonl", "h200", 1.0, 1.7, 43); }

// The EAGLE Mixtral draft as AutoModelForCausalLM builds it and remat reads it: MixtralConfig's 8
// experts, top 2, for the keys the file leaves out; 1,738,584,064 parameters in the harness's log.
TEST(HfUnseen19, EagleMixtralDraftIsMixtralByDefault) {
  const ModelSpec m = test::model(std::string(REMAT_TEST_DATA) + "/data/hf_configs/eagle-mixtral-8x7b-draft.json");
  EXPECT_EQ(m.n_routed_experts, 8);
  EXPECT_EQ(m.num_experts_per_tok, 2);
  EXPECT_DOUBLE_EQ(model_params(m, 1), 1738584064.0);
}

}  // namespace
}  // namespace remat
