#pragma once
// A recompute block described by its real tensors and operations, from which
// every strategy's kept bytes, transient bytes and FLOPs are derived.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace remat {

// Megatron-LM's --recompute-modules as a bit set (remat/spec/plan.hpp's ModuleSet).
using ModuleTags = uint32_t;

struct TensorDef {
  std::string name;
  double bytes = 0;         // per rank, per microbatch
  ModuleTags freed_by = 0;  // Megatron modules whose selective recompute drops this tensor
  // Megatron modules whose checkpoint takes this tensor as an input: saved
  // while one of them is recomputed (when nothing else saves it already)
  ModuleTags checkpoint_input_of = 0;
  // > 0: the tensor holds this many per-reader casts of one input (each LoRA adapter's fp32 or
  // dropped copy). One reader's backward at a time writes that copy's gradient; the cast's own
  // gradient then lands in the input's bf16 gradient, so grad_working_bytes counts one copy.
  double reader_copies = 0;
  // copies of this tensor's size a backward holds at once beyond the saved tensors, where no op
  // states its working set (grad_working_bytes): 3 by default (a SwiGLU's gradient and its two
  // inputs'), 2 for a two-matrix MLP's activation (its output's gradient and its input's)
  double working_copies = 3;
};

enum class OpKind { gemm, attention, memory_bound, collective, host_copy };

struct OpDef {
  std::string name;
  OpKind kind = OpKind::memory_bound;
  double fwd_flops = 0;       // model FLOPs of the forward
  double bwd_flops = 0;       // model FLOPs of the backward (2x forward for matmuls)
  double bwd_exec_flops = 0;  // FLOPs the backward kernel executes (flash backward recomputes scores)
  double fwd_bytes = 0;       // HBM traffic (memory-bound ops) or bytes on the wire (collectives)
  double bwd_bytes = 0;
  double gemm_flops_each = 0;     // FLOPs of one GEMM call, for size-dependent efficiency
  double attention_seq = 0;       // attention: the sequence length, for length-dependent efficiency
  double attention_head_dim = 0;  // attention: q/k head dim, for a framework's measured kernel (0: unstated)
  // memory-bound ops that are PEFT's fp32 adapter GEMMs: their forward FLOPs (backward twice), for
  // a framework's measured adapter GEMMs (Efficiency::adapter_gemm_by_flops; gemm_flops_each: one
  // adapter's); 0: not such an op
  double fp32_adapter_flops = 0;
  double adapter_rank = 0;  // of those, the adapters' rank
  // of those, a large fp32 GEMM (not an adapter's), bound by the fp32 units: priced at the
  // framework's measured fp32 GEMM rate (Efficiency::fp32_gemm) where the file has one
  bool fp32_compute_bound = false;
  int64_t link_ranks = 1;  // collectives: ranks in the group
  // attention without flash: QK^T and PV as batched GEMMs over the whole
  // s x s square (gemm_flops_each: both, forward; the mask is applied after),
  // plus fwd_bytes/bwd_bytes of score traffic (scores, mask, softmax and
  // their gradients)
  bool materialized_scores = false;
  // flash attention under a dense s x s mask (no causal skipping): the framework's measured masked
  // kernel (Efficiency::masked_attention_by_head_dim) where the file has one
  bool dense_mask = false;
  std::vector<std::string> saves;  // tensors its backward reads
  // bytes it holds at once beyond the saved tensors, in forward or backward, where the code says
  // (an unfused broadcast product and its gradients); 0: not stated
  double working_bytes = 0;
  // of those, what its forward holds (a frozen layer, which runs no backward: frozen_prefix_layer;
  // a layer's replay: replay_peak_bytes)
  double fwd_working_bytes = 0;
  // a tensor the op reads that the module's code holds while it runs, saved or not (PEFT's adapters:
  // the base projection's input)
  std::string input_held;
  bool forward_only = false;  // runs under torch.no_grad: saves nothing, no backward (transformers' DSA indexer)
  // of a branch beside the block's LoRA adapters that none of them feeds (Falcon-H1's Mamba-2 mixer
  // beside the adapted attention): in the first adapted layer its input needs no gradient
  bool beside_adapters = false;
  // the weight gradient its backward allocates where the step has none before its backward
  // (RankShape::weight_grad_bytes); alive for the rest of the layer's backward
  double weight_grad_bytes = 0;
  // held through the layer's backward when a reentrant checkpoint replays it (RecomputeReplay::full)
  double reentrant_held_bytes = 0;
  double weight_elems = 0;  // a GEMM's weight elements (in x out x count): its autocast cast's size
  // a PEFT adapter op (name.lora): the bool dropout mask inside the input copy it saves (name.input)
  double dropout_mask_bytes = 0;
  // of working_bytes, what the backward of a non-reentrant (early-stop) replay does not hold
  double early_stop_released_bytes = 0;
  ModuleTags replayed_by = 0;  // Megatron modules whose selective recompute reruns this op
  // of `saves`, tensors kept only for the gradient of gates that projections of the block's input
  // compute (Gated DeltaNet's decay and beta, the routed experts' weights), each with those
  // projections' op names: in the first adapted layer, where the input needs no gradient, a tensor
  // none of whose projections carries an adapter is not saved (drop_unadapted_gate_saves), and its
  // backward does not hold the gate's gradient (working_bytes, of the op's)
  struct GateSave {
    std::string tensor;
    std::vector<std::string> projections;
    double working_bytes = 0;
  };
  std::vector<GateSave> saved_for_gates;
};

