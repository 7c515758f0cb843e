#pragma once
// `remat validate`: every case of a remat-bench measurements file predicted
// with the cost model (exact blocks, op_time on the same GPU's hardware file)
// beside what was measured, with per-case errors and MAPE.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "remat/cost/block.hpp"
#include "remat/spec/hardware_spec.hpp"
#include "remat/validate/backend_memory.hpp"
#include "remat/validate/measured.hpp"

namespace remat {

struct PhaseTimes {
  double forward_s = 0, backward_s = 0, recompute_s = 0;
  double total_s() const { return forward_s + backward_s + recompute_s; }
};

// The cost model's times for a backend case: the exact blocks the backend
// runs (moe: shared, permutation, routed, combine; gqa/mla: with Wo), less the
// ops it does not run (RoPE, the residual add); recompute as block_cost says
// (standard: full replay; eagle: Algorithms 2 and 4).
PhaseTimes predict_times(const BackendCase& c, const HardwareSpec& hw);
// The same, counting only the ops of one kind (gemm, attention, memory_bound).
PhaseTimes predict_times_of_kind(const BackendCase& c, const HardwareSpec& hw, OpKind kind);
// Whether a backend block is one of StreamBP's (lm_head, streambp_layer).
bool is_streambp_block(const std::string& block);
// The cost model's kept and peak bytes of a StreamBP case: the LM head's loss
// over C chunks (head_peak_bytes), or one layer's backward over D chunks
// (streambp_chunked_bytes), src/cost/streambp.cpp.
BackendMemory predict_streambp_memory(const BackendCase& c);

// The cost model's offload copy time, one direction: the block's saved bytes over the host link.
double predict_offload_copy_s(const BackendCase& c, const HardwareSpec& hw);

struct CaseValidation {
  std::string block, strategy;
  int64_t s = 0;
  int64_t chunks = 1;        // StreamBP blocks: C or D
  bool memory_only = false;  // StreamBP blocks: memory predicted, times not (no time model of the chunk loop)
  PhaseTimes measured, predicted;
  double measured_kept_bytes = 0, measured_peak_bytes = 0;
  BackendMemory memory;                            // predicted kept and peak, with buffer lists
  double measured_d2h_s = 0, predicted_d2h_s = 0;  // offload only
};

// Mean absolute percentage errors (fractions) over a set of cases.
struct ErrorSummary {
  int64_t cases = 0;
  double mape_forward = 0, mape_backward = 0, mape_recompute = 0, mape_total = 0;
  double mape_phases = 0;                         // forward, backward and (where measured > 0) recompute together
  double max_kept_error = 0, max_peak_error = 0;  // largest |relative error| of the bytes
  int64_t timed_cases = 0;                        // cases whose times are predicted (the MAPEs' count)
  double mape_offload_d2h = 0;
};

// Relative error (predicted - measured) / measured; 0 when both are 0.
double relative_error(double predicted, double measured);

std::vector<CaseValidation> validate_cases(const Measurements& m, const HardwareSpec& hw, const std::string& file);
// Over the cases whose s is in `lengths` (all when empty).
ErrorSummary summarize(const std::vector<CaseValidation>& cases, const std::set<int64_t>& lengths = {});

}  // namespace remat
