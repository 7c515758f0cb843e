#pragma once
// Model dimensions, named as in Hugging Face config.json.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace remat {

enum class AttentionKind { gqa, mla };

// A layer's linear module as PEFT's target_modules matches it (the end of its path: q_proj, or
// attn.c_proj where GPT-2's MLP has a c_proj too) and the matrix it computes: q, k, v, o, gate, up,
// down, router, a fused qkv or gate_up, or "" where remat prices no adapter on it (DeepSeek's
// kv_b_proj, a Mamba mixer's in_proj).
struct LinearModule {
  std::string name, matrix;
};

// A linear module of the tower beside a multimodal language model (ModelSpec::idle_params): its path
// within the tower's repeated unit, as PEFT's target_modules reach it by its end (self_attn.q_proj,
// merger.down_proj), its widths and how many the tower holds.
struct TowerLinear {
  std::string path;
  double in = 0, out = 0, count = 0;
};

// The feed-forward of a dense layer: gated (act(gate) * up, then down: LLaMA's
// SwiGLU, Gemma's GeGLU) or two matrices (up, act, down: GPT-2, GPT-NeoX, Falcon,
// StarCoder2, Nemotron's relu^2).
enum class MlpKind { gated, two_matrix };
// How a causal LM's forward hands its logits to the loss, as transformers 5.17 writes it:
//   standard         bf16 logits to transformers' loss function (ForCausalLMLoss upcasts them)
//   fp32_in_forward  lm_head(h).float() (MllamaForCausalLM, NemotronHForCausalLM): that upcast is a no-op
//   own_bf16_loss    its own nn.CrossEntropyLoss on a shifted .contiguous() copy of the bf16 logits, no
//                    upcast (Qwen2AudioForConditionalGeneration)
enum class ModelLogits { standard, fp32_in_forward, own_bf16_loss };
// RMSNorm (weight only) or LayerNorm (mean and variance; weight, with or without bias).
enum class NormKind { rms, layer };
// How a model's own code runs its LayerNorm on an eager stack (the hf profile): torch's native
// kernel; that kernel on an fp32 copy of the input (OLMo 1's OlmoLayerNorm); or written out as fp32
// ops (Cohere's CohereLayerNorm: mean, x - mean twice, rsqrt, weight * normalized).
enum class LayerNormCode { native, fp32_input, eager_fp32 };
// Norms on queries and keys before rotary: none; one weight of head_dim shared by
// every head (Qwen3, Gemma 3); a weight per head (OLMo-2's norm over all heads,
// Cohere's and StableLM's per-head norms): (heads + kv heads) x head_dim.
enum class QkNorm { none, shared, per_head };

// A layer's token mixer: softmax attention (GQA or MLA), a Mamba-2 (SSD) state-space
// mixer, a Gated DeltaNet linear-attention mixer, none (Nemotron-H's MLP-only blocks),
// LFM2's gated short convolution, a Mamba-1 (selective scan) mixer, or attention and a Mamba-2
// mixer side by side on one normed input, their outputs summed (Falcon-H1's parallel hybrid), or
// MiniMax's lightning attention (linear attention by blocks with a per-head decay), or DeepSeek-V4's
// attention (one shared key-value head over a sliding window, alone or with keys pooled by a compressor).
enum class Mixer : uint8_t {
  attention,
  mamba2,
  gated_deltanet,
  none,
  short_conv,
  mamba1,
  attention_mamba2,
  lightning,
  compressed_attention
};
// DeepSeek-V4's attention layers (layer_types): the sliding window alone, with compressed sparse
// attention (CSA: overlapping pooled keys and a lightning indexer's top-k) or heavily compressed (HCA).
enum class CompressedAttention : uint8_t { sliding, sparse, heavy };
// Layer kinds: mixer x feed-forward (dense, MoE, none); kind 0 is attention + dense, 1 attention + MoE;
// 12-14: sliding-window attention x feed-forward (a framework may run those layers differently);
// 15-20: attention reusing an earlier layer's keys and values (Gemma 4's KV-shared layers), full
// (15-17) and sliding-window (18-20), x feed-forward; 21-23: short convolution x feed-forward;
// 24-26: Mamba-1 x feed-forward; 27-29: attention beside Mamba-2 x feed-forward; 30-32: lightning
// attention x feed-forward; 33-41: DeepSeek-V4's attention (sliding, CSA, HCA) x feed-forward.
constexpr int kLayerKinds = 42;
constexpr int kWindowedAttentionKinds = 12;
constexpr int kSharedKvAttentionKinds = 15;
constexpr int kShortConvKinds = 21;
constexpr int kMamba1Kinds = 24;
constexpr int kParallelHybridKinds = 27;
constexpr int kLightningKinds = 30;
constexpr int kCompressedAttentionKinds = 33;

// The projections of one attention layer: query heads, key/value heads and head dim, and
// whether its keys double as its values (Gemma 4's attention_k_eq_v: no v_proj; the values
// are the key projection's output, normed on their own, so they still take their own memory).
struct AttentionShape {
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  bool values_from_keys = false;
  bool shares_kv = false;      // keys and values are an earlier layer's: no k/v projections or norms
  int64_t value_head_dim = 0;  // each value head's width: head_dim, or narrower (MiMo-V2-Flash)
};

