// The Qwen vision family's tower (model.visual), as transformers 5.17 builds it beside the language
// model: Qwen2-VL, Qwen2.5-VL, EXAONE 4.5, Qwen3-VL (and its MoE), Qwen3.5 (and its MoE). One
// shape with a few switches, checked against the whole models transformers built
// (reports/hf/vision-towers-shapes-h200.json):
//   patch_embed.proj  a Conv3d of in_channels x temporal_patch_size x patch x patch per hidden, with
//                     a bias from Qwen3-VL on
//   pos_embed         Qwen3-VL and Qwen3.5: num_position_embeddings x hidden
//   blocks            norm1 and norm2 (LayerNorms with biases; RMSNorms without for Qwen2.5-VL and
//                     EXAONE 4.5), qkv and proj with biases (EXAONE 4.5's qkv: hidden + 2 kv heads),
//                     an MLP with biases: fc1/fc2 (plain) or gate/up/down (Qwen2.5-VL, EXAONE 4.5)
//   merger            a norm on hidden, then hidden*merge^2 -> hidden*merge^2 -> out, with biases
//   deepstack         Qwen3-VL: one more merger per deepstack_visual_indexes entry, its LayerNorm on
//                     hidden*merge^2
// Its linear modules, which LoRA targets reach by name and all-linear every one of: the blocks' attn.qkv,
// attn.proj and MLP, the merger's (mlp.0 and mlp.2; linear_fc1 and linear_fc2 from Qwen3-VL on) and the
// deepstack mergers' (PEFT 0.21's all-linear on each wrapper: reports/hf/tower-probe-h200.jsonl).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "hf_vision_towers.hpp"

