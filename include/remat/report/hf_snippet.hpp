#pragma once
// A plan under the hf profile as the lines of a transformers + PEFT training script.
#include <string>
#include <vector>

#include "remat/cost/estimate.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

// The Python lines that run `estimate`'s plan: the model loaded in the plan's dtype and attention,
// gradient_checkpointing_enable with its replay (non-reentrant for early stop, reentrant for full
// replay), each decoder layer's own gradient_checkpointing flag where the plan checkpoints some layers
// only, PEFT's LoraConfig on the modules the targets name, and the batch as TrainingArguments takes it.
std::vector<std::string> transformers_snippet(const ModelSpec& m, const TrainingSpec& t, const Estimate& estimate);

}  // namespace remat