// One layer's own shape where layers of one kind differ (Nemotron-NAS's block_configs: each
// layer its own FFN width and key/value heads). 0 keeps the model's value.
struct LayerVariant {
  int64_t mlp_width = 0, kv_heads = 0;
  bool operator==(const LayerVariant&) const = default;
};

// Which layers use the MoE feed-forward.
enum class MoeLayerRule {
  // DeepSeek: index >= first_k_dense_replace and index % moe_layer_freq == 0.
  dense_prefix,
  // Qwen2-MoE / Qwen3-MoE decoder_sparse_step, Llama 4 interleave_moe_layer_step:
  // (index + 1) % moe_layer_freq == 0 and index not in dense_mlp_layers.
  every_step,
};

// Rotary scaling as config.json's rope_scaling (or rope_parameters) gives it; changes no
// figure, only the Megatron-LM flags.
struct RopeScaling {
  std::string type;  // rope_type (or type): "" none, llama3, linear, yarn, dynamic, longrope, mrope, ...
  double factor = 1;
  int64_t original_context_tokens = 0;               // original_max_position_embeddings (0: absent)
  double low_freq_factor = 1, high_freq_factor = 4;  // llama3
  double beta_fast = 32, beta_slow = 1;              // yarn
  double mscale = 0, mscale_all_dim = 0;             // yarn as DeepSeek writes it (0: absent)
  double attention_factor = 0;                       // yarn: the logit scale, when given (0: absent)
  bool truncate = true;                              // yarn: the correction range rounded to integers
  double llama4_scaling_beta = 0;  // Ministral 3's llama_4_scaling_beta: queries scaled by position (0: none)
};

struct ModelSpec {
  std::string name;
  std::string source;
  double published_params_B = 0;  // published total, billions (0 = unknown)

  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // dense MLP size
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // GQA per-head dim (hidden_size / heads when absent)
  int64_t vocab_size = 0;
  int64_t num_hidden_layers = 0;
  bool tie_word_embeddings = false;

  // Mixture of experts (n_routed_experts == 0: dense model).
  int64_t n_routed_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;
  int64_t n_shared_experts = 0;
  // latent MoE (Nemotron 3 Super / Ultra, moe_latent_size; 0: none): the routed experts take and
  // return this width, between a projection down from hidden_size and one back up
  int64_t moe_latent_size = 0;
  // one shared expert's width where it is not moe_intermediate_size (0): Granite 4.0's shared MLP
  // of shared_intermediate_size beside narrower experts, loaded as one such expert
  int64_t shared_expert_intermediate_size = 0;
  int64_t first_k_dense_replace = 0;
  int64_t moe_layer_freq = 1;
  MoeLayerRule moe_layer_rule = MoeLayerRule::dense_prefix;
  std::vector<int64_t> dense_mlp_layers;  // every_step: layers kept dense (Qwen's mlp_only_layers), sorted

  // DeepSeek-V3 multi-token prediction modules (num_nextn_predict_layers): each one
  // MoE layer, eh_proj (2h x h) and three norms; embedding and head shared.
  int64_t num_nextn_predict_layers = 0;
  // Parameters a multimodal checkpoint builds beside its language model that a text-only step never
  // runs (a vision tower and its projector): held as weights under --framework hf, not in `params`
  double idle_params = 0;
  // Module names the tower shares with the language model's projections, in a class PEFT cannot
  // adapt (Gemma 4's Gemma4ClippableLinear): a LoRA target naming one raises in PEFT
  std::vector<std::string> tower_modules_peft_refuses;
  std::string tower_peft_refuses;  // the tower and its class, as a message names them
  // The tower's linear modules, every one or (where remat does not know them) none: a LoRA target name
  // reaching one, and all-linear, put an adapter on it too, held and never trained
  // (LoraTargets::tower_adapter_width)
  std::vector<TowerLinear> tower_linear_modules;

