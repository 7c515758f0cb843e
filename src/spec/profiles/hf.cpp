// Profile `hf`: a causal LM of Hugging Face Transformers 5.x trained in plain
// PyTorch (2.11) eager mode, with PEFT 0.21 LoRA when --lora-rank is given, as
// a Trainer-style loop runs one step: loss = model(ids, labels=ids).loss (the
// output and its logits dropped before backward), backward, AdamW(foreach)
// step, zero_grad(set_to_none=True). Each term is read from the source:
// - transformers/models/llama/modeling_llama.py (and every family copied from
//   it): LlamaRMSNorm upcasts to fp32 and multiplies the weight with the bf16
//   cast (what autograd saves: src/cost/exact_blocks.cpp add_upcast_norm);
//   LlamaMLP is down(act(gate(x)) * up(x)), three separate tensors saved by
//   SiLU and the product; rotary embeddings save only cos and sin;
// - transformers/integrations/sdpa_attention.py: scaled_dot_product_attention
//   with enable_gqa (keys and values not repeated) when no mask is given, the
//   output transposed and made contiguous for o_proj; eager_attention_forward
//   repeats keys and values (repeat_kv), takes softmax(dtype=float32) and casts
//   it back to bf16 for the product with V;
// - transformers/loss/loss_utils.py ForCausalLMLoss: logits.float(), then
//   cross_entropy (log_softmax saved in fp32; its backward and nll_loss's each
//   write an fp32 gradient of the logits);
// - transformers/modeling_layers.py GradientCheckpointingLayer: each decoder
//   layer whole under torch.utils.checkpoint, use_reentrant False (early stop)
//   or True (full replay): --strategy full --replay early-stop | full;
// - peft/tuners/lora/layer.py Linear.forward: base(x) + lora_B(lora_A(dropout(x))) * scaling, the
//   adapters in fp32 by default (autocast_adapter_dtype) and x cast to their dtype per adapter;
// - peft/utils/transformers_weight_conversion.py and tuners/lora/layer.py ParamWrapper: on the MoE
//   families transformers converts as Qwen2-MoE, gate/up/down adapt the routed experts' stacked
//   weights, folded per forward into a full copy W + B A (baddbmm) that the experts' GEMM saves;
// - torch/optim/adam.py _multi_tensor_adam (AdamW foreach): moments in the
//   parameter dtype, one temporary of all trained parameters (the sqrt of the
//   second moment) during the step;
// - transformers' Mamba-2 (NemotronHMamba2Mixer.torch_forward) and Gated DeltaNet
//   (torch_chunk_gated_delta_rule) fallbacks: what runs when mamba_ssm, causal_conv1d and fla are
//   not installed, as on the measured image (mixer_kernels torch; --mixer-kernels fused when they are);
// - transformers/models/gemma*/modeling_gemma*.py: Gemma's RMSNorm multiplies the fp32 normalized
//   tensor by its weight before the cast back (the product saved in fp32: norm_scale_fp32); the
//   post-attention and post-feedforward norms save their inputs too (add_output_norms);
//   final_logit_softcapping's tanh saves its bf16 output (add_logit_softcap); Gemma 4's value norm,
//   full-attention shape, KV-shared layers and per-layer inputs (exact_blocks.cpp, stage_model.cpp);
// - torch cuBLAS handles: a 32 MiB workspace on sm90 for each of the forward
//   and the autograd thread (as measured under megatron-local: 66 MiB).
#include "remat/spec/framework.hpp"

#include <algorithm>

