#pragma once
// What remat-bench measured (schema remat.gpu_measurements 1.x,
// src/cuda/README.md): the cases `remat validate` predicts and the per-kernel
// records `remat calibrate` fits. Parsed by remat/io/measurements.hpp.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace remat {

struct NamedBytes {
  std::string name;
  double bytes = 0;
};

// One kernel's median time over the profiled iterations (kernels[] of a case).
struct MeasuredKernel {
  std::string name;   // "gate_up", "gate_up.dgrad", "attn.fwd", ...
  std::string kind;   // gemm | gemm_grouped | attention_fwd | attention_bwd | rmsnorm | swiglu | ...
  std::string phase;  // forward | recompute | backward, as the backend labelled it
  int64_t m = 0, n = 0, k = 0, calls = 1;
  double flops = 0, bytes_moved = 0, time_s = 0;
};

// Offload copies (offload cases only).
struct MeasuredOffload {
  bool present = false;
  double d2h_s = 0, h2d_s = 0, bytes = 0;
};

struct MeasuredCase {
  std::string block;                    // rmsnorm_linear | mlp | moe | gqa | mla
  std::string strategy;                 // none | standard | eagle | offload
  std::string model;                    // dims.model, the preset's name
  std::map<std::string, int64_t> dims;  // every integer key of dims (b, s, hidden_size, ...)
  double forward_s = 0, backward_s = 0, recompute_s = 0, total_s = 0;
  int64_t kept_bytes = 0, peak_bytes = 0;
  std::string routing;  // balanced | router | n/a (empty when absent)
  std::vector<NamedBytes> kept_buffers, peak_buffers;
  std::vector<MeasuredKernel> kernels;
  MeasuredOffload offload;

  int64_t dim(const std::string& key) const {
    auto it = dims.find(key);
    return it == dims.end() ? 0 : it->second;
  }
};

struct Measurements {
  std::string schema_version;
  std::string device;  // device.name, empty when absent
  std::string git_commit;
  bool deterministic_attention = false;  // settings.deterministic_attention
  std::vector<MeasuredCase> cases;
};

}  // namespace remat