  // How the layer is built (defaults: LLaMA's). Biases and norms change parameters
  // only: a bias adds to its GEMM's output in the same kernel and its gradient is the
  // sum of the output gradient, so it saves nothing.
  MlpKind mlp_kind = MlpKind::gated;
  std::string hidden_act = "silu";  // the MLP's activation as config.json names it
  NormKind norm_kind = NormKind::rms;
  bool norm_bias = false;     // LayerNorm with a bias (GPT-NeoX, Falcon, StableLM)
  bool qk_norm_bias = false;  // the q and k norms are LayerNorms with a bias too (Persimmon, Phi-1's qk_layernorm)
  bool norm_affine = true;    // false: norms without weights (OLMo 1's non-parametric LayerNorm)
  LayerNormCode layer_norm_code = LayerNormCode::native;
  bool embedding_norm = false;             // a norm on the embeddings before the first layer (BLOOM)
  bool embedding_norm_weightless = false;  // that norm has no weight (Muse-Glimmer's embed_norm)
  bool qkv_bias = false;                   // q, k, v projections (Qwen2, StarCoder2, GPT-NeoX)
  bool fused_qkv_projection = false;       // one q|k|v projection its code slices into views (Phi-3's qkv_proj)
  bool qkv_clamp = false;                  // that projection's output clamped (DBRX's clip_qkv): the clamp saves it
  // The layer's linear modules by PEFT's names (LLaMA's unless the family names them otherwise).
  // Complete: every nn.Linear of a layer is listed, so a target matching none names no module.
  std::vector<LinearModule> linear_modules = {{"q_proj", "q"},      {"k_proj", "k"},       {"v_proj", "v"},
                                              {"o_proj", "o"},      {"gate_proj", "gate"}, {"up_proj", "up"},
                                              {"down_proj", "down"}};
  bool linear_modules_complete = true;
  double buffer_bytes = 0;  // registered non-parameter buffers (GPTBigCode's causal-mask bias), per model copy
  bool sdpa_mask_materialized = false;  // its code hands sdpa an s x s mask, not is_causal (Falcon)
  // its code hands sdpa one key/value head for all query heads (Falcon-7B's multi_query), which only
  // torch's math kernel takes: it runs in fp32 and materializes the probabilities
  bool sdpa_broadcasts_kv_heads = false;
  // its code copies the keys and values out to every query head before the attention (Falcon's new
  // decoder architecture: _split_heads flattens their broadcast), which saves those copies
  bool kv_copied_to_query_heads = false;
  double residual_dropout = 0;  // dropout on each block's output before the residual add (GPT-2's resid_pdrop)
  // dropout on the embeddings' output before the first layer (StarCoder2's embedding_dropout, GPT-2's
  // embd_pdrop): its bool mask is saved where that output needs a gradient
  double embedding_dropout = 0;
  // its own eager attention casts q and k to fp32 before QK^T, which saves the fp32 copies
  // (GPT-J, CodeGen, GPT-Neo: `_attn`)
  bool eager_qk_fp32 = false;
  // its own eager attention subtracts the row max and runs the softmax in bf16, an attention sink
  // per head as one more column (GPT-OSS, MiMo-V2-Flash: eager_attention_forward): no fp32 probabilities
  bool eager_softmax_bf16 = false;
  bool eager_softmax_subtracts_max = false;  // ... after subtracting the row max (GPT-OSS, MiMo-V2-Flash)
  // transformers runs it with eager attention only (_supports_sdpa False: GPT-OSS, MiMo-V2-Flash)
  bool eager_attention_only = false;
  // its transformers class does not support gradient checkpointing (OpenAI GPT, CTRL)
  bool gradient_checkpointing_unsupported = false;
  // dropout on the attention probabilities in training (attn_pdrop, attention_dropout): under eager
  // attention a bool mask and the dropped copy are saved; sdpa's kernels draw it in place
  double attention_dropout = 0;
  // its experts' activation clamps gate and up, then gate * sigmoid(alpha * gate) * (up + 1): three
  // more expert-width tensors saved than a SwiGLU's (GPT-OSS: GptOssExperts._apply_gate)
  bool clamped_glu_experts = false;
  // parameters without activations of their own: a learned sink logit per query head in every
  // attention layer, biases on the routed experts' matrices and on the router (GPT-OSS)
  bool attention_sinks = false;
  // the sinks in one kind of layer only (MiMo-V2-Flash: add_swa_attention_sink_bias,
  // add_full_attention_sink_bias)
  bool windowed_layer_sinks = false, full_layer_sinks = false;
  bool expert_bias = false;
  bool router_bias = false;
  // the router's score correction bias is a parameter that never trains (ERNIE 4.5's moe_statics:
  // nn.Parameter of 1 x experts, requires_grad False), where other families keep it as a buffer
  bool router_score_bias_param = false;
  // every SwiGLU (dense, shared, experts) clamps silu(gate) and up before their product, bounded or not
  // (Step 3.5's swiglu_limits): each clamp saves its input, the product the two clamped tensors
  bool clamped_swiglu = false;
  // transformers' per-expert loop with no experts-implementation switch (Step 3.5's Step3p7Experts):
  // each expert's weighted output, cast back from the fp32 routing weights' product, is summed into
  // place by index_add_, which saves it
  bool experts_python_loop = false;
  // transformers' Llama4TextMoe: every expert runs on every token (hidden.repeat over the experts,
  // scaled by the token's score, zero off its top-k), then the outputs summed over the experts
  bool experts_run_all_tokens = false;
  // transformers runs its experts through torch._grouped_mm (the other families'), which autocast
  // leaves in the parameters' dtype
  bool experts_grouped_mm() const { return !experts_run_all_tokens && !experts_python_loop; }
  // its rotary embedding concatenates the rotated and the passed parts (partial rotary, or Step 3.5's
  // code at any share): q and k come out heads-major, and so does sdpa's output
  bool rotary_concatenates = false;
  // its decoder layer returns eager attention's probabilities beside the hidden state (GPT-J's
  // GPTJBlock): a reentrant checkpoint's replay holds them, and autograd hands the checkpoint a
  // zero gradient of their size, through the layer's backward
  bool layer_returns_attention_probs = false;
  bool o_bias = false;                // attention output projection
  bool mlp_bias = false;              // every MLP matrix
  bool mlp_down_bias = false;         // the MLP's output projection only (TeleChat's down_proj)
  bool lm_head_bias = false;          // GPT-J, Phi-1
  bool parallel_attn_mlp = false;     // x + attn(norm(x)) + mlp(norm'(x)): one residual (GPT-J, Cohere, Falcon)
  bool shared_input_norm = false;     // parallel with one norm feeding both (GPT-J, Cohere, Falcon-7B)
  int64_t extra_norms_per_layer = 0;  // sandwich norms after attention and MLP (GLM-4, Gemma 2/3)
  // the layer's two norms on the attention's and the MLP's outputs, none on their inputs (OLMo-2/3,
  // EXAONE 4: Olmo2DecoderLayer); their linears read the residual stream itself
  bool post_norms_only = false;
  double rotary_fraction = 1.0;  // share of each head's dimensions rotated (partial rotary)
  QkNorm qk_norm = QkNorm::none;
  bool qk_norm_weightless = false;  // the q and k norms have no weight (Muse-Glimmer's qk_norm)
  int64_t position_embeddings = 0;  // learned absolute positions (GPT-2's wpe rows); 0: rotary or none
  // the longest sequence the model can index (a learned position table less its offset, MPT's ALiBi
  // built for max_seq_len) and the config key that sets it; 0: no bound
  int64_t max_sequence_tokens = 0;
  std::string max_sequence_key;
  bool sinusoidal_positions = false;  // fixed sinusoids added to the embeddings, no parameters (XGLM, CTRL)
  bool post_layer_norm = false;       // LayerNorms after each residual add, none at the end (OpenAI GPT)

