#pragma once
// Parameter counts and the bytes weights, gradients and optimizer state take.
#include <cstdint>

#include "remat/spec/model_spec.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

struct ParamCount {
  double dense = 0;   // replicated over data parallel (sharded by tp where the layer is)
  double expert = 0;  // routed experts, sharded by ep
  // of `dense`: weights that get no gradient or optimizer state (transformers runs DSA's indexer
  // under torch.no_grad)
  double untrained = 0;
  double total() const { return dense + expert; }
};

// One layer's parameters on one rank of tp x ep (tp = ep = 1: the whole layer).
ParamCount layer_params(const ModelSpec& m, int64_t layer_index, int64_t tp, int64_t ep);
double embedding_params(const ModelSpec& m, int64_t tp);  // V h / tp
// Layer `layer_index`'s DSA indexer (replicated over tp); 0 where it runs none.
double indexer_params(const ModelSpec& m, int64_t layer_index);
// DeepSeek-V4's CSA indexer (params.cpp: compressed_attention_params): held, never trained
double indexer_of_compressed_params(const ModelSpec& m);
// The first stage's embeddings: the token embedding plus learned positions (replicated).
double input_embedding_params(const ModelSpec& m, int64_t tp);
// Gemma 4 E2B/E4B: the per-layer input embedding, its projection from the hidden state and norm.
double per_layer_input_params(const ModelSpec& m, int64_t tp);
// The last stage's parameters beside the output matrix: the final norm and the head's bias.
double head_extra_params(const ModelSpec& m, int64_t tp);
// A norm over `width` (weight, and bias for a LayerNorm with bias).
double norm_params(const ModelSpec& m, double width);
// DeepSeek-V3's multi-token prediction modules on one rank of tp x ep: per module
// one MoE layer, eh_proj (2h x h, split over tp) and enorm, hnorm and the shared
// head's norm; the embedding and the output head are the main model's.
ParamCount mtp_params(const ModelSpec& m, int64_t tp, int64_t ep);
// Whole model, unsharded, with `layers` transformer layers: the model transformers' class builds,
// so without the MTP modules (mtp_params), which Megatron-LM trains beside it.
double model_params(const ModelSpec& m, int64_t layers);

struct StaticBytes {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double total() const { return weights + gradients + optimizer; }
};

// Bytes per parameter for weights / gradients / optimizer state when the
// optimizer shards over `shard` data-parallel ranks (Megatron: 18 bytes
// replicated; 6 + 12/dp with the distributed optimizer).
StaticBytes bytes_per_param(const TrainingSpec& t, double shard);
StaticBytes static_bytes(const ParamCount& p, const TrainingSpec& t);

}  // namespace remat
