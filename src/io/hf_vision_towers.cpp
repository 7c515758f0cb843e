// The vision tower and projector a multimodal checkpoint builds beside its language model, for the
// towers remat counts: SigLIP (transformers' SiglipVisionModel, under Gemma 3) and CLIP
// (CLIPVisionModel, under LLaVA), with their wrappers' projectors. A text-only training step never
// runs them; under --framework hf their weights are held all the same (ModelSpec::idle_params).
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <string>

#include "hf_families.hpp"

namespace remat {

using nlohmann::json;

namespace {

struct TowerDims {
  double hidden, intermediate, layers, channels, image, patch;
};

double number_or(const json& j, const char* key, double fallback) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

// SiglipVisionConfig's and CLIPVisionConfig's defaults where the file leaves a key out.
TowerDims tower_dims(const json& v, double default_patch) {
  return {number_or(v, "hidden_size", 768),      number_or(v, "intermediate_size", 3072),
          number_or(v, "num_hidden_layers", 12), number_or(v, "num_channels", 3),
          number_or(v, "image_size", 224),       number_or(v, "patch_size", default_patch)};
}

// One encoder layer: q, k, v and out_proj with biases, fc1 and fc2 with biases, two LayerNorms.
double encoder_layer(const TowerDims& d) {
  const double h = d.hidden, f = d.intermediate;
  return 4 * (h * h + h) + (h * f + f) + (f * h + h) + 2 * 2 * h;
}

// the patch convolution's stride is the patch size: floor(image / patch) patches a side
double patches(const TowerDims& d) {
  const double side = d.patch > 0 ? std::floor(d.image / d.patch) : 0;
  return side * side;
}

// SiglipVisionTransformer: a patch convolution with a bias, a position per patch, the layers, the
// post-LayerNorm, and with vision_use_head (default true) the attention-pooling head: a probe, an
// nn.MultiheadAttention (in- and out-projections with biases), a LayerNorm and an MLP.
double siglip_params(const json& v) {
  const TowerDims d = tower_dims(v, 16);
  const double h = d.hidden, f = d.intermediate;
  double p = d.channels * d.patch * d.patch * h + h + patches(d) * h + d.layers * encoder_layer(d) + 2 * h;
  const bool head =
      !v.contains("vision_use_head") || !v["vision_use_head"].is_boolean() || v["vision_use_head"].get<bool>();
  if (head) p += h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + (h * f + f) + (f * h + h);
  return p;
}

// CLIPVisionTransformer: a class embedding, a patch convolution without a bias, a position per patch
// and one for the class token, the pre- and post-LayerNorms and the layers.
double clip_params(const json& v) {
  const TowerDims d = tower_dims(v, 32);
  const double h = d.hidden;
  return h + d.channels * d.patch * d.patch * h + (patches(d) + 1) * h + 2 * 2 * h + d.layers * encoder_layer(d);
}

// LLaVA's projector: linear_1 from the vision features (one hidden per layer vision_feature_layer
// lists, default one) to the text width, linear_2 text to text, biases by multimodal_projector_bias.
double llava_projector(const json& top, double vision_hidden, double text_hidden) {
  const json& layer = top.contains("vision_feature_layer") ? top["vision_feature_layer"] : json();
  const double features = layer.is_array() ? double(layer.size()) : 1;
  const bool bias = !top.contains("multimodal_projector_bias") || !top["multimodal_projector_bias"].is_boolean() ||
                    top["multimodal_projector_bias"].get<bool>();
  return vision_hidden * features * text_hidden + text_hidden * text_hidden + (bias ? 2 * text_hidden : 0);
}

// A dimension out of any tower's range leaves the tower uncounted (the note says so), never negative.
bool plausible(const TowerDims& d) {
  for (double x : {d.hidden, d.intermediate, d.layers, d.channels, d.image, d.patch})
    if (!std::isfinite(x) || x < 1 || x > 1e6) return false;
  return true;
}

}  // namespace

double vision_tower_params(const json& top, const std::string& outer_type, int64_t text_hidden) {
  if (!top.contains("vision_config") || !top["vision_config"].is_object()) return 0;
  const json& v = top["vision_config"];
  if (!plausible(tower_dims(v, 16))) return 0;
  const std::string tower =
      v.contains("model_type") && v["model_type"].is_string() ? v["model_type"].get<std::string>() : "";
  const double th = double(text_hidden);
  if (outer_type == "gemma3" && tower == "siglip_vision_model") {
    // Gemma3MultiModalProjector: mm_input_projection_weight (vision x text) and a soft-embedding RMSNorm
    const double vh = number_or(v, "hidden_size", 768);
    return siglip_params(v) + vh * th + vh;
  }
  if (outer_type == "llava" && (tower == "clip_vision_model" || tower == "siglip_vision_model")) {
    const double vh = number_or(v, "hidden_size", 768);
    return (tower == "clip_vision_model" ? clip_params(v) : siglip_params(v)) + llava_projector(top, vh, th);
  }
  return 0;
}

}  // namespace remat