  // Numerics and attention masks: they change no memory, FLOP or time figure, only the
  // Megatron-LM flags that build the same model.
  double rope_theta = 10000;          // rotary base (rope_theta)
  double rope_local_theta = 0;        // windowed layers' own rotary base (Gemma 3's rope_local_base_freq); 0: none
  RopeScaling rope_scaling;           // rotary scaling (type "": none)
  double norm_eps = 1e-5;             // epsilon of every norm (rms_norm_eps, layer_norm_eps, layer_norm_epsilon)
  int64_t sliding_window_tokens = 0;  // keys a windowed layer's query sees, itself included (sliding_window); 0: none
  std::vector<bool> windowed_layers;  // which layers use that window; empty: every layer
  // Gemma 4 (Gemma4TextConfig.__post_init__): the last layer is full attention whatever
  // layer_types says, so a model cut to fewer layers ends on a full-attention layer (set_layer_count)
  bool last_layer_full_attention = false;
  int64_t attention_chunk_tokens = 0;       // Llama 4's chunked attention (attention_chunk_size); 0: none
  std::vector<bool> nope_layers;            // layers without rotary (Llama 4's no_rope_layers, inverted); empty: none
  bool qk_l2_norm = false;                  // Llama 4: weightless L2 norm on q and k (on its rotary layers)
  bool nope_attention_temperature = false;  // Llama 4's attn_temperature_tuning on the layers without rotary
  // the MoE router casts its input to fp32 and its linear saves that copy (transformers'
  // DeepSeek routers: deepseek_v2, deepseek_v3, deepseek_v32, glm_moe_dsa)
  bool router_fp32_input = false;
  // PhiMoE's router (PhimoeTopKRouter, input_jitter_noise > 0): in training it multiplies its input in
  // place by a uniform noise tensor, which the product saves
  bool router_input_jitter = false;
  // transformers' DeepSeek MoE forward (every family whose router is DeepSeek's, router_fp32_input):
  // the routed experts run first, then the shared experts on the MoE's input, so autograd runs the
  // shared experts' backward first
  bool shared_experts_after_routed() const { return router_fp32_input && n_shared_experts > 0; }
  // PEFT (0.21, utils/transformers_weight_conversion.py) retargets gate_proj, up_proj and down_proj at
  // the routed experts' stacked gate_up_proj and down_proj parameters for the model_types transformers
  // 5.17 converts as Qwen2-MoE (conversion_mapping.py): see lora_placement
  bool experts_peft_converted = false;
  // what PEFT's all-linear reaches of the MoE router is known (set_linear_modules: converted, an
  // nn.Linear, or a module of its own PEFT leaves alone); false: all-linear is refused on it
  bool router_reading_known = false;
  // PhiMoE's router is an nn.Linear subclass returning a tuple: PEFT wraps it, and the adapted forward
  // raises (AttributeError on the tuple's dtype; all-linear-unpriced-h200.jsonl)
  bool router_adapter_raises = false;
  // PEFT raises on LoRA reaching any module named out_proj or conv1d (Nemotron-H, Falcon-H1, Mamba)
  bool peft_refuses_out_proj = false;
  // the file's wrapper builds encoders (a vision or audio tower, projectors) remat does not count: PEFT's
  // all-linear would adapt their linear modules too
  bool encoders_uncounted = false;
  bool shared_expert_gate = false;  // Qwen2-MoE: sigmoid(x W_g), W_g of h x 1, scales the shared experts' output

