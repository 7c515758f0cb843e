#pragma once
// The CUDA backend's device memory for one measured case, predicted from the
// exact blocks' tensors plus the gradient and workspace buffers the backend
// allocates (src/cuda/README.md, "Memory accounting").
#include <string>
#include <vector>

#include "remat/spec/model_spec.hpp"
#include "remat/validate/measured.hpp"

namespace remat {

// One case of remat-bench: a block under a strategy at b x s.
struct BackendCase {
  std::string block;         // rmsnorm_linear | mlp | moe | gqa | mla | lm_head | streambp_layer
  std::string strategy;      // none | standard | eagle | offload | streambp
  ModelSpec model;           // the dims the backend ran (hidden_size, heads, ...)
  int64_t out_features = 0;  // rmsnorm_linear's linear width (q + k + v)
  int64_t chunks = 1;        // lm_head, streambp_layer: StreamBP's C or D
  int64_t b = 1, s = 1;
  bool deterministic_attention = false;  // cuDNN's dP-workspace backward
};

// Throws InputError when the case's block, strategy or dims are not ones
// the backend runs.
BackendCase backend_case(const MeasuredCase& c, bool deterministic_attention, const std::string& file,
                         const std::string& key);

struct BackendMemory {
  double kept_bytes = 0;  // activation bytes alive after forward, y freed (README: kept_bytes)
  double peak_bytes = 0;  // most activation bytes alive from dy's allocation to the end of backward
  std::vector<NamedBytes> kept_buffers, peak_buffers;  // the live buffers at those two points
};

BackendMemory backend_memory(const BackendCase& c);

// The backend's attention backward workspace (README: ws_attn), bytes.
double attention_bwd_workspace_bytes(double b, double heads, double s, double d_qk, bool gqa, bool deterministic);

}  // namespace remat
