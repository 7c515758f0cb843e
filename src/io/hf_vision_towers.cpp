// The vision tower and projector a multimodal checkpoint builds beside its language model, for the
// towers remat counts: Gemma 4's, Muse-Glimmer's, SigLIP (transformers' SiglipVisionModel, under Gemma 3 and LLaVA),
// CLIP (CLIPVisionModel, under LLaVA), Pixtral (under Mistral 3), SigLIP2 (under LFM2-VL), with their wrappers'
// projectors, the Qwen vision family (hf_vision_towers_qwen.cpp), Kimi-K2.5's and MiniCPM-V 4.6's
// (hf_vision_towers_kimi_minicpm.cpp), GLM-4.1V/4.5V's and Voxtral's audio tower
// (hf_towers_glm4v_voxtral.cpp). A text-only training step never runs them; under
// --framework hf their weights are held all the same (ModelSpec::idle_params).
#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"
#include "hf_vision_towers.hpp"

namespace remat {

using nlohmann::json;

void add_siglip_layer_linears(double h, double f, double n, std::vector<TowerLinear>& linears) {
  linears.insert(linears.end(), {{"self_attn.q_proj", h, h, n},
                                 {"self_attn.k_proj", h, h, n},
                                 {"self_attn.v_proj", h, h, n},
                                 {"self_attn.out_proj", h, h, n},
                                 {"mlp.fc1", h, f, n},
                                 {"mlp.fc2", f, h, n}});
}

namespace {

struct TowerDims {
  double hidden, intermediate, layers, channels, image, patch;
};

// vision_config's dimensions, the config class's `defaults` (hidden, intermediate, layers, channels,
// image, patch) where the file leaves one out; a value of the wrong type is a problem named by its key.
TowerDims tower_dims(HfJsonReader& v, std::array<int64_t, 6> d) {
  const char* keys[] = {"hidden_size",  "intermediate_size", "num_hidden_layers",
                        "num_channels", "image_size",        "patch_size"};
  for (size_t i = 0; i < 6; ++i) v.integer(keys[i], d[i], false);
  return {double(d[0]), double(d[1]), double(d[2]), double(d[3]), double(d[4]), double(d[5])};
}

using Linears = std::vector<TowerLinear>;

// `n` layers' q, k, v, o projections and gated MLP (gate, up, down) as linear modules: paths
// attention.q_proj ... and mlp.gate_proj ..., each with `leaf` appended (Gemma 4's ".linear")
void add_gated_layer_linears(const std::string& attention, const std::string& mlp, const std::string& leaf, double h,
                             double q, double kv, double f, double n, Linears& linears) {
  linears.insert(linears.end(), {{attention + ".q_proj" + leaf, h, q, n},
                                 {attention + ".k_proj" + leaf, h, kv, n},
                                 {attention + ".v_proj" + leaf, h, kv, n},
                                 {attention + ".o_proj" + leaf, q, h, n},
                                 {mlp + ".gate_proj" + leaf, h, f, n},
                                 {mlp + ".up_proj" + leaf, h, f, n},
                                 {mlp + ".down_proj" + leaf, f, h, n}});
}

// One encoder layer: q, k, v and out_proj with biases, fc1 and fc2 with biases, two LayerNorms.
double encoder_layer(const TowerDims& d) {
  const double h = d.hidden, f = d.intermediate;
  return 4 * (h * h + h) + (h * f + f) + (f * h + h) + 2 * 2 * h;
}

// The encoder layers' linear modules (SigLIP's, SigLIP2's and CLIP's: encoder.layers.N)
void add_encoder_linears(const TowerDims& d, Linears& linears) {
  add_siglip_layer_linears(d.hidden, d.intermediate, d.layers, linears);
}

// the patch convolution's stride is the patch size: floor(image / patch) patches a side
double patches(const TowerDims& d) {
  const double side = d.patch > 0 ? std::floor(d.image / d.patch) : 0;
  return side * side;
}

// SiglipVisionTransformer: a patch convolution with a bias, a position per patch, the layers, the
// post-LayerNorm, and with vision_use_head (default true) the attention-pooling head: a probe, an
// nn.MultiheadAttention (in- and out-projections with biases), a LayerNorm and an MLP.
// SigLIP2 (Siglip2VisionTransformer) has the same shapes with a Linear patch embedding (the same
// weights as the convolution's) and num_patches positions.
// Its linear modules: the layers', the head's attention.out_proj (nn.MultiheadAttention's, a Linear
// subclass) and mlp.fc1/fc2, and SigLIP2's patch embedding.
double siglip_params(HfJsonReader& v, const TowerDims& d, double positions, Linears& linears, bool siglip2 = false) {
  const double h = d.hidden, f = d.intermediate;
  double p = d.channels * d.patch * d.patch * h + h + positions * h + d.layers * encoder_layer(d) + 2 * h;
  add_encoder_linears(d, linears);
  if (siglip2) linears.push_back({"embeddings.patch_embedding", d.channels * d.patch * d.patch, h, 1});
  bool head = true;
  v.boolean("vision_use_head", head);
  if (head) {
    p += h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + (h * f + f) + (f * h + h);
    linears.insert(linears.end(),
                   {{"head.attention.out_proj", h, h, 1}, {"head.mlp.fc1", h, f, 1}, {"head.mlp.fc2", f, h, 1}});
  }
  return p;
}

// CLIPVisionTransformer: a class embedding, a patch convolution without a bias, a position per patch
// and one for the class token, the pre- and post-LayerNorms and the layers.
double clip_params(const TowerDims& d, Linears& linears) {
  const double h = d.hidden;
  add_encoder_linears(d, linears);
  return h + d.channels * d.patch * d.patch * h + (patches(d) + 1) * h + 2 * 2 * h + d.layers * encoder_layer(d);
}

// LLaVA's projector: linear_1 from the vision features (one hidden per layer vision_feature_layer
// lists, default one) to the text width, linear_2 text to text, biases by multimodal_projector_bias.
double llava_projector(HfJsonReader& top, double vision_hidden, double text_hidden, Linears& linears) {
  std::vector<int64_t> layers;
  if (top.object.contains("vision_feature_layer") && top.object["vision_feature_layer"].is_array())
    top.integer_list("vision_feature_layer", layers);
  const double features = layers.empty() ? 1 : double(layers.size());
  bool bias = true;
  top.boolean("multimodal_projector_bias", bias);
  linears.insert(linears.end(), {{"multi_modal_projector.linear_1", vision_hidden * features, text_hidden, 1},
                                 {"multi_modal_projector.linear_2", text_hidden, text_hidden, 1}});
  return vision_hidden * features * text_hidden + text_hidden * text_hidden + (bias ? 2 * text_hidden : 0);
}

// A dimension out of any tower's range leaves the tower uncounted (the note says so), never negative.
bool plausible(const TowerDims& d) {
  return plausible_tower_dims({d.hidden, d.intermediate, d.layers, d.channels, d.image, d.patch});
}

// Idefics3's and SmolVLM's tower (Idefics3VisionTransformer: SigLIP's embeddings and layers, its
// post-LayerNorm, no head; Idefics3VisionConfig's defaults where the file leaves a key out) and
// connector (modality_projection.proj: the tower's width times scale_factor^2 to the text width, no
// bias). SmolVLM-500M's file (hidden 768, patch 16 at 512): 98,229,504, held in fp32 under mixed
// precision (steps-random-blind-h200.jsonl: -41% before the step when uncounted).
double idefics3_params(HfJsonReader& top, HfJsonReader& v, double text_hidden, Linears& linears) {
  const TowerDims t = tower_dims(v, {1152, 3072, 12, 3, 224, 32});  // Idefics3VisionConfig's defaults
  int64_t scale = 2;
  top.integer("scale_factor", scale, false);
  if (!plausible(t) || !plausible_tower_dims({double(scale)})) return 0;
  const double h = t.hidden, merged = h * double(scale) * double(scale);
  add_encoder_linears(t, linears);
  linears.push_back({"connector.modality_projection.proj", merged, text_hidden, 1});
  const double embeddings = t.channels * t.patch * t.patch * h + h + patches(t) * h;
  return embeddings + t.layers * encoder_layer(t) + 2 * h + merged * text_hidden;
}

// PixtralVisionModel: patch_conv without a bias, ln_pre, and per layer attention_norm and ffn_norm
// (RMSNorms), q, k, v, o and a gated MLP, none with biases. Under Mistral3ForConditionalGeneration
// its Mistral3MultiModalProjector: an RMSNorm on the vision width, patch_merger's merging_layer
// (hidden * spatial_merge_size^2 -> hidden, no bias), linear_1 (hidden per vision feature layer ->
// text) and linear_2 (text -> text), biases by multimodal_projector_bias (default false); under
// LlavaForConditionalGeneration LLaVA's projector (llava_projector; a Pixtral-Large-shaped LLaVA
// file: steps-random-blind2-h200.jsonl, -7.83% before the step while uncounted).
// `patch`: the patch size where vision_config gives none (PixtralVisionConfig's 16; the tower
// Mistral3Config builds for a file without vision_config has 14).
double pixtral_params(HfJsonReader& top, HfJsonReader& v, double text_hidden, Linears& linears, bool llava,
                      int64_t patch = 16) {
  int64_t h = 1024, f = 4096, layers = 24, heads = 16, channels = 3, merge = 2;
  const char* keys[] = {"hidden_size",         "intermediate_size", "num_hidden_layers",
                        "num_attention_heads", "num_channels",      "patch_size"};
  int64_t* values[] = {&h, &f, &layers, &heads, &channels, &patch};
  for (size_t i = 0; i < 6; ++i) v.integer(keys[i], *values[i], false);
  top.integer("spatial_merge_size", merge, false);
  std::vector<int64_t> feature_layers;
  if (top.object.contains("vision_feature_layer") && top.object["vision_feature_layer"].is_array())
    top.integer_list("vision_feature_layer", feature_layers);
  bool bias = false;
  top.boolean("multimodal_projector_bias", bias);
  if (!plausible_tower_dims(
          {double(h), double(f), double(layers), double(heads), double(channels), double(patch), double(merge)}) ||
      h % heads != 0)
    return 0;
  const double H = double(h), F = double(f), T = text_hidden;
  const double features = feature_layers.empty() ? 1 : double(feature_layers.size());
  const double tower =
      double(channels) * double(patch) * double(patch) * H + H + double(layers) * (2 * H + 4 * H * H + 3 * H * F);
  add_gated_layer_linears("attention", "feed_forward", "", H, H, H, F, double(layers), linears);
  if (llava) return tower + llava_projector(top, H, T, linears);
  const double projector = H + H * double(merge) * double(merge) * H + H * features * T + T * T + (bias ? 2 * T : 0);
  linears.insert(linears.end(), {{"patch_merger.merging_layer", H * double(merge) * double(merge), H, 1},
                                 {"multi_modal_projector.linear_1", H * features, T, 1},
                                 {"multi_modal_projector.linear_2", T, T, 1}});
  return tower + projector;
}

// Siglip2VisionModel under Lfm2VlForConditionalGeneration, and Lfm2VlMultiModalProjector: a
// LayerNorm on hidden * downsample_factor^2 where projector_use_layernorm (default true), linear_1
// to projector_hidden_size (default 2560), linear_2 to the text width, biases by projector_bias
// (default true).
double lfm2_vl_params(HfJsonReader& top, HfJsonReader& v, double text_hidden, Linears& linears) {
  TowerDims d = tower_dims(v, {768, 3072, 12, 3, 224, 16});
  int64_t positions = 256, factor = 2, projector_hidden = 2560;
  v.integer("num_patches", positions, false);
  top.integer("downsample_factor", factor, false);
  top.integer("projector_hidden_size", projector_hidden, false);
  bool layer_norm = true, bias = true;
  top.boolean("projector_use_layernorm", layer_norm);
  top.boolean("projector_bias", bias);
  if (!plausible(d) || !plausible_tower_dims({double(positions), double(factor), double(projector_hidden)})) return 0;
  const double in = d.hidden * double(factor) * double(factor), P = double(projector_hidden), T = text_hidden;
  linears.insert(linears.end(),
                 {{"multi_modal_projector.linear_1", in, P, 1}, {"multi_modal_projector.linear_2", P, T, 1}});
  return siglip_params(v, d, double(positions), linears, true) + (layer_norm ? 2 * in : 0) + in * P + P * T +
         (bias ? P + T : 0);
}

// The dimensions `keys` names, each required: empty where the file leaves one out (a tower whose
// config class's defaults remat does not read is counted from a complete file only).
std::vector<double> required_dims(HfJsonReader& v, std::initializer_list<const char*> keys) {
  std::vector<double> dims;
  for (const char* key : keys) {
    if (!v.object.contains(key)) return {};
    int64_t value = 0;
    v.integer(key, value, true);
    dims.push_back(double(value));
  }
  return dims;
}

bool plausible_dims(const std::vector<double>& dims) {
  for (double x : dims)
    if (!plausible_tower_dims({x})) return false;
  return !dims.empty();
}

// Gemma4VisionModel under Gemma4ForConditionalGeneration, counted where it builds no audio tower, each
// dimension the file leaves out at Gemma4VisionConfig's default (transformers 5.17: hidden 768, MLP
// 3072, 16 layers, 12 heads and 12 key-value heads of 64, patch 16, 10240 positions; a file giving
// hidden 1152 and 16 heads alone gets 12 key-value heads of 64 all the same):
// patch_embedder's two position tables (2 x position_embedding_size x hidden) and input_proj (3
// channels x patch^2 -> hidden), per layer q, k, v, o without biases, per-head q and k norms, a
// gated MLP and four RMSNorms, and embed_vision's projection to the text width.
// Its linear modules: each projection's inner nn.Linear (Gemma4ClippableLinear.linear), input_proj and
// embed_vision's embedding_projection.
double gemma4_vision_params(HfJsonReader& top, HfJsonReader& v, double text_hidden, Linears& linears) {
  if (top.object.contains("audio_config") && !top.object["audio_config"].is_null()) return 0;
  const char* keys[] = {"hidden_size",         "intermediate_size", "num_hidden_layers", "num_attention_heads",
                        "num_key_value_heads", "head_dim",          "patch_size",        "position_embedding_size"};
  int64_t defaults[] = {768, 3072, 16, 12, 12, 64, 16, 10240};
  std::vector<double> d;
  for (size_t i = 0; i < 8; ++i) {
    v.integer(keys[i], defaults[i], false);
    d.push_back(double(defaults[i]));
  }
  if (!plausible_dims(d)) return 0;
  const double H = d[0], F = d[1], layers = d[2], q = d[3] * d[5], kv = d[4] * d[5], head_dim = d[5];
  const double layer = H * q + 2 * H * kv + q * H + 2 * head_dim + 3 * H * F + 4 * H;
  add_gated_layer_linears("self_attn", "mlp", ".linear", H, q, kv, F, layers, linears);
  linears.insert(linears.end(), {{"patch_embedder.input_proj", 3 * d[6] * d[6], H, 1},
                                 {"embed_vision.embedding_projection", H, text_hidden, 1}});
  return 2 * d[7] * H + 3 * d[6] * d[6] * H + layers * layer + text_hidden * H;
}

// MuseGlimmer's vision tower, vision_adapter and vision_projection, counted where the file gives
// every dimension and its position table's rows agree both ways it could be sized
// (max_position_embeddings = pos_emb_height x pos_emb_width): a patch embedding of 3 channels x
// patch_temporal x patch^2 -> hidden without a bias, the position table, ln_pre and ln_post, per
// layer two LayerNorms, q, k, v and proj and fc1, fc2, all with biases; the adapter hidden *
// merge_size^2 -> projector_hidden_size -> projector_hidden_size and the projection to the text
// width, without biases (muse-glimmer-30b.json: 1,921,845,760, vision-towers-shapes-h200.json).
// Its linear modules: the patch embedding, the layers' attn.q/k/v_proj and attn.proj, mlp.fc1 and fc2,
// the adapter's fc1 and fc2 and the projection.
double muse_glimmer_vision_params(HfJsonReader& top, HfJsonReader& v, double text_hidden, Linears& linears) {
  const std::vector<double> d =
      required_dims(v, {"hidden_size", "intermediate_size", "num_hidden_layers", "patch_size", "patch_temporal",
                        "merge_size", "max_position_embeddings", "pos_emb_height", "pos_emb_width"});
  if (!top.object.contains("projector_hidden_size")) return 0;
  int64_t projector = 0;
  top.integer("projector_hidden_size", projector, true);
  const double P = double(projector);
  if (!plausible_dims(d) || !plausible_tower_dims({P}) || d[6] != d[7] * d[8]) return 0;
  const double H = d[0], F = d[1], layers = d[2], merged = H * d[5] * d[5];
  const double layer = 4 * H + 4 * (H * H + H) + (H * F + F) + (F * H + H);
  linears.insert(linears.end(), {{"patch_embedder.patch_embedding", 3 * d[4] * d[3] * d[3], H, 1},
                                 {"attn.q_proj", H, H, layers},
                                 {"attn.k_proj", H, H, layers},
                                 {"attn.v_proj", H, H, layers},
                                 {"attn.proj", H, H, layers},
                                 {"mlp.fc1", H, F, layers},
                                 {"mlp.fc2", F, H, layers},
                                 {"vision_adapter.fc1", merged, P, 1},
                                 {"vision_adapter.fc2", P, P, 1},
                                 {"vision_projection", P, text_hidden, 1}});
  return 3 * d[4] * d[3] * d[3] * H + d[6] * H + 2 * 2 * H + layers * layer + merged * P + P * P + text_hidden * P;
}

}  // namespace

bool plausible_tower_dims(std::initializer_list<double> dims) {
  for (double x : dims)
    if (!std::isfinite(x) || x < 1 || x > 1e6 || x != std::floor(x)) return false;
  return true;
}

namespace {

double counted_tower_params(HfJsonReader& top, const std::string& outer_type, int64_t text_hidden, Linears& linears) {
  // LLaVA's original files (no vision_config): LlavaConfig's default tower, CLIP ViT-L/14 at 336
  // (hidden 1024, MLP 4096, 24 layers), and the projector (transformers 5.17 builds 324,487,168 for it
  // beside LLaMA-7B: steps-unseen13-h200.jsonl)
  if (outer_type == "llava" && !top.object.contains("vision_config"))
    return clip_params({1024, 4096, 24, 3, 336, 14}, linears) +
           llava_projector(top, 1024, double(text_hidden), linears);
  // GLM-4.1V/4.5V's and Voxtral's config classes build their encoder config's defaults where the
  // file has none
  const bool audio = outer_type == "voxtral" || outer_type == "qwen2_audio";
  if (outer_type == "glm4v" || outer_type == "glm4v_moe" || audio) {
    const char* key = audio ? "audio_config" : "vision_config";
    static const json kNone = json::object();
    const bool given = top.object.contains(key) && !top.object[key].is_null();
    if (given && !top.object[key].is_object()) return 0;
    HfJsonReader e{given ? top.object[key] : kNone, top.file, std::string(key) + ".", top.problems};
    if (outer_type == "qwen2_audio") return qwen2_audio_params(e, double(text_hidden), linears);
    return outer_type == "voxtral" ? voxtral_audio_params(e, double(text_hidden), linears)
                                   : glm4v_vision_params(e, linears);
  }
  // Mistral3Config without vision_config: its default Pixtral tower (patch 14) and projector (a Mistral
  // Small 4 file: 428,472,320 parameters transformers 5.17 built, steps-random-blind5-h200.jsonl)
  if (outer_type == "mistral3" && !top.object.contains("vision_config")) {
    static const json kNone = json::object();
    HfJsonReader defaults{kNone, top.file, "vision_config.", top.problems};
    return pixtral_params(top, defaults, double(text_hidden), linears, false, 14);
  }
  if (!top.object.contains("vision_config") || !top.object["vision_config"].is_object()) return 0;
  HfJsonReader v{top.object["vision_config"], top.file, "vision_config.", top.problems};
  if (is_qwen_vision_wrapper(outer_type)) return qwen_vision_params(v, outer_type, linears);
  // both wrappers build their tower's config class from vision_config whatever its model_type
  if (outer_type == "kimi_k25") return kimi_k25_vision_params(top, v, double(text_hidden));
  if (outer_type == "minicpmv4_6") return minicpmv4_6_vision_params(top, v, double(text_hidden), linears);
  const std::string tower = v.text("model_type");
  // a vision_config without model_type is built as the wrapper's default tower
  if (outer_type == "mistral3" && (tower == "pixtral" || tower.empty()))
    return pixtral_params(top, v, double(text_hidden), linears, false);
  if (outer_type == "llava" && tower == "pixtral") return pixtral_params(top, v, double(text_hidden), linears, true);
  if (outer_type == "lfm2_vl" && (tower == "siglip2_vision_model" || tower.empty()))
    return lfm2_vl_params(top, v, double(text_hidden), linears);
  if (outer_type == "gemma4" && tower == "gemma4_vision")
    return gemma4_vision_params(top, v, double(text_hidden), linears);
  if (outer_type == "muse_glimmer" && tower == "muse_glimmer_vision")
    return muse_glimmer_vision_params(top, v, double(text_hidden), linears);
  if ((outer_type == "smolvlm" || outer_type == "idefics3") &&
      (tower.empty() || tower == "smolvlm_vision" || tower == "idefics3_vision"))
    return idefics3_params(top, v, double(text_hidden), linears);
  const bool siglip = tower == "siglip_vision_model", clip = tower == "clip_vision_model";
  if (!(outer_type == "gemma3" && siglip) && !(outer_type == "llava" && (siglip || clip))) return 0;
  // SiglipVisionConfig's and CLIPVisionConfig's defaults
  const TowerDims d = tower_dims(v, {768, 3072, 12, 3, 224, clip ? 32 : 16});
  if (!plausible(d)) return 0;
  const double th = double(text_hidden);
  // Gemma3MultiModalProjector: mm_input_projection_weight (vision x text) and a soft-embedding RMSNorm
  if (outer_type == "gemma3") return siglip_params(v, d, patches(d), linears) + d.hidden * th + d.hidden;
  const double tower_params = clip ? clip_params(d, linears) : siglip_params(v, d, patches(d), linears);
  return tower_params + llava_projector(top, d.hidden, th, linears);
}

}  // namespace

double vision_tower_params(HfJsonReader& top, const std::string& outer_type, int64_t text_hidden,
                           std::vector<TowerLinear>& linears) {
  const double params = counted_tower_params(top, outer_type, text_hidden, linears);
  if (params <= 0) linears.clear();  // an uncounted tower lists no modules either
  return params;
}

void note_peft_refused_tower_modules(HfJsonReader& top, const std::string& outer_type, ModelSpec& m) {
  if (outer_type != "gemma4") return;
  const auto present = [&](const char* key) { return top.object.contains(key) && top.object[key].is_object(); };
  const bool vision = present("vision_config"), audio = present("audio_config");
  if (!vision && !audio) return;
  m.tower_modules_peft_refuses = {"q_proj", "k_proj", "v_proj"};
  if (vision)
    m.tower_modules_peft_refuses.insert(m.tower_modules_peft_refuses.end(),
                                        {"o_proj", "gate_proj", "up_proj", "down_proj"});
  m.tower_peft_refuses = std::string(vision && audio ? "Gemma 4's vision and audio towers"
                                     : vision        ? "Gemma 4's vision tower"
                                                     : "Gemma 4's audio tower") +
                         " (Gemma4ClippableLinear)";
}

}  // namespace remat