// A PEFT adapter's op: on a Linear (name.lora) or folded onto routed experts' stacked weights
// (name.lora_fold, add_expert_adapter).
inline bool is_adapter_op(const OpDef& op) { return op.name.ends_with(".lora") || op.name.ends_with(".lora_fold"); }

struct Block {
  std::string name;                          // "mlp", "gqa", "moe.routed", ...
  std::vector<std::string> inputs;           // tensors a recompute strategy keeps
  bool inputs_saved = true;                  // false: no op of the block saves its inputs (an fp32 upcast does)
  std::vector<std::string> kept_outside;     // saved for ops after the block (o for Wo)
  std::vector<std::string> attention_stats;  // kept by eagle to skip the flash forward
  std::vector<TensorDef> tensors;
  std::vector<OpDef> ops;
  // the gradient of its input its backward leaves alive until another branch's joins it, through the
  // earlier blocks' backward (the shared experts run beside the routed ones)
  double branch_grad_bytes = 0;

  double tensor_bytes(std::string_view name) const;
  // Adds `modules` to the tags of the named tensors and ops (unknown names are ignored).
  void tag(ModuleTags modules, std::initializer_list<std::string_view> names);
  bool ends_with_gemm() const { return !ops.empty() && ops.back().kind == OpKind::gemm; }
};

// What one strategy costs on one block, per microbatch.
struct BlockCost {
  double kept_bytes = 0;       // alive from forward to backward, the block inputs included
  double transient_bytes = 0;  // extra bytes alive while its backward (and recompute) runs
  double offload_bytes = 0;    // copied to host and back (each direction)
  double fwd_flops = 0, bwd_flops = 0, recompute_flops = 0;
  double bwd_exec_flops = 0;
  std::vector<const OpDef*> recompute_ops;  // forward ops replayed in backward
};

enum class BlockMode;
BlockCost block_cost(const Block& block, BlockMode mode, bool early_stop);
// How many of `ops` (forward order) a replay runs: all; with early stop
// (PyTorch's non-reentrant checkpoint), up to the last op whose output the
// backward reads, so a trailing GEMM whose output nothing saves is not rerun.
size_t replayed_op_count(const std::vector<const OpDef*>& ops, bool early_stop);
// Bytes every saved tensor takes: the `none` footprint.
double saved_bytes(const Block& block);
// Saved bytes that selective recompute of `modules` drops (tensors tagged with one of them).
double module_freed_bytes(const Block& block, ModuleTags modules);
// Gradient buffers alive while the block's backward runs: the largest op's
// output gradient and input gradients, bounded by three of its largest tensor
// (or one reader's copy, where larger); or, where its ops state
// their working sets, the largest of those.
double grad_working_bytes(const Block& block, bool early_stop = false);
// grad_working_bytes's rule where no op states a working set: the largest tensor's gradient copies
// (TensorDef::working_copies, reader_copies), held in the backward of `op`, the first op that saves
// that tensor (ops.size(): none does)
struct WorkingSite {
  double bytes = 0;
  size_t op = 0;
};
WorkingSite tensor_working_site(const Block& block);

}  // namespace remat
