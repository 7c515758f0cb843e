#include "remat/sim/schedule.hpp"

#include <algorithm>

namespace remat {

namespace {

std::vector<PipeStep> one_f_one_b(int64_t p, int64_t m, int64_t stage) {
  std::vector<PipeStep> out;
  const int64_t warmup = std::min(p - stage - 1, m);
  for (int64_t k = 0; k < warmup; ++k) out.push_back({true, k, 0});
  for (int64_t k = 0; k + warmup < m; ++k) {
    out.push_back({true, k + warmup, 0});
    out.push_back({false, k, 0});
  }
  for (int64_t k = std::max<int64_t>(m - warmup, 0); k < m; ++k) out.push_back({false, k, 0});
  return out;
}

// Megatron-LM get_model_chunk_id and the microbatch of virtual step k: steps
// go through chunks in groups of p microbatches.
PipeStep virtual_step(int64_t k, int64_t p, int64_t v, bool forward) {
  const int64_t in_group = k % (p * v);
  int64_t chunk = in_group / p;
  if (!forward) chunk = v - 1 - chunk;
  return {forward, (k / (p * v)) * p + in_group % p, chunk};
}

std::vector<PipeStep> interleaved(int64_t p, int64_t m, int64_t v, int64_t stage) {
  const int64_t total = m * v;
  const int64_t warmup = m == p ? total : std::min((p - stage - 1) * 2 + (v - 1) * p, total);
  std::vector<PipeStep> out;
  for (int64_t k = 0; k < warmup; ++k) out.push_back(virtual_step(k, p, v, true));
  for (int64_t k = 0; k + warmup < total; ++k) {
    out.push_back(virtual_step(k + warmup, p, v, true));
    out.push_back(virtual_step(k, p, v, false));
  }
  for (int64_t k = total - warmup; k < total; ++k) out.push_back(virtual_step(k, p, v, false));
  return out;
}

}  // namespace

std::vector<std::vector<PipeStep>> pipeline_schedule(int64_t pp, int64_t microbatches, int64_t virtual_stages) {
  std::vector<std::vector<PipeStep>> out;
  for (int64_t i = 0; i < pp; ++i)
    out.push_back(virtual_stages <= 1 ? one_f_one_b(pp, microbatches, i)
                                      : interleaved(pp, microbatches, virtual_stages, i));
  return out;
}

}  // namespace remat
