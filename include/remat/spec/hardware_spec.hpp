#pragma once
// GPU facts in SI units: FLOP/s, bytes, bytes/s.
#include <map>
#include <string>
#include <string_view>
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

// A framework's own attention kernel at one head dim and sequence length: its achieved fraction
// of the bf16 peak (frameworks.<name>.attention, measured: examples/hf/sdpa_bench.py).
struct AttentionGridPoint {
  double head_dim = 0, seq = 0;
  double fwd = 0, bwd = 0;
};

// PEFT's fp32 LoRA GEMMs (x A^T, h B^T and their gradients: rank-wide, cuBLAS's fp32 SIMT kernels)
// at one adapter's forward FLOPs (both GEMMs) and rank: their achieved fraction of the fp32 peak,
// forward and backward (frameworks.<name>.adapter_gemm, measured: examples/hf/lora_gemm_bench.py).
// At equal FLOPs a wider rank runs far better (more work per byte of the wide operand).
struct AdapterGemmPoint {
  double flops = 0;
  double fwd = 0, bwd = 0;
  double rank = 16;  // a point without one: rank 16, the first measured
};

struct Efficiency {
  std::vector<EfficiencyPoint> gemm_by_flops;  // ascending in flops
  double attention_fwd = 0.6;                  // used when attention_by_seq is empty
  double attention_bwd = 0.5;
  std::vector<AttentionPoint> attention_by_seq;  // optional, ascending in seq
  // in effect when a framework measured its attention kernel (apply_framework): used instead of
  // the two above for flash attention ops that state their head dim
  std::vector<AttentionGridPoint> attention_by_head_dim;
  // in effect likewise: fp32 adapter GEMMs by FLOPs; empty: their bytes at memory_bound
  std::vector<AdapterGemmPoint> adapter_gemm_by_flops;
  // in effect likewise: the attention kernel under a dense mask, and a large fp32 GEMM's fraction of
  // the fp32 peak (0: not measured)
  std::vector<AttentionGridPoint> masked_attention_by_head_dim;
  double fp32_gemm = 0;
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
  // the framework's attention kernel measured on this GPU (ascending in head dim, then seq); empty:
  // the file's flash efficiencies
  std::vector<AttentionGridPoint> attention;
  std::string attention_source;                // where the attention points were measured
  std::vector<AdapterGemmPoint> adapter_gemm;  // ascending in rank, then flops; empty: bytes at memory_bound
  std::string adapter_gemm_source;
  // the attention kernel under a dense boolean mask (as `attention`), and a large fp32 GEMM without
  // TF32 (cuBLAS FFMA) as a fraction of the fp32 peak; each optional
  std::vector<AttentionGridPoint> masked_attention;
  std::string masked_attention_source;
  double fp32_gemm = 0;
  std::string fp32_gemm_source;
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
  // frameworks.<name>: what each registered framework reaches on this GPU, by profile name
  std::map<std::string, FrameworkEfficiency, std::less<>> framework_fits;
  // framework_fits' entry for `name`, or nullptr
  const FrameworkEfficiency* framework_fit(std::string_view name) const {
    const auto it = framework_fits.find(name);
    return it == framework_fits.end() ? nullptr : &it->second;
  }
};

}  // namespace remat