  // Hybrid layers (empty: every layer attention + feed-forward). Nemotron-H's
  // hybrid_override_pattern gives each layer one mixer or one feed-forward;
  // Qwen3-Next's layer_types put a Gated DeltaNet or attention before each MoE.
  std::vector<Mixer> layer_mixers;
  std::vector<bool> layer_has_ffn;
  // Mamba-2 (SSD): heads x head_dim = d_inner, n_groups of B and C with ssm_state_size each.
  int64_t mamba_num_heads = 0, mamba_head_dim = 0, ssm_state_size = 0, mamba_n_groups = 1;
  int64_t mamba_conv_kernel = 4, mamba_chunk_size = 256;
  bool mamba_proj_bias = false, mamba_conv_bias = true;
  // Mamba-2's in_proj output: z and x (heads x head_dim each), B and C (groups x state each), dt per head
  double mamba2_in_proj_width() const {
    const double inner = double(mamba_num_heads) * double(mamba_head_dim);
    return 2 * inner + 2 * double(mamba_n_groups) * double(ssm_state_size) + double(mamba_num_heads);
  }
  bool mamba_out_proj_bias_own = false, mamba_out_proj_bias = false;  // own: not mamba_proj_bias (Falcon-H1)
  // The gated RMSNorm before out_proj (Falcon-H1's mamba_rms_norm false: y * silu(z) alone), and
  // whether it normalizes before gating (Falcon-H1's mamba_norm_before_gate) or gates first (Zamba2's)
  bool mamba_gated_norm = true, mamba_norm_before_gate = false;
  // Falcon-H1's muP multipliers as transformers applies them: the Mamba-2 mixer reads its own scaled
  // copy of the normed input (ssm_in_multiplier) and the logits are scaled after the head (one more pass)
  bool mamba_input_scaled_copy = false, logits_multiplied = false;
  // How the causal LM's own forward hands its logits to the loss (ModelLogits)
  ModelLogits logits = ModelLogits::standard;
  // The class's forward takes no logits_to_keep, so GRPO's completion log-probabilities (TRL passes it)
  // come from every position's logits (MiniCPMV4_6ForConditionalGeneration in transformers 5.17)
  bool logits_every_position = false;
  // Gated DeltaNet: key heads x key dim for q and k, value heads x value dim for v, z and the output.
  int64_t linear_num_key_heads = 0, linear_num_value_heads = 0, linear_key_head_dim = 0, linear_value_head_dim = 0;
  int64_t linear_conv_kernel = 4;
  // OLMo Hybrid's Gated DeltaNet: q_proj, k_proj, v_proj, g_proj, a_proj, b_proj and o_proj on their own
  // (PEFT adapts q, k, v and o there as in attention) instead of Qwen3-Next's fused in_proj_qkvz / ba
  bool linear_attention_own_projections = false;
  // Qwen3.5's Gated DeltaNet: in_proj_qkv, in_proj_z, in_proj_b and in_proj_a, each its own nn.Linear
  // (Qwen3-Next fuses them into in_proj_qkvz and in_proj_ba)
  bool gdn_split_projections = false;
  // Kimi Linear's Kimi Delta Attention on the Gated DeltaNet layers: the decay per channel, not per
  // head (a low-rank forget gate f_a, f_b with a bias per channel), a low-rank output gate (g_a, g_b)
  // with a sigmoid, beta from b_proj, a norm of one head's width; no g or a projection.
  bool kimi_delta_attention = false;
  // MiniMax's lightning attention (transformers' MiniMaxLightningAttention): qkv_proj to q, k and v of
  // num_attention_heads x head_dim each through SiLU, attention within blocks of lightning_block_size
  // tokens and a key-value state carried between blocks, an RMSNorm over the heads' output, a sigmoid
  // gate from output_gate, out_proj.
  int64_t lightning_block_size = 256;
  // DeepSeek-V4 (transformers' DeepseekV4ForCausalLM), read from layer_types / compress_ratios:
  // - each layer's attention kind (compressed_layers; Mixer::compressed_attention in layer_mixers);
  // - queries from a latent (q_lora_rank) to heads x head_dim, one key-value head (kv_proj) read as
  //   both keys and values, a learned sink per head, the output projected per group of heads
  //   (o_groups x o_lora_rank) and then to hidden;
  // - a compressor pooling every csa_rate (CSA, two overlapping series) or hca_rate (HCA) tokens
  //   into one key; CSA's indexer (csa_index_heads of csa_index_head_dim) picks its top keys and,
  //   run outside autograd's reach (its top-k indices carry no gradient), trains nothing;
  // - hyper_connections residual streams (hc_mult) mixed around each attention and MoE.
  std::vector<CompressedAttention> compressed_layers;
  int64_t o_groups = 0, o_lora_rank = 0, csa_rate = 4, hca_rate = 128;
  int64_t csa_index_heads = 0, csa_index_head_dim = 0;
  int64_t hyper_connections = 0, hc_sinkhorn_iters = 0;
  // the residual stream's width in hidden_size units: hc_mult streams, else one
  double residual_streams() const { return hyper_connections > 0 ? double(hyper_connections) : 1.0; }
  CompressedAttention compressed_layer(int64_t index) const {
    return index >= 0 && index < int64_t(compressed_layers.size()) ? compressed_layers[size_t(index)]
                                                                   : CompressedAttention::sliding;
  }
  // LFM2's short convolution: in_proj to B, C and x (3 x hidden), B x through a depthwise causal
  // conv1d of short_conv_kernel taps, C times its output, out_proj; short_conv_bias on all three.
  int64_t short_conv_kernel = 3;
  bool short_conv_bias = false;
  // Mamba-1 (MambaMixer): in_proj to x and z (2 x mamba1_inner), a depthwise conv1d of
  // mamba_conv_kernel over x, x_proj to dt (mamba1_dt_rank), B and C (ssm_state_size each), dt_proj
  // back to mamba1_inner, A_log and D, out_proj; Jamba adds RMSNorms with weights on dt, B and C.
  int64_t mamba1_inner = 0, mamba1_dt_rank = 0;
  bool mamba1_inner_norms = false;
  bool attention_output_gate = false;  // Qwen3-Next: q_proj also makes a sigmoid gate on the attention output
  // that gate is its own projection named gate_proj (AFMoE, Muse-Glimmer): PEFT's "gate_proj" target
  // adapts it beside the MLP's
  bool attention_gate_proj = false;
  bool attention_head_gate = false;  // Laguna: g_proj (hidden -> heads) makes a softplus gate per head
  bool head_gate_sigmoid = false;    // Step 3.5: that gate a sigmoid in bf16 (Laguna's a softplus in fp32)
  // BitNet: RMSNorms on the attention output before o_proj (heads x head_dim) and on the MLP's
  // activation before down_proj (intermediate_size)
  bool sub_norms = false;

