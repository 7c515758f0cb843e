#include "remat/cost/params.hpp"

#include "remat/cost/exact_blocks.hpp"

namespace remat {

namespace {

double qk_norm_params(const ModelSpec& m, const AttentionShape& a, double tp) {
  const double hd = double(a.head_dim) * (m.qk_norm_bias ? 2 : 1);  // weight (and bias) per norm
  if (!m.norm_affine || m.qk_norm_weightless) return 0;             // norms without weights (NanoChat's on q and k too)
  switch (m.qk_norm) {
    case QkNorm::none:
      return 0;
    case QkNorm::shared:
      return (a.shares_kv ? 1 : 2) * hd;  // q_norm and k_norm of head_dim (no k_norm on shared keys)
    case QkNorm::per_head:
      return double(a.heads + (a.shares_kv ? 0 : a.kv_heads)) * hd / tp;
  }
  return 0;
}

double attention_params(const ModelSpec& m, int64_t layer_index, double tp) {
  const double h = double(m.hidden_size), norm = norm_params(m, h);
  if (m.attention() == AttentionKind::gqa) {
    const AttentionShape a = m.attention_shape(layer_index);
    const double nh = double(a.heads);
    const double hd = double(a.head_dim), vd = double(a.value_head_dim), g = double(a.kv_heads);
    // Gemma 4's keys as values: no v_proj; its KV-shared layers: neither k_proj nor v_proj
    const double k_width = a.shares_kv ? 0 : g * hd, v_width = a.shares_kv || a.values_from_keys ? 0 : g * vd;
    const double qkv_width = nh * hd + k_width + v_width;
    double qkv = h * qkv_width + (m.qkv_bias ? qkv_width : 0);
    if (m.attention_output_gate) qkv += h * nh * hd;  // q_proj makes the output gate too
    if (m.attention_head_gate) qkv += h * nh;         // g_proj: one gate per head
    const bool sinks = m.layer_is_windowed(layer_index) ? m.windowed_layer_sinks : m.full_layer_sinks;
    if (m.attention_sinks || sinks) qkv += nh;                               // one sink logit per head
    const double sub_norm = m.sub_norms ? norm_params(m, nh * vd) / tp : 0;  // BitNet's attn_sub_norm
    const double o = nh * vd * h / tp + (m.o_bias ? h : 0);                  // the bias after the reduction, replicated
    // q, k, v and o projections, split over tp; q/k norms; the input norm
    return qkv / tp + o + qk_norm_params(m, a, tp) + norm + sub_norm;
  }
  const double nh = double(m.num_attention_heads);
  const double d = double(m.qk_nope_head_dim), r = double(m.qk_rope_head_dim), dv = double(m.v_head_dim);
  const double hq = double(m.q_lora_rank), hkv = double(m.kv_lora_rank);
  const double q = hq > 0 ? h * hq + hq + hq * nh * (d + r) / tp  // down, latent norm, up
                          : h * nh * (d + r) / tp;
  const double kv = h * (hkv + r) + hkv + hkv * nh * (d + dv) / tp;          // down (+ k rope), norm, up
  return q + kv + nh * dv * h / tp + norm + indexer_params(m, layer_index);  // o projection, input norm
}

// A dense MLP of width f: gated (gate, up, down) or two matrices (up, down), with
// their biases (the down projection's after the reduction, replicated).
double mlp_params(const ModelSpec& m, double f, double tp) {
  const double h = double(m.hidden_size);
  const double in_matrices = m.mlp_kind == MlpKind::gated ? 2 : 1;
  const double bias = m.mlp_bias ? in_matrices * f / tp + h : m.mlp_down_bias ? h : 0;
  const double sub_norm = m.sub_norms ? norm_params(m, f) / tp : 0;  // BitNet's ffn_sub_norm
  return (in_matrices + 1) * h * f / tp + bias + sub_norm;
}

// Norms of one layer besides the attention's input norm: the MLP's (none when one
// norm feeds attention and MLP in parallel) and sandwich norms.
double layer_norm_params(const ModelSpec& m) {
  const double h = double(m.hidden_size);
  const double mlp_norm = m.parallel_attn_mlp && m.shared_input_norm ? 0 : 1;
  return (mlp_norm + double(m.extra_norms_per_layer)) * norm_params(m, h);
}

}  // namespace

double norm_params(const ModelSpec& m, double width) {
  if (!m.norm_affine) return 0;
  return m.norm_bias ? 2 * width : width;
}

double input_embedding_params(const ModelSpec& m, int64_t tp) {
  const double h = double(m.hidden_size);
  return embedding_params(m, tp) + double(m.extra_input_embedding_rows) * h / double(tp) +
         double(m.position_embeddings) * h +
         (m.embedding_norm && !m.embedding_norm_weightless ? norm_params(m, h) : 0) + per_layer_input_params(m, tp);
}

// Gemma 4's per-layer inputs: embed_tokens_per_layer (vocab x layers d), per_layer_model_projection
// (h x layers d) and per_layer_projection_norm (d); Gemma4TextModel.__init__.
double per_layer_input_params(const ModelSpec& m, int64_t tp) {
  const double d = double(m.per_layer_input_width);
  if (d <= 0) return 0;
  const double width = double(m.num_hidden_layers) * d;
  return (double(m.per_layer_input_vocab) * width + double(m.hidden_size) * width) / double(tp) + norm_params(m, d);
}

double head_extra_params(const ModelSpec& m, int64_t tp) {
  // DeepSeek-V4's hc_head (DeepseekV4HyperHead) collapses the streams: hc_fn (n x n h), hc_base (n), hc_scale
  const double n = double(m.hyper_connections);
  const double hc_head = n > 0 ? n * n * double(m.hidden_size) + n + 1 : 0;
  return norm_params(m, double(m.hidden_size)) + (m.lm_head_bias ? double(m.vocab_size) / double(tp) : 0) + hc_head;
}

namespace {

// Mamba-2 (transformers' NemotronHMamba2Mixer, mamba_ssm's Mamba2): in_proj to z, x, B, C
// and dt; a depthwise conv1d over x, B and C; dt_bias, A_log and D per head; the gated
// RMSNorm over d_inner; out_proj. Heads, groups and d_inner split over tp.
double mamba2_params(const ModelSpec& m, double tp) {
  const double h = double(m.hidden_size), heads = double(m.mamba_num_heads);
  const double inner = heads * double(m.mamba_head_dim);
  const double bc = 2 * double(m.mamba_n_groups) * double(m.ssm_state_size), width = m.mamba2_in_proj_width();
  const double in_proj = h * width + (m.mamba_proj_bias ? width : 0);
  const double conv = (inner + bc) * (double(m.mamba_conv_kernel) + (m.mamba_conv_bias ? 1 : 0));
  const double out_proj = inner * h, norm = m.mamba_gated_norm ? inner : 0;
  return (in_proj + conv + 3 * heads + norm + out_proj) / tp + (m.mamba_out_bias() ? h : 0);
}

// Gated DeltaNet (transformers' Qwen3NextGatedDeltaNet): in_proj_qkvz, in_proj_ba (beta and
// the decay's input per value head), a depthwise conv1d over q, k and v, dt_bias and A_log per
// value head, the gated RMSNorm of the value head dim, out_proj.
// Kimi Delta Attention (transformers' KimiLinearDeltaAttention): q, k, v (h x heads x head_dim
// each), the depthwise conv over them, f_a (h x head_dim) and f_b (head_dim x width) with a bias per
// channel and A_log per head, b_proj (h x heads), g_a and g_b as f_a and f_b, the norm of one head's
// width, o_proj; split over tp by head.
double kimi_delta_params(const ModelSpec& m, double tp) {
  const double h = double(m.hidden_size), heads = double(m.linear_num_value_heads);
  const double hd = double(m.linear_value_head_dim), width = heads * hd;
  const double projections = 3 * h * width + 2 * (h * hd + hd * width) + h * heads + width * h;
  return (projections + 3 * width * double(m.linear_conv_kernel) + width + heads) / tp + hd;
}

double gated_deltanet_params(const ModelSpec& m, double tp) {
  if (m.kimi_delta_attention) return kimi_delta_params(m, tp);
  const double h = double(m.hidden_size), vh = double(m.linear_num_value_heads);
  const double kd = double(m.linear_num_key_heads) * double(m.linear_key_head_dim);
  const double vd = vh * double(m.linear_value_head_dim);
  const double in_proj = h * (2 * kd + 2 * vd) + h * 2 * vh;
  const double conv = (2 * kd + vd) * double(m.linear_conv_kernel);
  return (in_proj + conv + 2 * vh + vd * h) / tp + double(m.linear_value_head_dim);
}

// LFM2's short convolution (transformers' Lfm2ShortConv): in_proj (h x 3h), a depthwise conv1d
// (h x kernel), out_proj (h x h), each with a bias under conv_bias; split over tp by channel.
double short_conv_params(const ModelSpec& m, double tp) {
  const double h = double(m.hidden_size), bias = m.short_conv_bias ? 1 : 0;
  const double in_proj = 3 * h * (h + bias), conv = h * (double(m.short_conv_kernel) + bias);
  return (in_proj + conv + h * h) / tp + bias * h;
}

// Mamba-1 (transformers' MambaMixer, FalconMambaMixer, JambaMambaMixer): in_proj (h x 2 inner), a
// depthwise conv1d (inner x kernel), x_proj (inner x (dt_rank + 2 state)), dt_proj (dt_rank x inner,
// with bias), A_log (inner x state), D (inner), out_proj (inner x h); Jamba's RMSNorms of dt_rank,
// state and state. Split over tp by channel.
double mamba1_params(const ModelSpec& m, double tp) {
  const double h = double(m.hidden_size), inner = double(m.mamba1_inner), rank = double(m.mamba1_dt_rank);
  const double state = double(m.ssm_state_size), bias = m.mamba_proj_bias ? 1 : 0;
  const double in_proj = 2 * inner * (h + bias);
  const double conv = inner * (double(m.mamba_conv_kernel) + (m.mamba_conv_bias ? 1 : 0));
  const double scan = inner * (rank + 2 * state) + inner * (rank + 1) + inner * state + inner;
  const double norms = m.mamba1_inner_norms ? rank + 2 * state : 0;
  return (in_proj + conv + scan + inner * h) / tp + bias * h + norms;
}

// MiniMax's lightning attention (transformers' MiniMaxLightningAttention): qkv_proj (h x 3 heads x
// head_dim), output_gate (h x heads x head_dim), out_proj, and the RMSNorm over heads x head_dim, all
// without bias; split over tp by head.
double lightning_params(const ModelSpec& m, double tp) {
  const double h = double(m.hidden_size);
  const double width = double(m.num_attention_heads) * double(m.attention_shape_of(false).head_dim);
  return (5 * h * width + width) / tp;
}

// DeepSeek-V4's attention (DeepseekV4Attention.__init__): q_a_proj (h x q_lora_rank) and its norm,
// q_b_proj (to heads x head_dim), kv_proj (to one head) and its norm, o_a_proj (each of o_groups
// groups of heads to o_lora_rank), o_b_proj (to h), a sink per head. Its compressor (CSA: two
// series, so 2 x head_dim wide; HCA: one) has kv_proj, gate_proj, a position bias per pooled slot
// and a norm; CSA's indexer the same at index_head_dim plus q_b_proj from the query latent and
// weights_proj. Not split over tp (transformers ships no tensor-parallel plan for it).
double compressed_attention_params(const ModelSpec& m, int64_t layer_index) {
  const double h = double(m.hidden_size), nh = double(m.num_attention_heads), hd = double(m.head_dim);
  const double q_latent = double(m.q_lora_rank), grouped = double(m.o_groups) * double(m.o_lora_rank);
  const double attention =
      h * q_latent + q_latent + q_latent * nh * hd + h * hd + hd + nh * hd * double(m.o_lora_rank) + grouped * h + nh;
  const auto compressor = [&](double rate, double series, double dim) {
    return 2 * h * series * dim + rate * series * dim + dim;
  };
  switch (m.compressed_layer(layer_index)) {
    case CompressedAttention::sliding:
      return attention;
    case CompressedAttention::heavy:
      return attention + compressor(double(m.hca_rate), 1, hd);
    case CompressedAttention::sparse:
      break;
  }
  return attention + compressor(double(m.csa_rate), 2, hd) + indexer_of_compressed_params(m);
}

// One manifold-constrained hyper-connection (DeepseekV4HyperConnection): fn ((2 + n) n x n h), base
// ((2 + n) n) and three scales, for n residual streams.
double hyper_connection_params(const ModelSpec& m) {
  const double n = double(m.hyper_connections), h = double(m.hidden_size);
  return n > 0 ? (2 + n) * n * n * h + (2 + n) * n + 3 : 0;
}

// The mixer's parameters with its input norm.
double mixer_params(const ModelSpec& m, int64_t layer_index, double tp) {
  const double norm = norm_params(m, double(m.hidden_size));
  switch (m.mixer(layer_index)) {
    case Mixer::attention:
      return attention_params(m, layer_index, tp);
    case Mixer::mamba2:
      return mamba2_params(m, tp) + norm;
    case Mixer::gated_deltanet:
      return gated_deltanet_params(m, tp) + norm;
    case Mixer::short_conv:
      return short_conv_params(m, tp) + norm;
    case Mixer::mamba1:
      return mamba1_params(m, tp) + norm;
    case Mixer::lightning:
      return lightning_params(m, tp) + norm;
    case Mixer::attention_mamba2:  // one input norm for both (attention_params counts it)
      return attention_params(m, layer_index, tp) + mamba2_params(m, tp);
    case Mixer::compressed_attention:
      return compressed_attention_params(m, layer_index) + norm;
    case Mixer::none:
      return 0;
  }
  return 0;
}

// Mllama's cross-attention decoder layer (MllamaCrossAttentionDecoderLayer): q, k, v and o of the
// model's attention shape with q and k norms of head_dim, the input and post-attention norms, two
// scalar gates (cross_attn_attn_gate, cross_attn_mlp_gate) and the dense MLP.
double cross_attention_layer_params(const ModelSpec& m, int64_t layer_index, double tp) {
  const double h = double(m.hidden_size), head_dim = double(m.attention_shape(layer_index).head_dim);
  return attention_params(m, layer_index, tp) + 2 * head_dim + 2 + norm_params(m, h) +
         mlp_params(m, double(m.mlp_width(layer_index)), tp);
}

}  // namespace

ParamCount layer_params(const ModelSpec& m, int64_t layer_index, int64_t tp, int64_t ep) {
  const double h = double(m.hidden_size), t = double(tp);
  ParamCount p;
  if (m.layer_is_skipped_cross_attention(layer_index)) {  // held, never run: no gradient
    p.dense = p.untrained = cross_attention_layer_params(m, layer_index, t);
    return p;
  }
  p.dense = mixer_params(m, layer_index, t);
  if (m.mixer(layer_index) == Mixer::compressed_attention &&
      m.compressed_layer(layer_index) == CompressedAttention::sparse)
    p.untrained = indexer_of_compressed_params(m);
  p.dense += 2 * hyper_connection_params(m);  // one before the attention, one before the MoE
  if (!m.has_ffn(layer_index)) return p;
  p.dense += layer_norm_params(m);
  if (m.layer_is_moe(layer_index)) {
    const double f = double(m.moe_intermediate_size);
    // experts are MLPs of the model's kind: gated (gate, up, down) or two matrices (Nemotron-H)
    const double matrices = m.mlp_kind == MlpKind::gated ? 3 : 2;
    p.dense += h * double(m.n_routed_experts);  // router
    if (m.router_bias) p.dense += double(m.n_routed_experts);
    if (m.router_score_bias_param) p.dense += double(m.n_routed_experts), p.untrained += double(m.n_routed_experts);
    if (m.router_scales) p.dense += h + double(m.n_routed_experts);  // Gemma 4's router scales
    p.dense += matrices * h * double(m.shared_mlp_width()) / t;      // shared experts
    if (m.shared_expert_gate) p.dense += h;                          // its sigmoid gate, h x 1
    const double io = double(m.expert_io_width());
    p.expert = matrices * io * f * double(m.n_routed_experts) / double(ep);  // routed experts
    // their biases: the input matrices' (f each) and the output's (io)
    if (m.expert_bias) p.expert += ((matrices - 1) * f + io) * double(m.n_routed_experts) / double(ep);
    // NemotronHMoE's fc1_latent_proj and fc2_latent_proj (biases by mlp_bias)
    if (m.moe_latent_size > 0) p.dense += (2 * h * io + (m.mlp_bias ? h + io : 0)) / t;
  } else {
    p.dense += mlp_params(m, double(m.mlp_width(layer_index)), t);
  }
  // Gemma 4's per-layer input branch: per_layer_input_gate (h x d), per_layer_projection (d x h) and
  // post_per_layer_input_norm
  if (m.per_layer_input_width > 0) p.dense += 2 * h * double(m.per_layer_input_width) / t + norm_params(m, h);
  return p;
}

// A DSA lightning indexer (DeepseekV32Indexer.__init__): wq_b (query latent -> heads x dim), wk
// (hidden -> dim), k_norm (a LayerNorm with bias) and weights_proj (hidden -> heads); not split over tp.
double indexer_params(const ModelSpec& m, int64_t layer_index) {
  if (!m.layer_has_indexer(layer_index)) return 0;
  const double heads = double(m.index_n_heads), dim = double(m.index_head_dim), h = double(m.hidden_size);
  return double(m.q_lora_rank) * heads * dim + h * dim + 2 * dim + h * heads;
}

// CSA's lightning indexer (DeepseekV4Indexer): its own compressor at index_head_dim, q_b_proj and
// weights_proj. Its top-k indices carry no gradient, so none of these trains.
double indexer_of_compressed_params(const ModelSpec& m) {
  const double h = double(m.hidden_size), heads = double(m.csa_index_heads), dim = double(m.csa_index_head_dim);
  return 2 * h * 2 * dim + double(m.csa_rate) * 2 * dim + dim + double(m.q_lora_rank) * heads * dim + h * heads;
}

double embedding_params(const ModelSpec& m, int64_t tp) {
  return double(m.vocab_size) * double(m.hidden_size) / double(tp);
}

ParamCount mtp_params(const ModelSpec& m, int64_t tp, int64_t ep) {
  ParamCount p;
  if (m.num_nextn_predict_layers <= 0) return p;
  const double h = double(m.hidden_size);
  // the module's layer is built like the main model's last MoE layer (index past the last layer)
  const ParamCount layer = layer_params(m, m.num_hidden_layers, tp, ep);
  const double per_module_dense = layer.dense + 2 * h * h / double(tp) + 3 * h;
  p.dense = per_module_dense * double(m.num_nextn_predict_layers);
  p.expert = layer.expert * double(m.num_nextn_predict_layers);
  return p;
}

double model_params(const ModelSpec& m, int64_t layers) {
  double total =
      input_embedding_params(m, 1) + (m.tie_word_embeddings ? 0 : embedding_params(m, 1)) + head_extra_params(m, 1);
  for (int64_t i = 0; i < layers; ++i) total += layer_params(m, i, 1, 1).total();
  return total;
}

StaticBytes bytes_per_param(const TrainingSpec& t, double shard) {
  const bool mixed = t.precision == Precision::mixed;
  StaticBytes b;
  if (t.params_fp32_autocast) {  // fp32 parameters, gradients and moments: no separate master copy
    b.weights = 4, b.gradients = 4;
    b.optimizer = t.optimizer == Optimizer::adam ? 8 : t.optimizer == Optimizer::sgd ? 4 : 0;
    if (t.zero_stage >= 1) b.optimizer /= shard;
    if (t.zero_stage >= 2) b.gradients /= shard;
    return b;
  }
  b.weights = 2;                // bf16 weights
  b.gradients = mixed ? 4 : 2;  // fp32 main grads under mixed precision
  double opt = 0;
  if (t.optimizer != Optimizer::none) {
    const double moment = mixed ? 4 : 2;
    opt = (mixed ? 4 : 0)  // fp32 master weights
          + moment * (t.optimizer == Optimizer::adam ? 2 : 1);
  }
  b.optimizer = t.zero_stage >= 1 ? opt / shard : opt;
  if (t.zero_stage >= 2) b.gradients /= shard;
  return b;
}

StaticBytes static_bytes(const ParamCount& p, const TrainingSpec& t) {
  const double dense_shard = double(t.dp);
  const double expert_shard = double(t.dp * t.tp) / double(t.ep);  // expert data-parallel size
  const StaticBytes d = bytes_per_param(t, dense_shard), e = bytes_per_param(t, expert_shard);
  const double trained = p.dense - p.untrained;
  return {p.dense * d.weights + p.expert * e.weights, trained * d.gradients + p.expert * e.gradients,
          trained * d.optimizer + p.expert * e.optimizer};
}

}  // namespace remat
