// Two wrappers' encoders, as transformers 5.17 builds them beside the language model
// (models/glm4v/modeling_glm4v.py, models/glm4v_moe/modeling_glm4v_moe.py,
// models/voxtral/modeling_voxtral.py):
//   GLM-4.1V (glm4v) and GLM-4.5V (glm4v_moe): Glm4vVisionModel (model.visual; Glm4vMoeVisionModel
//   is the same class), its merger included;
//   Voxtral (voxtral): VoxtralEncoder (audio_tower, Whisper's encoder) and VoxtralMultiModalProjector.
// Checked against the models transformers built: 892,498,432 for glm-4.1v-9b-thinking.json and for
// Glm4vMoeConfig's defaults (vision-towers-shapes-h200.json, steps-unseen15-h200.jsonl), 662,134,784
// for voxtral-mini-3b-2507.json and VoxtralConfig's defaults (steps-unseen15-h200.jsonl), and for
// small configs of other shapes built on the meta device (224,728 and 265,456: attention_bias,
// in_channels, merge and temporal sizes, Whisper's key spellings; test_hf_towers_glm4v_voxtral.cpp).
// Each tower's linear modules are listed too: PEFT adapts those a LoRA target names, and the step
// holds those adapters untrained (Voxtral's q/k/v_proj: -1.58% -> -0.00% before the step).
#include <cstdint>
#include <string>
#include <vector>

#include "hf_vision_towers.hpp"

