#pragma once
// GPU facts in SI units: FLOP/s, bytes, bytes/s.
#include <string>
#include <vector>

namespace remat {

struct EfficiencyPoint {
  double flops = 0;     // FLOPs of one GEMM (2mnk)
  double fraction = 0;  // achieved fraction of the bf16 peak at that size
};

// Flash attention's achieved fraction of the bf16 peak at one sequence length.
struct AttentionPoint {
  double seq = 0;  // keys each query row runs over (the sequence length, causal or not)
  double fwd = 0, bwd = 0;
};

struct Efficiency {
  std::vector<EfficiencyPoint> gemm_by_flops;  // ascending in flops
  double attention_fwd = 0.6;                  // used when attention_by_seq is empty
  double attention_bwd = 0.5;
  std::vector<AttentionPoint> attention_by_seq;  // optional, ascending in seq
  double memory_bound = 0.85;
  double host_link = 0.8;
  double nvlink = 0.8;
  double network = 0.8;
};

// What one framework reaches on this GPU beside remat-bench's kernels
// (remat calibrate --megatron-log): scales of the GEMM and memory-bound
// efficiencies, a fixed cost per layer and microbatch (kernel launches,
// Python) and the host time of an MoE layer, fitted to that framework's own runs.
struct FrameworkEfficiency {
  double gemm_scale = 1;
  double memory_bound_scale = 1;
  double layer_overhead_s = 0;      // per layer, microbatch and pass (forward or backward)
  double moe_layer_host_s = 0;      // host time of an MoE layer's pass (dispatch syncs, per-expert loop): its floor
  bool has_moe_layer_host = false;  // fitted from MoE runs; without, MoE layers have no host floor
  std::string calibrated_from;
};

struct HardwareSpec {
  std::string name;
  std::string source;
  double peak_bf16_flops = 0;  // dense FLOP/s
  double peak_fp16_flops = 0;
  double peak_tf32_flops = 0;
  double peak_fp32_flops = 0;
  double peak_fp8_flops = 0;
  double hbm_bytes = 0;
  double hbm_bytes_per_s = 0;
  double host_link_bytes_per_s = 0;  // per direction
  double nvlink_bytes_per_s = 0;     // bidirectional total per GPU
  int64_t nvlink_domain_gpus = 1;
  double network_bytes_per_s = 0;  // per GPU per direction
  double memory_reserve_bytes = 0;
  Efficiency efficiency;
  std::string calibrated_from;  // measurement file the efficiencies were fitted to
  double layer_overhead_s = 0;  // in effect: set by apply_framework from the framework's entry
  double moe_layer_host_s = 0;  // likewise
  bool has_megatron_local = false;
  FrameworkEfficiency megatron_local;  // frameworks.megatron-local, when has_megatron_local
};

}  // namespace remat