namespace remat {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

TrainingSpec hf_training(TrainingSpec t) {
  // --attention sdpa (flash kernel) or eager; the CLI sets flash_attention
  t.gqa_expand_kv = !t.flash_attention;
  t.softmax_fp32 = !t.flash_attention;
  // the sdpa kernel's output is laid out [b, s, heads, d]: the transpose back is contiguous, so Wo
  // saves the tensor the kernel saved (no copy)
  if (t.lora_adapter_bytes == 0) t.lora_adapter_bytes = 4;  // peft: autocast_adapter_dtype=True
  t.peft_moe_conversion = true;  // gate/up/down on some MoE families' stacked experts (lora_placement)
  t.swiglu_fused = false;
  t.glu_linear_copy = false;
  t.moe_probs_scale_outputs = true;
  t.layouts_from_model_code = true;
  t.ordered_backward = true;  // autograd frees a node's saved tensors once it ran: later blocks' go first
  t.norm_fp32_upcast = true;
  t.rope_rotate_half = true;
  t.loss_fp32_logits = true;
  t.loss_log_softmax_saved = true;
  t.per_row_logps = true;
  t.sequence_parallel = false;
  t.grads_allocated_in_backward = true;
  // torch/csrc/autograd/input_buffer.cpp (InputBuffer::add): the LM head's weight gradient waits in
  // the AccumulateGrad node's buffer until embedding_dense_backward's arrives; their sum is a new
  // tensor. Measured: reports/hf/peak-traces-h200/layernorm/cohere-dflt-2l-full-nr-s4096.json
  t.tied_grads_summed_out_of_place = true;
  // --precision mixed: fp32 parameters under torch.autocast(bf16), as Trainer's bf16=True runs them
  t.params_fp32_autocast = t.precision == Precision::mixed;
  t.optimizer_temp_bytes_per_param = t.params_fp32_autocast ? 4 : 2;
  // _multi_tensor_adam with decoupled weight decay, per element of the parameter's dtype (reads +
  // writes): params *= 1 - lr wd (2), m.lerp_(g) (3), v *= beta2 (2), v.addcmul_(g, g) (4),
  // sqrt(v) (2), / bias correction (2), + eps (2), params.addcdiv_(m, denom) (4): 21 per byte of
  // gradient, trained parameters only (a LoRA step leaves the frozen weights alone). The profiled
  // Llama-3.2-1B step's foreach kernels: 19.8 ms, this 17.6 ms.
  if (t.optimizer == Optimizer::adam) t.optimizer_bytes_per_grad_byte = 21;
  t.runtime_bytes = 66 * kMiB;
  return t;
}

// torch's scaled_dot_product_attention (transformers' sdpa path) as measured on this GPU
// (frameworks.hf.attention): its efficiency depends on the head dim, unlike the file's flash figures.
HardwareSpec hf_hardware(HardwareSpec hw) {
  const FrameworkEfficiency* fit = hw.framework_fit(kHfFramework);
  if (!fit) return hw;
  for (auto& p : hw.efficiency.gemm_by_flops) p.fraction = std::min(1.0, p.fraction * fit->gemm_scale);
  hw.efficiency.memory_bound = std::min(1.0, hw.efficiency.memory_bound * fit->memory_bound_scale);
  hw.efficiency.attention_by_head_dim = fit->attention;
  hw.efficiency.adapter_gemm_by_flops = fit->adapter_gemm;
  hw.efficiency.masked_attention_by_head_dim = fit->masked_attention;
  hw.efficiency.fp32_gemm = fit->fp32_gemm;
  return hw;
}

std::vector<std::string> hf_time_gaps(const HardwareSpec& hw, const ModelSpec& model, const TrainingSpec& t) {
  std::vector<std::string> gaps;
  if (t.seq < 8192)
    gaps.push_back(
        "times are the GPU's: below about 8k tokens a transformers step waits on Python (module calls, "
        "autograd, the checkpoint's hooks), more so under checkpointing and LoRA (reports/hf/README.md)");
  const FrameworkEfficiency* fit = hw.framework_fit(kHfFramework);
  if (!fit || fit->attention.empty())
    gaps.push_back("no torch SDPA measurement for " + hw.name +
                   " (frameworks.hf.attention; examples/hf/sdpa_bench.py): attention uses the file's flash "
                   "efficiencies, whatever the head dim");
  if (model.sparse_attention() && (!fit || fit->masked_attention.empty()))
    gaps.push_back("no torch SDPA measurement under a dense mask for " + hw.name +
                   " (frameworks.hf.masked_attention; examples/hf/probes/masked_sdpa_probe.py): DeepSeek sparse "
                   "attention's masked kernel is priced at the causal rate, about twice what it reaches on an H200");
  return gaps;
}

}  // namespace

const FrameworkProfile& framework_profile_hf() {
  static const FrameworkProfile p{
      .name = kHfFramework,
      .summary =
          "Hugging Face Transformers 5 + PEFT in PyTorch eager: fp32 norm upcasts, full-vocabulary fp32 "
          "loss; none or gradient checkpointing of every layer (--strategy full; --replay early-stop is "
          "use_reentrant=False); zero stage 0 unless given",
      .read_from = "transformers 5.17, peft 0.21, torch 2.11",
      .default_zero_stage = 0,
      .strategies = {Strategy::none, Strategy::full},
      .mixer_kernels = MixerKernels::torch,
      .replay_choosable = true,
      .runs_model_code = true,
      .builds_mtp_modules = false,
      .apply_training = hf_training,
      .apply_hardware = hf_hardware,
      .time_gaps = hf_time_gaps,
  };
  return p;
}

}  // namespace remat