  // Gemma 4: its full-attention (not windowed) layers have their own head dim and key/value heads
  // (global_head_dim, num_global_key_value_heads), and with attention_k_eq_v no v_proj. 0 / false:
  // as every other layer.
  int64_t full_attention_head_dim = 0, full_attention_kv_heads = 0;
  bool full_attention_values_from_keys = false;
  // Step 3.5: its sliding-window layers have their own query head count (0: num_attention_heads).
  int64_t windowed_attention_heads = 0;
  // MiMo-V2-Flash: value heads narrower than its query and key heads (v_head_dim without latent
  // attention); v_proj, the attention output and o_proj are heads x this wide. 0: head_dim.
  int64_t value_head_dim = 0;
  // Gemma 4's router: a learned scale of the hidden width before its projection and one per expert after
  bool router_scales = false;
  bool value_norm = false;
  // Gemma 4 E2B/E4B: the last kv_shared_layers layers (num_kv_shared_layers) reuse the keys and
  // values of the last earlier layer of their attention type, with an MLP twice intermediate_size
  // wide where kv_shared_wide_mlp (use_double_wide_mlp).
  int64_t kv_shared_layers = 0;
  bool kv_shared_wide_mlp = false;
  // Gemma4TextAttention (store_full_length_kv): the last layer of each attention kind before the
  // shared ones puts its keys and values in the shared_kv_states dict every layer gets as an argument,
  // whether or not a later layer reads them.
  bool stores_last_kv_per_kind = false;
  // Gemma 4 E2B/E4B's per-layer inputs (hidden_size_per_layer_input, vocab_size_per_layer_input): a
  // second embedding of layers x per_layer_input_width per token, plus a projection of the hidden
  // state to it, feeding each layer a gated branch of that width after its feed-forward. 0: none.
  int64_t per_layer_input_width = 0, per_layer_input_vocab = 0;
  // Gemma's RMSNorms multiply the fp32 normalized tensor by the weight before casting back, so a
  // training weight saves it in fp32 (LlamaRMSNorm casts first and saves the bf16 copy)
  bool norm_scale_fp32 = false;
  // Gemma 2's attn_logit_softcapping: eager attention's scores / c, tanh, * c before the mask (0: none)
  double attention_logit_softcap = 0;
  double final_logit_softcap = 0;  // Gemma 2/4's final_logit_softcapping: logits / c, tanh, * c (0: none)  // Gemma 4:
                                   // a weightless RMSNorm on the values beside the q and k norms

  // Layers whose shape differs from the model's (set_layer_variants): the distinct shapes, [0] the
  // model's own, and each layer's index among them. Empty: every layer has the model's shape.
  std::vector<LayerVariant> layer_variants;
  std::vector<int32_t> layer_variant_ids;
  // the layers' shapes come from the config's block_configs (Megatron-LM reads that file itself)
  bool heterogeneous_block_configs = false;
  // Llama 3.2 Vision's cross-attention layers (Mllama's cross_attention_layers; empty: none). A
  // text-only step skips them (MllamaTextModel runs a cross-attention layer without image states as
  // nothing): their weights are held but get no gradient; layer_mixers and layer_has_ffn mark them
  // as running nothing.
  std::vector<bool> skipped_cross_attention_layers;
  int64_t extra_input_embedding_rows = 0;  // the input embedding's rows beyond vocab_size (Mllama's 8)

  // What a loader mapped but the cost model does not represent (sliding window,
  // a vision tower left out); shown to the user, never changes a figure.
  std::vector<std::string> notes;

