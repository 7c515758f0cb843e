// Two wrappers' vision towers and projectors, as transformers 5.17 builds them beside the language
// model (models/kimi_k25/modeling_kimi_k25.py, models/minicpmv4_6/modeling_minicpmv4_6.py):
//   Kimi-K2.5/K2.6 (kimi_k25): Kimi_K25VisionModel (MoonViT) and Kimi_K25MultimodalProjection;
//   MiniCPM-V 4.6 (minicpmv4_6): MiniCPMV4_6VisionModel (SigLIP with a window-attention merger
//   after layer insert_layer_id) and MiniCPMV4_6Merger.
// Both encoders' layers are SigLIP's: two LayerNorms, q, k, v and an output projection with biases,
// fc1 and fc2 with biases. Checked against the models transformers built from
// examples/hf/unseen13/realcfg (steps-unseen13-h200.jsonl): 471,143,920 for kimi-k2.6-nvfp4.json,
// 548,266,416 for minicpm-v-4.6-llm-tpu.json.
#include <cstdint>
#include <string>
#include <vector>

#include "hf_vision_towers.hpp"

namespace remat {

namespace {

// One SigLIP-style encoder layer of width h and MLP width f.
double siglip_layer(double h, double f) { return 2 * 2 * h + 4 * (h * h + h) + (h * f + f) + (f * h + h); }

// A kernel size key (merge_kernel_size, window_kernel_size): two whole numbers, default (2, 2);
// false where the file gives another shape.
bool kernel(HfJsonReader& r, const char* key, int64_t& rows, int64_t& cols) {
  std::vector<int64_t> k = {2, 2};
  r.integer_list(key, k);
  if (k.size() != 2) return false;
  rows = k[0], cols = k[1];
  return true;
}

}  // namespace

// Kimi_K25Config and Kimi_K25VisionConfig read the plain names (hidden_size, pos_emb_height, ...);
// the released files spell the tower the remote code's way (vt_hidden_size, init_pos_emb_height),
// which transformers 5.17 does not read: it builds the class defaults, the same numbers as K2.5's
// and K2.6's. Where a remote-code spelling gives another value than the one built, the two codes
// build different towers: left uncounted.
//   patch_embed   proj, a Conv2d of 3 x patch^2 -> hidden with a bias, and pos_emb's learned table
//                 pos_emb_height x pos_emb_width x hidden (its time table is a buffer)
//   layers        SigLIP layers (q_proj, k_proj, v_proj, proj), then final_layernorm
//   mm_projector  pre_norm, a LayerNorm on projection_hidden_size (top level, default 1152); in_proj
//                 hidden*k^2 -> hidden*k^2 and out_proj -> the text width, with biases (k^2 the
//                 merge_kernel_size's product)
double kimi_k25_vision_params(HfJsonReader& top, HfJsonReader& v, double text_hidden) {
  int64_t h = 1152, f = 4304, layers = 27, patch = 14, pos_h = 64, pos_w = 64, projection = 1152;
  int64_t kh = 2, kw = 2;
  struct Dim {
    const char *key, *remote_key;
    int64_t& value;
  };
  const Dim dims[] = {{"hidden_size", "vt_hidden_size", h},
                      {"intermediate_size", "vt_intermediate_size", f},
                      {"num_hidden_layers", "vt_num_hidden_layers", layers},
                      {"patch_size", nullptr, patch},
                      {"pos_emb_height", "init_pos_emb_height", pos_h},
                      {"pos_emb_width", "init_pos_emb_width", pos_w}};
  bool agree = true;
  for (const Dim& d : dims) {
    v.integer(d.key, d.value, false);
    if (!d.remote_key) continue;
    int64_t remote = d.value;
    v.integer(d.remote_key, remote, false);
    agree = agree && remote == d.value;
  }
  top.integer("projection_hidden_size", projection, false);
  if (!kernel(v, "merge_kernel_size", kh, kw) || !agree ||
      !plausible_tower_dims({double(h), double(f), double(layers), double(patch), double(pos_h), double(pos_w),
                             double(projection), double(kh), double(kw)}))
    return 0;
  const double H = double(h), F = double(f), P = double(patch), merged = H * double(kh) * double(kw);
  const double tower =
      (3 * P * P * H + H) + double(pos_h) * double(pos_w) * H + double(layers) * siglip_layer(H, F) + 2 * H;
  const double projector = 2 * double(projection) + (merged * merged + merged) + (merged * text_hidden + text_hidden);
  return tower + projector;
}

// MiniCPMV4_6VisionConfig's defaults (hidden 768, MLP 3072, 12 layers of 12 heads, 3 channels, image
// 224, patch 16, window_kernel_size (2, 2)) where vision_config leaves a key out; MiniCPMV4_6Config's
// merger_times (default 1) at the top. Every layer is built whatever insert_layer_id and
// drop_vision_last_layer say.
//   embeddings      a Conv2d patch embedding with a bias and (floor(image / patch))^2 positions
//   encoder         SigLIP layers (q_proj, k_proj, v_proj, out_proj), then post_layernorm
//   vit_merger      MiniCPMV4_6ViTWindowAttentionMerger: an attention (four projections with
//                   biases), layer_norm1 on hidden, pre_norm on hidden*w^2, linear_1 hidden*w^2 ->
//                   intermediate*w^2 and linear_2 -> hidden with biases (w^2 the window's product)
//   merger          merger_times MiniCPMV4_6DownsampleMLPs on 4 x hidden (a fixed 2 x 2 merge): a
//                   LayerNorm, linear_1 square, linear_2 to hidden (the last to the text width),
//                   with biases
// Its linear modules (PEFT's all-linear adapts each): the layers' and the window merger's attention
// projections, the layers' fc1 and fc2, the window merger's linear_1 and linear_2, each downsample's.
double minicpmv4_6_vision_params(HfJsonReader& top, HfJsonReader& v, double text_hidden,
                                 std::vector<TowerLinear>& linears) {
  int64_t h = 768, f = 3072, layers = 12, heads = 12, channels = 3, image = 224, patch = 16, merger_times = 1;
  int64_t wh = 2, ww = 2;
  const char* keys[] = {"hidden_size",  "intermediate_size", "num_hidden_layers", "num_attention_heads",
                        "num_channels", "image_size",        "patch_size"};
  int64_t* values[] = {&h, &f, &layers, &heads, &channels, &image, &patch};
  for (size_t i = 0; i < 7; ++i) v.integer(keys[i], *values[i], false);
  top.integer("merger_times", merger_times, false);
  const int64_t downsamples = merger_times > 1 ? merger_times : 1;  // range(merger_times - 1), then one
  // MiniCPMV4_6VisionAttention refuses a width its heads do not divide
  if (!kernel(v, "window_kernel_size", wh, ww) ||
      !plausible_tower_dims({double(h), double(f), double(layers), double(heads), double(channels), double(image),
                             double(patch), double(wh), double(ww), double(downsamples)}) ||
      h % heads != 0 || downsamples > 1000)
    return 0;
  const double H = double(h), F = double(f), P = double(patch), side = double(image / patch);
  const double w = double(wh) * double(ww), T = text_hidden;
  const double tower =
      (double(channels) * P * P * H + H) + side * side * H + double(layers) * siglip_layer(H, F) + 2 * H;
  const double vit_merger = 4 * (H * H + H) + 2 * H + 2 * w * H + (w * H * w * F + w * F) + (w * F * H + H);
  const double m = 4 * H;
  const auto downsample = [&](double out) { return 2 * m + (m * m + m) + (m * out + out); };
  const double n = double(layers), later = double(downsamples - 1);
  add_siglip_layer_linears(H, F, n, linears);
  linears.insert(linears.end(), {{"vit_merger.self_attn.q_proj", H, H, 1},
                                 {"vit_merger.self_attn.k_proj", H, H, 1},
                                 {"vit_merger.self_attn.v_proj", H, H, 1},
                                 {"vit_merger.self_attn.out_proj", H, H, 1},
                                 {"vit_merger.linear_1", w * H, w * F, 1},
                                 {"vit_merger.linear_2", w * F, H, 1},
                                 {"merger.mlp.linear_1", m, m, double(downsamples)},
                                 {"merger.mlp.linear_2", m, T, 1}});
  if (later > 0) linears.push_back({"merger.mlp.linear_2", m, H, later});
  return tower + vit_merger + later * downsample(H) + downsample(T);
}

}  // namespace remat