namespace remat {

namespace {

struct QwenVision {
  const char* outer_type;
  bool qwen2_keys;  // embed_dim is the width, mlp_ratio the MLP's, hidden_size the merger's output
  bool norm_bias;   // LayerNorm (weight and bias) rather than RMSNorm (weight)
  bool gated;       // gate_proj, up_proj, down_proj rather than fc1, fc2
  bool kv_heads;    // qkv rows hidden + 2 * num_key_value_heads * head_dim
  bool qwen3;       // a patch bias, pos_embed, and deepstack mergers where `deepstack`
  bool deepstack;
  // the vision config class's defaults: depth, width, MLP width, merger output, patch
  int64_t depth, hidden, intermediate, out, patch;
};

const QwenVision kQwenVision[] = {
    {"qwen2_vl", true, true, false, false, false, false, 32, 1280, 0, 3584, 14},
    {"qwen2_5_vl", false, false, true, false, false, false, 32, 3584, 3420, 3584, 14},
    {"exaone4_5", false, false, true, true, false, false, 32, 3584, 3420, 3584, 14},
    {"qwen3_vl", false, true, false, false, true, true, 27, 1152, 4304, 3584, 16},
    {"qwen3_vl_moe", false, true, false, false, true, true, 27, 1152, 4304, 3584, 16},
    // Qwen3_5VisionConfig drops deepstack_visual_indexes: no deepstack mergers whatever the file says
    {"qwen3_5", false, true, false, false, true, false, 27, 1152, 4304, 3584, 16},
    {"qwen3_5_moe", false, true, false, false, true, false, 27, 1152, 4304, 3584, 16},
};

const QwenVision* find_qwen_vision(const std::string& outer_type) {
  for (const QwenVision& k : kQwenVision)
    if (outer_type == k.outer_type) return &k;
  return nullptr;
}

}  // namespace

bool is_qwen_vision_wrapper(const std::string& outer_type) { return find_qwen_vision(outer_type) != nullptr; }

double qwen_vision_params(HfJsonReader& v, const std::string& outer_type, std::vector<TowerLinear>& linears) {
  const QwenVision* k = find_qwen_vision(outer_type);
  if (!k) return 0;
  int64_t depth = k->depth, h = k->hidden, f = k->intermediate, out = k->out, patch = k->patch;
  int64_t channels = 3, temporal = 2, merge = 2, heads = 16, kv = 8, positions = 2304;
  v.integer("depth", depth, false);
  if (k->qwen2_keys) {
    double ratio = 4;
    v.integer("embed_dim", h, false);
    v.integer("hidden_size", out, false);
    v.number("mlp_ratio", ratio);
    const double width = std::floor(double(h) * ratio);  // int(embed_dim * mlp_ratio)
    f = std::isfinite(width) && width >= 1 && width <= 1e6 ? int64_t(width) : 0;
  } else {
    v.integer("hidden_size", h, false);
    v.integer("intermediate_size", f, false);
    v.integer("out_hidden_size", out, false);
  }
  v.integer("in_channels", channels, false);
  v.integer("patch_size", patch, false);
  v.integer("temporal_patch_size", temporal, false);
  v.integer("spatial_merge_size", merge, false);
  if (k->kv_heads) {
    v.integer("num_heads", heads, false);
    v.integer("num_key_value_heads", kv, false);
  }
  if (k->qwen3) v.integer("num_position_embeddings", positions, false);
  std::vector<int64_t> deepstack = {8, 16, 24};
  if (k->deepstack) v.integer_list("deepstack_visual_indexes", deepstack);
  const double stacks = k->deepstack ? double(deepstack.size()) : 0;
  if (!plausible_tower_dims({double(depth), double(h), double(f), double(out), double(patch), double(channels),
                             double(temporal), double(merge), double(heads), double(kv), double(positions)}) ||
      (k->kv_heads && h % heads != 0) || stacks > 1e3)
    return 0;

  const double H = double(h), F = double(f), O = double(out);
  const double qkv_rows = k->kv_heads ? H + 2.0 * double(kv) * double(h / heads) : 3 * H;
  const double norm = k->norm_bias ? 2 * H : H;
  const double mlp = k->gated ? 3 * H * F + 2 * F + H : 2 * H * F + F + H;
  const double block = 2 * norm + (H * qkv_rows + qkv_rows) + (H * H + H) + mlp;
  const double patch_embed = double(channels) * double(temporal) * double(patch) * double(patch) * H +
                             (k->qwen3 ? H : 0) + (k->qwen3 ? double(positions) * H : 0);
  const double m = H * double(merge) * double(merge);
  const double merger_mlp = m * m + m + m * O + O;
  const double n = double(depth);
  linears.insert(linears.end(), {{"attn.qkv", H, qkv_rows, n}, {"attn.proj", H, H, n}});
  if (k->gated)
    linears.insert(linears.end(), {{"mlp.gate_proj", H, F, n}, {"mlp.up_proj", H, F, n}, {"mlp.down_proj", F, H, n}});
  else {
    const std::string mlp = k->qwen3 ? "mlp.linear_fc" : "mlp.fc";
    linears.insert(linears.end(), {{mlp + "1", H, F, n}, {mlp + "2", F, H, n}});
  }
  if (k->qwen3) {
    linears.insert(linears.end(), {{"merger.linear_fc1", m, m, 1}, {"merger.linear_fc2", m, O, 1}});
    if (stacks > 0)
      linears.insert(linears.end(), {{"deepstack_merger_list.N.linear_fc1", m, m, stacks},
                                     {"deepstack_merger_list.N.linear_fc2", m, O, stacks}});
  } else
    linears.insert(linears.end(), {{"merger.mlp.0", m, m, 1}, {"merger.mlp.2", m, O, 1}});
  return patch_embed + double(depth) * block + (norm + merger_mlp) + stacks * (2 * m + merger_mlp);
}

namespace {

const char* text_only_causal_lm(const std::string& outer_type) {
  return outer_type == "qwen3_5"       ? "Qwen3_5ForCausalLM"
         : outer_type == "qwen3_5_moe" ? "Qwen3_5MoeForCausalLM"
         : outer_type == "mllama"      ? "MllamaForCausalLM"
         : outer_type == "llama4"      ? "Llama4ForCausalLM"
         : outer_type == "emu3"        ? "Emu3ForCausalLM"
                                       : nullptr;
}

}  // namespace

bool causal_lm_builds_no_tower(const std::string& outer_type) { return text_only_causal_lm(outer_type) != nullptr; }

void apply_wrapper_causal_lm(const std::string& outer_type, ModelSpec& m) {
  // Qwen2AudioForConditionalGeneration.forward computes its loss itself, on the bf16 logits
  if (outer_type == "qwen2_audio") m.logits = ModelLogits::own_bf16_loss;
  // MiniCPMV4_6ForConditionalGeneration.forward runs lm_head on every hidden state; logits_to_keep
  // falls into its **kwargs (the only one of the 323 classes probes/logits_to_keep.py built)
  if (outer_type == "minicpmv4_6") m.logits_every_position = true;
  const char* causal_lm = text_only_causal_lm(outer_type);
  if (!causal_lm || m.idle_params <= 0) return;
  m.notes.push_back("transformers' AutoModelForCausalLM builds " + std::string(causal_lm) + " for model_type " +
                    outer_type + ": the language model alone; the vision tower and merger (" +
                    std::to_string(int64_t(m.idle_params)) +
                    " parameters, which AutoModelForImageTextToText builds beside it) are not held");
  m.idle_params = 0;
  m.tower_linear_modules.clear();
}

}  // namespace remat
