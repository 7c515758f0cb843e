#pragma once
// Reads a Megatron-LM training log (pretrain_gpt.py with --log-interval 1
// --log-memory-interval 1): the argument block, the per-rank memory reports
// and the per-iteration times.
#include <string>

#include "remat/validate/megatron_run.hpp"

namespace remat {

// Throws InputError naming the file, the line number and the line when the
// log is not a Megatron-LM log, is cut off inside the argument block, or a
// memory or iteration line is malformed.
MegatronLog parse_megatron_log(const std::string& text, const std::string& file);

}  // namespace remat
