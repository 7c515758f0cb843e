#pragma once
// remat validate --hf-run: training steps of Hugging Face Transformers (+ PEFT)
// measured by examples/hf/hf_step.py, each predicted under the `hf` profile:
// step peak (torch.cuda.max_memory_allocated), bytes allocated before the step,
// and a checkpointed step's time over the same step without checkpointing.
#include <string>
#include <vector>

#include "remat/cost/estimate.hpp"
#include "remat/report/json_report.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/plan.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

// One measured step (one JSON line of hf_step.py), as the harness wrote it.
struct HfStep {
  std::string case_name, config, mode, checkpointing, attention, precision, objective, gpu;
  int64_t num_layers = 0, seq = 0, mbs = 0, lora_rank = 0, grpo_group = 0, step = 0;
  int64_t checkpoint_layers = -1;  // checkpointing the first R decoder layers only; -1: every layer
  std::vector<std::string> lora_targets;
  double lora_dropout = 0;
  std::string lora_adapter_dtype = "float32";  // PEFT's default (autocast_adapter_dtype)
  double peak_bytes = 0, before_bytes = 0, step_time_s = 0;
  // the model's parameters as the run counted them (model.parameters(); those requiring a gradient);
  // 0: not recorded
  double params = 0, trainable_params = 0;
  bool oom = false;
  // a step that ran out of memory: PyTorch's allocated bytes at the failure plus the request that
  // failed, read from its message (0: not stated), the least the step's peak would have been
  double oom_needed_bytes = 0;
};

// The training layout and plan that reproduce the step under the `hf` profile.
struct HfSetup {
  TrainingSpec training;
  Plan plan;
};
// Throws InputError naming `file` and the case when the step names a setting
// the profile does not run.
HfSetup hf_setup(const HfStep& step, const ModelSpec& model, const std::string& file);

struct HfComparison {
  HfStep measured;  // the last step of the case (AdamW's state allocated)
  HfSetup setup;
  ModelSpec model;
  Estimate estimate;
  double predicted_before_bytes = 0;  // weights and optimizer state, gradients freed
  bool params_recorded() const { return measured.params > 0; }
  bool params_equal() const {
    return predicted_params == measured.params && predicted_trainable_params == measured.trainable_params;
  }
  std::string source_file;    // the run log it came from: a time ratio pairs steps of one log
  std::string hardware_name;  // the hardware file it was priced on
  // remat's count of what the run builds: the language model, the encoders held beside it and PEFT's
  // adapters (those it trains and those it holds untrained); of them, those requiring a gradient
  double predicted_params = 0, predicted_trainable_params = 0;
  double peak_error_pct() const { return 100 * (estimate.peak_memory_bytes / measured.peak_bytes - 1); }
  double before_error_pct() const { return 100 * (predicted_before_bytes / measured.before_bytes - 1); }
};
// `model` must already hold the case's layer count.
HfComparison compare_hf(const HfStep& step, const ModelSpec& model, const HardwareSpec& hw, const std::string& file);

// A checkpointed case's time over the same case without checkpointing, both from one log (one
// machine, one session): a ratio across two lent machines measures their hosts, not checkpointing.
struct HfTimeRatio {
  size_t checkpointed = 0, baseline = 0;  // indices into the comparisons
  double predicted = 0, measured = 0;
  // each step's measured time over remat's GPU time for it: from kHostPacedStretch on, the GPU waited
  // on the host (Python, autograd, the checkpoint's hooks), which remat does not price. Either step
  // makes the ratio the host's: a host-paced baseline shrinks it as a host-paced step stretches it.
  double stretch = 0, baseline_stretch = 0;
  double error_pct() const { return 100 * (predicted / measured - 1); }
  bool host_paced() const;
};
inline constexpr double kHostPacedStretch = 1.25;
std::vector<HfTimeRatio> hf_time_ratios(const std::vector<HfComparison>& cases);

// `out_of_memory`: steps that ran out of GPU memory (parse_hf_out_of_memory), each priced against the
// GPU's memory (its measured.peak_bytes).
std::string hf_table(const std::vector<HfComparison>& cases, const std::vector<HfComparison>& out_of_memory,
                     const std::string& hardware_name);
Json hf_report(const ReportMeta& meta, const std::vector<HfComparison>& cases,
               const std::vector<HfComparison>& out_of_memory, const std::string& hardware_name);
// Predicted against measured: step peak, bytes before the step, checkpointed time over none;
// full-model and LoRA steps in two colours.
std::string hf_svg(const std::vector<HfComparison>& cases, const std::string& hardware_name);

}  // namespace remat
