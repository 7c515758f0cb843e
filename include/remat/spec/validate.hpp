#pragma once
// Checks of specs after parsing: each returns every problem it finds.
#include <string>
#include <vector>

#include "remat/spec/hardware_spec.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/plan.hpp"
#include "remat/spec/problems.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

std::vector<Problem> validate_model(const ModelSpec& m, const std::string& file);
std::vector<Problem> validate_hardware(const HardwareSpec& h, const std::string& file);
// Checks the layout against the model (tp divides heads, pp <= layers, ...).
std::vector<Problem> validate_training(const TrainingSpec& t, const ModelSpec& m);
std::vector<Problem> validate_plan(const Plan& p, const TrainingSpec& t, const ModelSpec& m);

// Layers of the model after the training spec's override.
int64_t effective_layers(const ModelSpec& m, const TrainingSpec& t);
// [first, last) layer per stage.
std::vector<std::pair<int64_t, int64_t>> stage_layer_ranges(const ModelSpec& m, const TrainingSpec& t);
// Fills gbs when left 0 (4 * pp microbatches per data-parallel rank).
TrainingSpec with_defaults(TrainingSpec t);

}  // namespace remat
