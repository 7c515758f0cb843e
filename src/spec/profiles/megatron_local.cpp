// Profile `megatron-local`: Megatron-LM with --transformer-impl local (no
// Transformer Engine, no Apex, no fused kernels), every implementation choice
// and buffer of that stack, and the hardware file's fitted
// frameworks.megatron-local time constants.
#include <algorithm>

#include "remat/spec/framework.hpp"

namespace remat {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Megatron-LM d98e8a64dd, --transformer-impl local, read from its source and
// checked against the allocator of 18 runs on H200s (reports/megatron/):
// - DotProductAttention: keys and values repeat_interleave'd to every head,
//   QK^T through baddbmm into a global [b*np, s, s] buffer that stays
//   allocated, a bf16 softmax saved for backward (attention_softmax_in_fp32 is
//   off by default); the in-place mask makes autograd clone the score
//   gradient (three score-sized tensors in backward: remat's 3x largest);
// - MLP: F.silu(x_glu) * (x_linear + glu_linear_offset): the offset add
//   copies the linear half, and the chunk view keeps all of fc1's output;
// - vocab-parallel cross entropy: an fp32 copy of the logits becomes the
//   saved softmax and, in backward, the gradient (bf16 logits before, a bf16
//   gradient after: 6 bytes per logit at the peak);
// - the pipeline keeps every in-flight microbatch's stage output;
// - torch Adam's foreach step allocates one fp32 tensor of all parameters;
// - 66 MiB of cuBLAS workspaces (two 32 MiB handles plus small buffers);
//   CUDA context and NCCL: 3.5-4.1 GiB of device memory outside the caching
//   allocator (device used minus reserved in the runs).
TrainingSpec megatron_local_training(TrainingSpec t) {
  t.flash_attention = false;
  t.gqa_expand_kv = true;
  t.swiglu_fused = false;
  t.glu_linear_copy = true;
  t.v_views_qkv = true;
  t.loss_fp32_logits = true;
  t.loss_grad_in_place = true;
  t.sequence_parallel = false;  // torch norms refuse --sequence-parallel
  t.replay = RecomputeReplay::full;
  t.attention_score_buffer = true;
  t.keeps_stage_outputs = true;
  t.ordered_backward = true;
  t.optimizer_temp_bytes_per_param = 4;
  t.grad_accumulation_pass = true;  // --no-gradient-accumulation-fusion (the fused path needs Apex/TE)
  // torch AdamW (foreach) behind Megatron's fp32 master copy, bytes per
  // parameter: main grad to master grad 4+4, grad norm 4, clip 4+4, two
  // moments 8+8 and 12+4, sqrt and eps 4+4+4, update 12+4, weight decay 4+4,
  // master to bf16 weights 4+2, zero the main grads 4
  t.optimizer_bytes_per_param = 102;
  t.runtime_bytes = 66 * kMiB;
  t.outside_allocator_bytes = 4.0 * 1024 * kMiB;
  return t;
}

HardwareSpec megatron_local_hardware(HardwareSpec hw) {
  const FrameworkEfficiency* fit = hw.framework_fit(kMegatronLocalFramework);
  if (!fit) return hw;
  const FrameworkEfficiency& e = *fit;
  for (auto& p : hw.efficiency.gemm_by_flops) p.fraction = std::min(1.0, p.fraction * e.gemm_scale);
  hw.efficiency.memory_bound = std::min(1.0, hw.efficiency.memory_bound * e.memory_bound_scale);
  hw.layer_overhead_s = e.layer_overhead_s;
  hw.moe_layer_host_s = e.moe_layer_host_s;
  return hw;
}

std::vector<std::string> megatron_local_time_gaps(const HardwareSpec& hw, const ModelSpec& model, const TrainingSpec&) {
  const FrameworkEfficiency* fit = hw.framework_fit(kMegatronLocalFramework);
  if (!fit)
    return {"no megatron-local time fit for " + hw.name +
            " (frameworks: in its file; remat calibrate --megatron-log): times use remat-bench's kernel "
            "efficiencies, which ran 23-33% fast against Megatron-LM on the H100 before its fit"};
  if (model.is_moe() && !fit->has_moe_layer_host)
    return {"the megatron-local fit for " + hw.name +
            " had no MoE run: MoE layers get no host-time floor, so small experts may wait on the host longer than "
            "predicted"};
  return {};
}

// The layers remat builds that Megatron-LM's GPT model has no implementation of (the rest of what
// it cannot express is refused when its flags are written: src/search/megatron_arch.cpp).
std::string megatron_local_cannot_run(const ModelSpec& m) {
  if (std::find(m.layer_mixers.begin(), m.layer_mixers.end(), Mixer::lightning) != m.layer_mixers.end())
    return "lightning attention layers (MiniMax) have no Megatron-LM implementation to model: give --framework "
           "generic or hf";
  if (!m.compressed_layers.empty())
    return "DeepSeek-V4's attention (compressed keys, hyper-connections) has no Megatron-LM implementation to model: "
           "give --framework generic or hf";
  if (!m.skipped_cross_attention_layers.empty())
    return "cross-attention layers (Llama 3.2 Vision) have no Megatron-LM implementation to model: give --framework "
           "generic or hf";
  if (m.sparse_attention())
    return "DeepSeek sparse attention (index_n_heads) as Megatron-LM runs it (its experimental DSA and indexer "
           "loss) is not modelled: give --framework generic or hf";
  return "";
}

}  // namespace

const FrameworkProfile& framework_profile_megatron_local() {
  static const FrameworkProfile p{
      .name = kMegatronLocalFramework,
      .summary =
          "Megatron-LM --transformer-impl local: unfused attention, SwiGLU and loss, its buffers; "
          "zero stage 0 unless given",
      .read_from = "Megatron-LM d98e8a64dd (megatron/core/transformer, megatron/core/tensor_parallel)",
      .default_zero_stage = 0,
      .strategies = {Strategy::none, Strategy::full, Strategy::selective, Strategy::standard, Strategy::eagle,
                     Strategy::offload, Strategy::streambp},
      .replay_choosable = false,
      .cannot_run = megatron_local_cannot_run,
      .apply_training = megatron_local_training,
      .apply_hardware = megatron_local_hardware,
      .time_gaps = megatron_local_time_gaps,
  };
  return p;
}

}  // namespace remat