namespace remat {

namespace {

struct Glm4vDims {
  int64_t hidden = 1536, depth = 24, heads = 12, channels = 3, image = 336, patch = 14, merge = 2, temporal = 2;
  int64_t out_hidden = 4096, merger_width = 13696;
  bool qkv_bias = false;
};

// Glm4vVisionConfig's keys, its defaults (as transformers 5.17 saves them) where the file leaves one out.
Glm4vDims glm4v_dims(HfJsonReader& v) {
  Glm4vDims d;
  const char* keys[] = {"hidden_size",        "depth",
                        "num_heads",          "in_channels",
                        "image_size",         "patch_size",
                        "spatial_merge_size", "temporal_patch_size",
                        "out_hidden_size",    "intermediate_size"};
  int64_t* values[] = {&d.hidden, &d.depth, &d.heads,    &d.channels,   &d.image,
                       &d.patch,  &d.merge, &d.temporal, &d.out_hidden, &d.merger_width};
  for (size_t i = 0; i < 10; ++i) v.integer(keys[i], *values[i], false);
  v.boolean("attention_bias", d.qkv_bias);
  return d;
}

struct VoxtralDims {
  int64_t hidden = 1280, ffn = 5120, layers = 32, heads = 20, mel_bins = 128, positions = 1500;
};

// VoxtralEncoderConfig's keys, its defaults where the file leaves one out. Its attribute_map reads
// Whisper's names too (d_model, encoder_ffn_dim, encoder_layers, encoder_attention_heads); false where
// the file gives a key both ways with two values.
bool voxtral_dims(HfJsonReader& a, VoxtralDims& d) {
  struct Dim {
    const char *key, *whisper_key;
    int64_t& value;
  };
  const Dim dims[] = {{"hidden_size", "d_model", d.hidden},
                      {"intermediate_size", "encoder_ffn_dim", d.ffn},
                      {"num_hidden_layers", "encoder_layers", d.layers},
                      {"num_attention_heads", "encoder_attention_heads", d.heads},
                      {"num_mel_bins", nullptr, d.mel_bins},
                      {"max_source_positions", nullptr, d.positions}};
  bool agree = true;
  for (const Dim& dim : dims) {
    a.integer(dim.key, dim.value, false);
    if (!dim.whisper_key) continue;
    int64_t other = dim.value;
    a.integer(dim.whisper_key, other, false);
    if (a.has(dim.key) && other != dim.value) agree = false;
    dim.value = other;
  }
  return agree;
}

}  // namespace

// Glm4vVisionModel, every shape from vision_config (hidden H, out_hidden_size O, intermediate_size F):
//   embeddings       position_embedding, (floor(image / patch))^2 x H
//   patch_embed      a Conv3d of in_channels x temporal_patch_size x patch^2 -> H, with a bias
//   blocks           depth x (norm1, norm2 RMSNorms; qkv H -> 3H, its bias by attention_bias; proj H -> H
//                    without a bias; a gated MLP of width O, not F, without biases)
//   post_conv_layernorm, post_layernorm   RMSNorms on H
//   downsample       a Conv2d H -> O of kernel spatial_merge_size^2, with a bias
//   merger           proj O -> O, post_projection_norm (a LayerNorm with a bias), gate/up/down of width
//                    F, none with biases
// Its linear modules, which LoRA targets reach by name: the blocks' attn.qkv, attn.proj and
// mlp.gate/up/down_proj, the merger's proj and gate/up/down_proj.
double glm4v_vision_params(HfJsonReader& v, std::vector<TowerLinear>& linears) {
  const Glm4vDims d = glm4v_dims(v);
  if (!plausible_tower_dims({double(d.hidden), double(d.depth), double(d.heads), double(d.channels), double(d.image),
                             double(d.patch), double(d.merge), double(d.temporal), double(d.out_hidden),
                             double(d.merger_width)}) ||
      d.image < d.patch)
    return 0;
  const double H = double(d.hidden), O = double(d.out_hidden), F = double(d.merger_width);
  const double side = double(d.image / d.patch), P = double(d.patch), M = double(d.merge);
  const double positions = side * side * H;
  const double patch_embed = double(d.channels) * double(d.temporal) * P * P * H + H;
  const double block = 2 * H + (3 * H * H + (d.qkv_bias ? 3 * H : 0)) + H * H + 3 * H * O;
  const double downsample = H * M * M * O + O;
  const double merger = O * O + 2 * O + 3 * O * F;
  const double depth = double(d.depth);
  linears.insert(linears.end(), {{"attn.qkv", H, 3 * H, depth},
                                 {"attn.proj", H, H, depth},
                                 {"mlp.gate_proj", H, O, depth},
                                 {"mlp.up_proj", H, O, depth},
                                 {"mlp.down_proj", O, H, depth},
                                 {"merger.proj", O, O, 1},
                                 {"merger.gate_proj", O, F, 1},
                                 {"merger.up_proj", O, F, 1},
                                 {"merger.down_proj", F, O, 1}});
  return positions + patch_embed + double(d.depth) * block + 2 * H + downsample + merger;
}

// VoxtralEncoder and VoxtralMultiModalProjector, from audio_config (hidden D, intermediate_size F) and
// the language model's width T; audio_config's model_type voxtral_encoder or none (VoxtralConfig's
// default), another encoder left uncounted:
//   conv1, conv2     Conv1d num_mel_bins -> D and D -> D of kernel 3, with biases
//   embed_positions  max_source_positions x D (an nn.Embedding frozen by requires_grad_(False), still
//                    a parameter the model holds)
//   layers           q_proj, v_proj and out_proj with biases, k_proj without (Whisper's), fc1 D -> F
//                    and fc2 F -> D with biases, two LayerNorms
//   layer_norm       a LayerNorm on D
//   projector        linear_1 F -> T (F, four frames of D stacked) and linear_2 T -> T, without biases
// Its linear modules, which LoRA targets reach by name: the layers' self_attn.q/k/v_proj and
// self_attn.out_proj, fc1 and fc2, the projector's linear_1 and linear_2.
namespace {

// Whisper's encoder as Voxtral and Qwen2-Audio build it (`encoder_type`: audio_config's model_type,
// none for the wrapper's default); 0 where the dims are not a tower it builds.
double whisper_encoder_params(HfJsonReader& a, const char* encoder_type, VoxtralDims& d,
                              std::vector<TowerLinear>& linears) {
  const std::string type = a.text("model_type");
  if (!type.empty() && type != encoder_type) return 0;
  // the attention refuses a width its heads do not divide
  if (!voxtral_dims(a, d) ||
      !plausible_tower_dims({double(d.hidden), double(d.ffn), double(d.layers), double(d.heads), double(d.mel_bins),
                             double(d.positions)}) ||
      d.hidden % d.heads != 0)
    return 0;
  const double D = double(d.hidden), F = double(d.ffn), layers = double(d.layers);
  const double convs = (double(d.mel_bins) * D * 3 + D) + (D * D * 3 + D);
  const double layer = (4 * D * D + 3 * D) + (D * F + F) + (F * D + D) + 2 * 2 * D;
  linears.insert(linears.end(), {{"self_attn.q_proj", D, D, layers},
                                 {"self_attn.k_proj", D, D, layers},
                                 {"self_attn.v_proj", D, D, layers},
                                 {"self_attn.out_proj", D, D, layers},
                                 {"fc1", D, F, layers},
                                 {"fc2", F, D, layers}});
  return convs + double(d.positions) * D + layers * layer + 2 * D;
}

}  // namespace

double voxtral_audio_params(HfJsonReader& a, double text_hidden, std::vector<TowerLinear>& linears) {
  VoxtralDims d;
  const double encoder = whisper_encoder_params(a, "voxtral_encoder", d, linears);
  if (encoder == 0) return 0;
  const double F = double(d.ffn), T = text_hidden;
  linears.insert(linears.end(),
                 {{"multi_modal_projector.linear_1", F, T, 1}, {"multi_modal_projector.linear_2", T, T, 1}});
  return encoder + F * T + T * T;
}

// Qwen2AudioEncoder (Whisper's encoder; its avg_pooler holds nothing) and Qwen2AudioMultiModalProjector,
// one linear d_model -> the language model's width with a bias (models/qwen2_audio/, transformers 5.17;
// Qwen2-Audio-7B-Instruct's step in steps-unseen16-h200.jsonl).
double qwen2_audio_params(HfJsonReader& a, double text_hidden, std::vector<TowerLinear>& linears) {
  VoxtralDims d;
  const double encoder = whisper_encoder_params(a, "qwen2_audio_encoder", d, linears);
  if (encoder == 0) return 0;
  const double D = double(d.hidden), T = text_hidden;
  linears.push_back({"multi_modal_projector.linear", D, T, 1});
  return encoder + D * T + T;
}

}  // namespace remat