  // Multi-head latent attention (kv_lora_rank > 0: MLA).
  int64_t q_lora_rank = 0;  // 0: queries projected from the hidden state directly
  int64_t kv_lora_rank = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t v_head_dim = 0;
  // DeepSeek sparse attention (DeepSeek-V3.2's and GLM-5's DSA): beside the MLA, a lightning
  // indexer scores every earlier key with index_n_heads heads of index_head_dim (wq_b from the
  // query latent; wk with a LayerNorm and weights_proj from the layer input) and the attention
  // reads the index_topk best keys of each query. GLM-5's "shared" layers (indexer_types) run no
  // indexer and reuse the previous layer's keys. 0 heads: dense attention.
  int64_t index_n_heads = 0, index_head_dim = 0, index_topk = 0;
  std::vector<bool> indexer_shared_layers;  // empty: every layer runs its own indexer

  // The EAGLE paper's Table 6 layer count and total, where it differs.
  int64_t paper_num_hidden_layers = 0;
  double paper_params_B = 0;

  AttentionKind attention() const { return kv_lora_rank > 0 ? AttentionKind::mla : AttentionKind::gqa; }
  bool is_moe() const { return n_routed_experts > 0; }
  // Whether layer `index` (0-based) uses the MoE feed-forward (moe_layer_rule).
  bool layer_is_moe(int64_t index) const {
    if (!is_moe()) return false;
    if (moe_layer_rule == MoeLayerRule::dense_prefix)
      return index >= first_k_dense_replace && (index % moe_layer_freq) == 0;
    const bool listed = std::binary_search(dense_mlp_layers.begin(), dense_mlp_layers.end(), index);
    return (index + 1) % moe_layer_freq == 0 && !listed;
  }
  // Whether any of the first `layers` layers has the dense feed-forward.
  bool has_dense_mlp_layer(int64_t layers) const {
    for (int64_t i = 0; i < layers; ++i)
      if (!layer_is_moe(i)) return true;
    return false;
  }
  int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
  bool sparse_attention() const { return index_n_heads > 0; }
  // Whether attention layer `index` runs its own DSA indexer (not a "shared" one).
  bool layer_has_indexer(int64_t index) const {
    if (!sparse_attention()) return false;
    return index < 0 || index >= int64_t(indexer_shared_layers.size()) || !indexer_shared_layers[size_t(index)];
  }
  // The GQA projections of attention layer `index` (windowed or full, which may differ: Gemma 4).
  AttentionShape attention_shape(int64_t index) const {
    AttentionShape a = attention_shape_of(layer_is_windowed(index));
    if (const int64_t own = layer_variant_of(index).kv_heads; own > 0) a.kv_heads = own;
    a.shares_kv = layer_shares_kv(index);
    return a;
  }
  // Gemma4TextAttention: layers from num_hidden_layers - num_kv_shared_layers on, where that is past 0.
  bool layer_shares_kv(int64_t index) const {
    const int64_t first = num_hidden_layers - kv_shared_layers;
    return kv_shared_layers > 0 && first > 0 && index >= first && index < num_hidden_layers;
  }
  // A shared MLP `width` wide: shared experts of moe_intermediate_size where it is a multiple of
  // that, else one shared expert of its own width.
  void set_shared_mlp_width(int64_t width) {
    const bool multiple = moe_intermediate_size > 0 && width % moe_intermediate_size == 0;
    n_shared_experts = multiple ? width / moe_intermediate_size : 1;
    shared_expert_intermediate_size = multiple ? 0 : width;
  }
  // The MoE layers' shared MLP width: every shared expert side by side.
  // the width the routed experts read and write: the latent width of a latent MoE, else the hidden
  int64_t expert_io_width() const { return moe_latent_size > 0 ? moe_latent_size : hidden_size; }
  int64_t shared_mlp_width() const {
    return n_shared_experts *
           (shared_expert_intermediate_size > 0 ? shared_expert_intermediate_size : moe_intermediate_size);
  }
  // The dense MLP's width in layer `index` (Gemma 4's KV-shared layers may be twice as wide;
  // a layer variant's own width).
  int64_t mlp_width(int64_t index) const {
    if (const int64_t own = layer_variant_of(index).mlp_width; own > 0) return own;
    return kv_shared_wide_mlp && layer_shares_kv(index) ? 2 * intermediate_size : intermediate_size;
  }
  // Which of layer_variants layer `index` has (0: the model's shape).
  int layer_variant(int64_t index) const {
    return index >= 0 && index < int64_t(layer_variant_ids.size()) ? int(layer_variant_ids[size_t(index)]) : 0;
  }
  LayerVariant layer_variant_of(int64_t index) const {
    const int v = layer_variant(index);
    return v > 0 ? layer_variants[size_t(v)] : LayerVariant{};
  }
  // Whether one of the layer's linear modules is the given matrix ("qkv", "gate_up": a fused projection)
  bool has_linear_matrix(const std::string& matrix) const {
    for (const LinearModule& l : linear_modules)
      if (l.matrix == matrix) return true;
    return false;
  }
  // The layer count of a cut (a measured step's, --num-layers) or of the file. What the config
  // class derives from the count follows it: Gemma 4's last layer is full attention.
  void set_layer_count(int64_t layers) {
    num_hidden_layers = layers;
    if (last_layer_full_attention && layers > 0 && layers <= int64_t(windowed_layers.size()))
      windowed_layers[size_t(layers - 1)] = false;
  }
  // Each layer's shape (per_layer: one per layer, 0 fields for the model's value), kept as distinct
  // variants; a layer with the model's own shape gets variant 0.
  void set_layer_variants(const std::vector<LayerVariant>& per_layer) {
    layer_variants.assign(1, LayerVariant{});
    layer_variant_ids.clear();
    for (LayerVariant v : per_layer) {
      if (v.mlp_width == intermediate_size) v.mlp_width = 0;
      if (v.kv_heads == num_key_value_heads) v.kv_heads = 0;
      auto at = std::find(layer_variants.begin(), layer_variants.end(), v);
      if (at == layer_variants.end()) at = layer_variants.insert(at, v);
      layer_variant_ids.push_back(int32_t(at - layer_variants.begin()));
    }
    if (layer_variants.size() == 1) layer_variants.clear(), layer_variant_ids.clear();
  }
  // How many layer kinds the model can have: kLayerKinds per layer variant.
  int layer_kind_count() const { return kLayerKinds * std::max<int>(1, int(layer_variants.size())); }
  AttentionShape attention_shape_of(bool windowed) const {
    AttentionShape a{num_attention_heads, num_key_value_heads,
                     head_dim > 0 ? head_dim : hidden_size / std::max<int64_t>(num_attention_heads, 1)};
    if (windowed && windowed_attention_heads > 0) a.heads = windowed_attention_heads;
    if (!windowed) {
      if (full_attention_head_dim > 0) a.head_dim = full_attention_head_dim;
      if (full_attention_kv_heads > 0) a.kv_heads = full_attention_kv_heads;
      a.values_from_keys = full_attention_values_from_keys;
    }
    a.value_head_dim = value_head_dim > 0 ? value_head_dim : a.head_dim;
    return a;
  }
  // Whether some attention layers differ from the others in shape (Gemma 4's full-attention layers,
  // Step 3.5's windowed ones).
  bool attention_shape_varies() const {
    return full_attention_head_dim > 0 || full_attention_kv_heads > 0 || full_attention_values_from_keys ||
           windowed_attention_heads > 0;
  }
  // The most query heads any attention layer has.
  int64_t max_attention_heads() const { return std::max(num_attention_heads, windowed_attention_heads); }
  // Whether the GQA value heads are narrower than the query and key heads (MiMo-V2-Flash).
  bool has_narrow_values() const { return attention() == AttentionKind::gqa && value_head_dim > 0; }
  Mixer mixer(int64_t index) const {
    return index >= 0 && index < int64_t(layer_mixers.size()) ? layer_mixers[size_t(index)] : Mixer::attention;
  }
  bool has_ffn(int64_t index) const {
    return index < 0 || index >= int64_t(layer_has_ffn.size()) || layer_has_ffn[size_t(index)];
  }
  // 3 x mixer + (0 dense, 1 MoE, 2 no feed-forward); sliding-window attention layers from 12,
  // KV-shared from 15, short convolution from 21; plus kLayerKinds x the layer's variant
  int layer_kind(int64_t index) const { return layer_base_kind(index) + kLayerKinds * layer_variant(index); }
  int layer_base_kind(int64_t index) const {
    const int ffn = !has_ffn(index) ? 2 : layer_is_moe(index) ? 1 : 0;
    if (mixer(index) == Mixer::attention && layer_shares_kv(index))
      return kSharedKvAttentionKinds + (layer_is_windowed(index) ? 3 : 0) + ffn;
    if (mixer(index) == Mixer::attention && layer_is_windowed(index)) return kWindowedAttentionKinds + ffn;
    if (mixer(index) == Mixer::short_conv) return kShortConvKinds + ffn;
    if (mixer(index) == Mixer::mamba1) return kMamba1Kinds + ffn;
    if (mixer(index) == Mixer::attention_mamba2) return kParallelHybridKinds + ffn;
    if (mixer(index) == Mixer::lightning) return kLightningKinds + ffn;
    if (mixer(index) == Mixer::compressed_attention)
      return kCompressedAttentionKinds + 3 * int(compressed_layer(index)) + ffn;
    return 3 * int(mixer(index)) + ffn;
  }
  bool is_hybrid() const { return !layer_mixers.empty(); }
  bool layer_is_skipped_cross_attention(int64_t index) const {
    return index >= 0 && index < int64_t(skipped_cross_attention_layers.size()) &&
           skipped_cross_attention_layers[size_t(index)];
  }
  bool mamba_out_bias() const { return mamba_out_proj_bias_own ? mamba_out_proj_bias : mamba_proj_bias; }
  // Whether layer `index` has softmax attention (alone or beside a Mamba-2 mixer).
  bool layer_has_attention(int64_t index) const {
    return mixer(index) == Mixer::attention || mixer(index) == Mixer::attention_mamba2;
  }
  // Whether layer `index` attends within sliding_window_tokens only.
  bool layer_is_windowed(int64_t index) const {
    if (sliding_window_tokens <= 0) return false;
    return windowed_layers.empty() ||
           (index >= 0 && index < int64_t(windowed_layers.size()) && windowed_layers[size_t(index)]);
  }
  // Whether layer `index` has no rotary embedding (Llama 4's NoPE layers).
  bool layer_is_nope(int64_t index) const {
    return index >= 0 && index < int64_t(nope_layers.size()) && nope_layers[size_t(index)];
  }
};

}  // namespace remat
