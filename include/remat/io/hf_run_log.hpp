#pragma once
// Reads the JSON lines examples/hf/hf_step.py writes: one object per measured
// step (step >= 1), diagnostics (step 0) and out-of-memory records.
#include <string>
#include <vector>

#include "remat/validate/hf_run.hpp"

namespace remat {

// Every step >= 1 that ran (out-of-memory records are skipped). Throws
// InputError naming the file, the line and the key of a malformed record.
std::vector<HfStep> parse_hf_run(const std::string& text, const std::string& file);
// The training steps that ran out of GPU memory (oom_phase "step..."), each with the GPU's whole
// memory as its peak_bytes.
std::vector<HfStep> parse_hf_out_of_memory(const std::string& text, const std::string& file);
// The last step of each case, in the order the cases first appear.
std::vector<HfStep> last_steps(const std::vector<HfStep>& steps);
// The last step of each case of a log that ran to its end: a case whose step ran out of memory is
// left to parse_hf_out_of_memory (the steps before it held no optimizer state yet, or less).
std::vector<HfStep> completed_last_steps(const std::string& text, const std::string& file);

}  // namespace remat
