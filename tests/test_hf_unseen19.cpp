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
#include "test_helpers.hpp"

namespace remat {
namespace {

TEST(HfUnseen19, BlindSteps) { test::expect_steps_within("steps-unseen19-h200.jsonl", "h200", 1.0, 1.7, 43); }

}  // namespace
}  // namespace remat
