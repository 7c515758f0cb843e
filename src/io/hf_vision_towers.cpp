// The vision tower and projector a multimodal checkpoint builds beside its language model, for the
// towers remat counts: SigLIP (transformers' SiglipVisionModel, under Gemma 3) and CLIP
// (CLIPVisionModel, under LLaVA), with their wrappers' projectors. A text-only training step never
// runs them; under --framework hf their weights are held all the same (ModelSpec::idle_params).
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"

namespace remat {

using nlohmann::json;

namespace {

struct TowerDims {
  double hidden, intermediate, layers, channels, image, patch;
};

// vision_config's dimensions, SiglipVisionConfig's and CLIPVisionConfig's defaults where the file
// leaves one out; a value of the wrong type is a problem named by its key.
TowerDims tower_dims(HfJsonReader& v, int64_t default_patch) {
  int64_t d[] = {768, 3072, 12, 3, 224, default_patch};
  const char* keys[] = {"hidden_size",  "intermediate_size", "num_hidden_layers",
                        "num_channels", "image_size",        "patch_size"};
  for (size_t i = 0; i < 6; ++i) v.integer(keys[i], d[i], false);
  return {double(d[0]), double(d[1]), double(d[2]), double(d[3]), double(d[4]), double(d[5])};
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
double siglip_params(HfJsonReader& v, const TowerDims& d) {
  const double h = d.hidden, f = d.intermediate;
  double p = d.channels * d.patch * d.patch * h + h + patches(d) * h + d.layers * encoder_layer(d) + 2 * h;
  bool head = true;
  v.boolean("vision_use_head", head);
  if (head) p += h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + (h * f + f) + (f * h + h);
  return p;
}

// CLIPVisionTransformer: a class embedding, a patch convolution without a bias, a position per patch
// and one for the class token, the pre- and post-LayerNorms and the layers.
double clip_params(const TowerDims& d) {
  const double h = d.hidden;
  return h + d.channels * d.patch * d.patch * h + (patches(d) + 1) * h + 2 * 2 * h + d.layers * encoder_layer(d);
}

// LLaVA's projector: linear_1 from the vision features (one hidden per layer vision_feature_layer
// lists, default one) to the text width, linear_2 text to text, biases by multimodal_projector_bias.
double llava_projector(HfJsonReader& top, double vision_hidden, double text_hidden) {
  std::vector<int64_t> layers;
  if (top.object.contains("vision_feature_layer") && top.object["vision_feature_layer"].is_array())
    top.integer_list("vision_feature_layer", layers);
  const double features = layers.empty() ? 1 : double(layers.size());
  bool bias = true;
  top.boolean("multimodal_projector_bias", bias);
  return vision_hidden * features * text_hidden + text_hidden * text_hidden + (bias ? 2 * text_hidden : 0);
}

// A dimension out of any tower's range leaves the tower uncounted (the note says so), never negative.
bool plausible(const TowerDims& d) {
  for (double x : {d.hidden, d.intermediate, d.layers, d.channels, d.image, d.patch})
    if (!std::isfinite(x) || x < 1 || x > 1e6) return false;
  return true;
}

}  // namespace

double vision_tower_params(HfJsonReader& top, const std::string& outer_type, int64_t text_hidden) {
  if (!top.object.contains("vision_config") || !top.object["vision_config"].is_object()) return 0;
  HfJsonReader v{top.object["vision_config"], top.file, "vision_config.", top.problems};
  const std::string tower = v.text("model_type");
  const bool siglip = tower == "siglip_vision_model", clip = tower == "clip_vision_model";
  if (!(outer_type == "gemma3" && siglip) && !(outer_type == "llava" && (siglip || clip))) return 0;
  const TowerDims d = tower_dims(v, clip ? 32 : 16);
  if (!plausible(d)) return 0;
  const double th = double(text_hidden);
  // Gemma3MultiModalProjector: mm_input_projection_weight (vision x text) and a soft-embedding RMSNorm
  if (outer_type == "gemma3") return siglip_params(v, d) + d.hidden * th + d.hidden;
  return (clip ? clip_params(d) : siglip_params(v, d)) + llava_projector(top, d.hidden, th);
}

}  // namespace remat
