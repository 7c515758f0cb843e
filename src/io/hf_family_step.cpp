// Step 3.5 (transformers' Step3p7TextConfig and modeling_step3p7.py, model_type step3p5; the Hub
// checkpoints' remote code spells the same model with num_attention_groups, moe_layers_enum,
// attention_other_setting and lists of one rope_theta and partial rotary factor per layer).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

// The sliding-window layers' query heads: num_sliding_attention_heads, else the remote code's
// attention_other_setting.num_attention_heads. transformers applies only the head count there, so a
// setting with other key/value heads or another head dim is a model it does not build.
int64_t sliding_heads(HfJsonReader& r, const ModelSpec& m) {
  int64_t heads = m.num_attention_heads;
  if (r.has("num_sliding_attention_heads")) {
    r.integer("num_sliding_attention_heads", heads, true);
    return heads;
  }
  if (!r.has("attention_other_setting") || !r.object["attention_other_setting"].is_object()) return heads;
  HfJsonReader other{r.object["attention_other_setting"], r.file, r.path("attention_other_setting."), r.problems};
  other.integer("num_attention_heads", heads, false);
  int64_t kv_heads = m.num_key_value_heads, head_dim = m.head_dim;
  other.integer("num_attention_groups", kv_heads, false);
  other.integer("head_dim", head_dim, false);
  if (kv_heads != m.num_key_value_heads || head_dim != m.head_dim)
    other.fail(kv_heads != m.num_key_value_heads ? "num_attention_groups" : "head_dim",
               std::to_string(kv_heads != m.num_key_value_heads ? kv_heads : head_dim),
               "is not a model remat can build as transformers does: its sliding-window layers take their own "
               "head count only, with the model's key/value heads and head dim");
  return heads;
}

// The MoE layers: mlp_layer_types, else moe_layers_enum (indices, as a comma-separated string or a
// list), else every layer from the fourth; none where use_moe is false.
void read_moe_layers(HfJsonReader& r, ModelSpec& m) {
  bool use_moe = true;
  r.boolean("use_moe", use_moe);
  if (!use_moe) {
    m.n_routed_experts = m.num_experts_per_tok = m.moe_intermediate_size = m.n_shared_experts = 0;
    return;
  }
  if (r.has("mlp_layer_types") || !r.has("moe_layers_enum")) return read_mlp_layer_types(r, m, 3);
  const nlohmann::json& listed = r.object["moe_layers_enum"];
  std::vector<int64_t> moe;
  if (listed.is_string()) {
    const std::string text = listed.get<std::string>();
    size_t start = 0;
    while (start <= text.size()) {
      const size_t end = std::min(text.find(',', start), text.size());
      const std::string item = text.substr(start, end - start);
      if (item.find_first_not_of(" \t") != std::string::npos) {
        try {
          size_t used = 0;
          moe.push_back(std::stoll(item, &used));
          if (item.find_first_not_of(" \t", used) != std::string::npos) throw std::invalid_argument(item);
        } catch (const std::exception&) {
          return r.fail("moe_layers_enum", listed.dump(), "must list layer indices separated by commas");
        }
      }
      start = end + 1;
    }
  } else {
    r.integer_list("moe_layers_enum", moe);
  }
  std::vector<int64_t> dense;
  for (int64_t i = 0; i < std::min(m.num_hidden_layers, limits::kLayers); ++i)
    if (std::find(moe.begin(), moe.end(), i) == moe.end()) dense.push_back(i);
  set_dense_layers(m, dense);
}

// The rotated share of each head: partial_rotary_factors holds one per layer (the Hub checkpoints:
// 0.5 on the full-attention layers, 1 on the sliding ones). The rotary op keeps nothing for backward
// and its traffic is linear in the share, so the layers' mean prices every layer's rotary together.
void read_rotary_shares(HfJsonReader& r, ModelSpec& m) {
  if (!r.has("partial_rotary_factors")) return;
  const nlohmann::json& shares = r.object["partial_rotary_factors"];
  if (!shares.is_array() || shares.empty())
    return r.fail("partial_rotary_factors", shares.dump(), "must be a list of one share per layer");
  const size_t n = decoder_entries(r, shares.size(), m.num_hidden_layers);
  if (int64_t(n) != m.num_hidden_layers)
    return r.fail("partial_rotary_factors", std::to_string(shares.size()) + " entries",
                  "must hold one share per layer (num_hidden_layers = " + std::to_string(m.num_hidden_layers) + ")");
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const double share = shares[i].is_number() ? shares[i].get<double>() : -1;
    if (!(share > 0 && share <= 1))
      return r.fail("partial_rotary_factors", shares[i].dump(), "must hold shares above 0 and at most 1");
    sum += share;
  }
  m.rotary_fraction = sum / double(n);
  if (std::any_of(shares.begin(), shares.begin() + long(n), [&](const nlohmann::json& s) { return s != shares[0]; }))
    m.notes.push_back(r.path("partial_rotary_factors") + ": the layers rotate different shares of each head; remat " +
                      "prices every layer's rotary at their mean, " + std::to_string(m.rotary_fraction));
}

}  // namespace

// Step 3.5: q/k norms of head_dim, Gemma's RMSNorm, a sigmoid gate per head from its own g_proj (bias-free) on the
// attention output, the sliding-window layers with their own query head count; sigmoid-routed
// experts (n_routed_experts of moe_intermediate_size, the score-correction bias a buffer) beside one
// shared MLP of share_expert_dim, dense layers of intermediate_size. Its MTP layers are built by
// neither transformers' model nor remat (noted).
void step3p5_layer(HfJsonReader& r, ModelSpec& m) {
  qwen3_layer(r, m);
  m.norm_scale_fp32 = true;  // Step3p7RMSNorm: Gemma's, (1 + weight) applied in fp32
  // its code: every SwiGLU clamps (unbounded where swiglu_limits sets none), the experts run as a
  // per-expert loop, and the rotary concatenates its parts at any share
  m.clamped_swiglu = m.experts_python_loop = m.rotary_concatenates = true;
  bool gated = true;  // Step3p7Attention always builds g_proj; the remote code by use_head_wise_attn_gate
  r.boolean("use_head_wise_attn_gate", gated);
  m.attention_head_gate = m.head_gate_sigmoid = gated;
  const int64_t heads = sliding_heads(r, m);
  const std::vector<std::string> types = r.text_list("layer_types");
  const bool sliding = std::find(types.begin(), types.end(), "sliding_attention") != types.end();
  int64_t window = 0;
  r.integer("sliding_window", window, false);
  if (sliding && heads != m.num_attention_heads) {
    if (window < 1)
      r.fail("sliding_window", r.has("sliding_window") ? std::to_string(window) : "",
             "must be a positive window: the sliding_attention layers have their own head count (" +
                 std::to_string(heads) + ")");
    m.windowed_attention_heads = heads;
  }
  read_routed_experts(r, m, "n_routed_experts", 288, 1280, 8);
  int64_t shared = 1280;
  r.integer("share_expert_dim", shared, false);
  if (shared < 0) r.fail("share_expert_dim", std::to_string(shared), "must be 0 or more");
  if (shared > 0) m.set_shared_mlp_width(shared);
  read_moe_layers(r, m);
  read_rotary_shares(r, m);
}

}  // namespace remat
