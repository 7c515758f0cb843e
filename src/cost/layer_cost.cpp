#include "remat/cost/layer_cost.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

#include "remat/cost/op_time.hpp"
#include "remat/cost/streambp.hpp"

namespace remat {

namespace {

// The blocks from here on are the layer's MLP or MoE half.
size_t mlp_half_start(const LayerDef& layer) {
  for (size_t i = 0; i < layer.blocks.size(); ++i)
    if (layer.blocks[i].name == "attn.out") return i + 1;
  return layer.blocks.size();
}

void add_op_times(LayerCost& c, const OpDef& op, const HardwareSpec& hw, bool mlp_half) {
  const OpTime t = op_time(op, hw);
  c.fwd_s += t.fwd_s;
  c.bwd_s += t.bwd_s;
  if (mlp_half) c.mlp_fwd_s += t.fwd_s, c.mlp_bwd_s += t.bwd_s;
  c.fwd_flops += op.fwd_flops;
  c.bwd_flops += op.bwd_flops;
  c.bwd_exec_flops += op.bwd_exec_flops;
  if (op.kind != OpKind::collective) return;
  c.comm_s += t.fwd_s + t.bwd_s;
  if (!over_nvlink(hw, op.link_ranks)) c.fwd_comm_s += t.fwd_s, c.bwd_comm_s += t.bwd_s;
}

void add_recompute(LayerCost& c, const OpDef& op, const HardwareSpec& hw, bool mlp_half) {
  const double t = op_time(op, hw).fwd_s;
  c.recompute_s += t;
  if (mlp_half) c.mlp_recompute_s += t;
  if (op.kind == OpKind::collective) c.comm_s += t;
  c.recompute_flops += op.fwd_flops;
}

// The weight gradients the block's backward allocates (OpDef::weight_grad_bytes).
double weight_grad_bytes(const Block& b) {
  double bytes = 0;
  for (const OpDef& op : b.ops) bytes += op.weight_grad_bytes;
  return bytes;
}

// Whether the block's largest stated working set is its forward's (DeepSeek-V3.2's indexer), held
// before any weight gradient of the layer exists.
bool forward_working_set(const Block& b) {
  const OpDef* largest = nullptr;
  for (const OpDef& op : b.ops)
    if (!largest || op.working_bytes > largest->working_bytes) largest = &op;
  return largest && largest->working_bytes > 0 && largest->fwd_working_bytes >= largest->working_bytes;
}

template <typename Name>
bool listed(const std::vector<Name>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Whether the block holds `name` for a backward: as its saved input, for an op after the block, or
// saved by one of its first `op_count` ops.
bool block_saves(const Block& b, const std::string& name, size_t op_count) {
  if ((b.inputs_saved && listed(b.inputs, name)) || listed(b.kept_outside, name)) return true;
  return std::any_of(b.ops.begin(), b.ops.begin() + std::ptrdiff_t(op_count),
                     [&](const OpDef& op) { return listed(op.saves, name); });
}

// What only the ops after `op` saved (nothing its own or an earlier op's backward reads).
double saved_only_after(const Block& b, size_t op) {
  double bytes = 0;
  std::vector<std::string_view> counted;
  for (size_t i = op + 1; i < b.ops.size(); ++i)
    for (const std::string& name : b.ops[i].saves)
      if (!block_saves(b, name, op + 1) && !listed(counted, name))
        counted.push_back(name), bytes += b.tensor_bytes(name);
  return bytes;
}

double weight_grads_after(const Block& b, size_t op) {
  double bytes = 0;
  for (size_t i = op + 1; i < b.ops.size(); ++i) bytes += b.ops[i].weight_grad_bytes;
  return bytes;
}

// A block's backward working set beyond its saved tensors, under LayerDef::pytorch_autograd.
// Where the tensor rule's set belongs to an op before the block's last linear (a SwiGLU before its
// down projection), the linear and the ops after it (the routing weights' product) ran their
// backward first: what only they saved is freed by then, and their weight gradients exist (qwen3-32b's
// GRPO and mixtral-8x22b's DPO at 12k). A set stated after that linear (the routing weights'
// product's) is held beside everything saved; one stated before it stays as stated. `last_linear_cast`:
// of the block's autocast weight copies, the last linear's, freed with its backward.
double block_working_bytes(const LayerDef& layer, const Block& b, double working, bool early_stop,
                           double last_linear_cast = 0) {
  if (!layer.pytorch_autograd) return working;
  size_t last_gemm = b.ops.size(), stated_op = b.ops.size();
  double stated = 0;
  const auto op_working = [&](const OpDef& op) {
    return op.working_bytes - (early_stop ? op.early_stop_released_bytes : 0);
  };
  for (size_t i = 0; i < b.ops.size(); ++i) {
    if (b.ops[i].kind == OpKind::gemm) last_gemm = i;
    if (op_working(b.ops[i]) > stated) stated = op_working(b.ops[i]), stated_op = i;
  }
  if (stated_op == last_gemm && last_gemm + 1 < b.ops.size()) {
    // the last linear's own set: the ops after it (the routing weights' product) ran their backward
    // first, so what only they saved is freed by then (DeepSeek-V3's down-adapted experts at 16k:
    // no expert output alive at the down GEMM's backward, peak-traces-h200/unseen17)
    double others = 0;
    for (size_t i = 0; i < b.ops.size(); ++i)
      if (i != last_gemm) others = std::max(others, op_working(b.ops[i]));
    return std::max(others, stated - saved_only_after(b, last_gemm) + weight_grads_after(b, last_gemm));
  }
  const WorkingSite site = tensor_working_site(b);
  // the last linear with its PEFT adapter's ops before it (down.lora, down.lora_gemm), whose backward
  // runs with the linear's: the adapter's fp32 copy of the input is freed with it
  size_t unit = last_gemm;
  while (unit > 0 && unit < b.ops.size() && b.ops[unit - 1].name.starts_with(b.ops[last_gemm].name + ".")) --unit;
  if (unit == 0 || last_gemm == b.ops.size() || site.op >= unit || (stated > 0 && stated_op < unit)) return working;
  const double freed = saved_only_after(b, unit - 1);
  return std::max({stated, freed, site.bytes - freed - last_linear_cast + weight_grads_after(b, unit - 1)});
}

// Of a block's share of the layer's autocast copies (block_shares), its last linear's.
double last_linear_cast(const Block& b, double block_cast) {
  double all = 0, last = 0;
  for (const OpDef& op : b.ops) {
    all += op.weight_elems;
    if (op.kind == OpKind::gemm) last = op.weight_elems;
  }
  return all > 0 ? block_cast * last / all : 0;
}

// The largest of `working[i]` less, under ordered backward, what the blocks
// after i kept (freed by their backward before block i's runs) and, where block i's
// working set is its backward's, plus the weight gradients their backward allocated.
double largest_working_set(const LayerDef& layer, const std::vector<double>& working, const std::vector<double>& kept) {
  double largest = 0, kept_after = 0, grads_after = 0;
  for (size_t i = working.size(); i-- > 0;) {
    if (!layer.ordered_backward) {
      largest = std::max(largest, working[i]);
      continue;
    }
    const double grads = forward_working_set(layer.blocks[i]) ? 0 : grads_after;
    largest = std::max(largest, working[i] + grads - kept_after);
    kept_after += kept[i];
    grads_after += weight_grad_bytes(layer.blocks[i]) + layer.blocks[i].branch_grad_bytes;
  }
  return largest;
}

// The peak of the layer's forward as a replay reruns it, op by op: what the ops saved so far, what
// each later block holds while it runs where no op saves it (its input, the residual, and its
// norm's output, held by the module's code), the input an op holds if not saved, and the op's own
// forward working set (fwd_working_bytes). Under early stop PyTorch ends the replay as the last
// tensor the backward reads is saved, before the op that saves it computes. The first block's input
// is the layer input, which the caller counts.
double replay_peak_bytes(const LayerDef& layer, bool early_stop) {
  double saved_so_far = 0, peak = 0;
  const Block* block = nullptr;
  std::vector<std::string_view> counted;
  double held = 0;
  std::vector<std::pair<const Block*, const OpDef*>> replay = replay_ops(layer, false);
  if (early_stop)
    while (!replay.empty() && replay.back().second->saves.empty()) replay.pop_back();
  for (const auto& [b, op] : replay) {
    if (b != block) {
      block = b;
      counted.clear();
      const auto saved_by_an_op = [&](std::string_view name) {
        return std::any_of(b->ops.begin(), b->ops.end(), [&](const OpDef& o) {
          return std::find(o.saves.begin(), o.saves.end(), name) != o.saves.end();
        });
      };
      // what no op saves is held, counted once; the layer input (the first block's) is the caller's
      held = 0;
      if (b->tensor_bytes("x_norm_held") > 0)  // the norm's own output, whatever its GEMMs save
        counted.push_back("x_norm_held"), held += b->tensor_bytes("x_norm_held");
      else if (!saved_by_an_op("x_norm"))
        counted.push_back("x_norm"), held += b->tensor_bytes("x_norm");
      for (const std::string& input : b->inputs) {
        if (b == layer.blocks.data())
          counted.push_back(input);
        else if (!saved_by_an_op(input))
          counted.push_back(input), held += b->tensor_bytes(input);
      }
    }
    const auto is_counted = [&](std::string_view name) {
      return std::find(counted.begin(), counted.end(), name) != counted.end();
    };
    for (const std::string& name : op->saves)
      if (!is_counted(name)) counted.push_back(name), saved_so_far += b->tensor_bytes(name);
    const double input = op->input_held.empty() || is_counted(op->input_held) ? 0 : b->tensor_bytes(op->input_held);
    peak = std::max(peak, saved_so_far + held + input + op->fwd_working_bytes);
  }
  return peak;
}

// The gradients alive when the replay starts: the layer output's, and under early stop what the
// backward of an adapted last projection computed before it needed a saved tensor (PEFT's cast back,
// sum and scaling save none): the scaling's gradient in the adapters' dtype, and with fp32 adapters
// the base path's own bf16 cast of the sum's gradient (bf16 adapters share the output's). Under
// autocast the adapters run in bf16 and no cast back is made: the branch's bf16 gradient, the
// residual add's cast, and the scaling's, both bf16 (peak-traces-h200/unseen10/sc2nodrop-lora-nr-
// do0.1-mixed-dpo: an fp32 and two bf16 tensors of the layer's width at the replay's peak).
double replay_start_grad_bytes(const LayerDef& layer, bool early_stop) {
  double bytes = layer.input_bytes;
  if (!early_stop || layer.blocks.empty()) return bytes;
  for (auto b = layer.blocks.rbegin(); b != layer.blocks.rend(); ++b) {
    const auto gemm =
        std::find_if(b->ops.rbegin(), b->ops.rend(), [](const OpDef& op) { return op.kind == OpKind::gemm; });
    if (gemm == b->ops.rend()) continue;
    const bool autocast = layer.branch_grad_cast_bytes > 0;
    for (const OpDef& op : b->ops) {
      if (op.name != gemm->name + ".lora_gemm") continue;
      if (autocast)
        bytes += 2 * layer.branch_grad_cast_bytes;
      else
        bytes += layer.input_bytes * (op.fp32_adapter_flops > 0 ? 1 + 2 : 1);
    }
    break;
  }
  return bytes;
}

// `casts` shared by the blocks in proportion to their GEMMs' weight elements (the first block's where
// no op says).
std::vector<double> block_shares(const LayerDef& layer, double casts) {
  std::vector<double> share(layer.blocks.size(), 0.0);
  double all = 0;
  for (size_t i = 0; i < layer.blocks.size(); ++i)
    for (const OpDef& op : layer.blocks[i].ops) share[i] += op.weight_elems, all += op.weight_elems;
  for (double& s : share) s = all > 0 ? casts * s / all : 0;
  if (all <= 0 && !share.empty()) share.front() = casts;
  return share;
}

// Full recompute: keep the layer input, replay the whole layer in backward.
// In a chunk of several layers (Megatron's uniform method) only the chunk's
// first layer keeps its input; the chunk's replay brings back every layer's
// saved tensors at once, which the stage adds up (LayerSums::add).
// Autocast's weight copies (`casts`) come back with the replay; the backward frees each block's
// with the block, so the attention's backward runs without the MLP's (Mistral-7B's non-reentrant
// mixed step under eager peaks at its replay's end, steps-random-blind16-h200.jsonl).
void full_layer(LayerCost& c, const LayerDef& layer, const LayerChoice& choice, bool early_stop, const HardwareSpec& hw,
                double casts) {
  double all_saved = 0;
  std::vector<double> grads, saved;
  const std::vector<double> block_casts = block_shares(layer, casts);
  for (size_t i = 0; i < layer.blocks.size(); ++i) {
    const Block& b = layer.blocks[i];
    saved.push_back(saved_bytes(b) + block_casts[i]);
    all_saved += saved.back();
    // the last linear's copy is freed with its backward, before the ops before it run theirs
    // (Mistral-7B's replayed layer peaks in the SwiGLU's backward without down_proj's copy,
    // peak-traces-h200/random-blind12-followup)
    grads.push_back(block_working_bytes(layer, b, grad_working_bytes(b, early_stop), early_stop,
                                        last_linear_cast(b, block_casts[i])));
  }
  const size_t mlp_start = mlp_half_start(layer);
  for (const auto& [block, op] : replay_ops(layer, early_stop))
    add_recompute(c, *op, hw, size_t(block - layer.blocks.data()) >= mlp_start);
  const bool head = choice.chunk_position == 0;
  c.kept_bytes = head ? layer.input_bytes : 0;
  // the kept input is among the saved tensors only where an op of the first block saves it (not
  // where the input norm saves its fp32 copy)
  const Block* first = layer.blocks.empty() ? nullptr : &layer.blocks.front();
  const bool input_in_saved =
      first && !first->inputs.empty() && block_saves(*first, first->inputs.front(), first->ops.size());
  c.transient_bytes = all_saved - (input_in_saved ? c.kept_bytes : 0) + largest_working_set(layer, grads, saved);
  // the output's gradient beside the backward, and a reentrant replay's output (codellama-34b's
  // LoRA steps at 12k-49k tokens: peak-traces-h200/unseen11)
  if (layer.pytorch_autograd) c.transient_bytes += layer.input_bytes * (early_stop ? 1 : 2);
  c.transient_bytes = std::max(
      c.transient_bytes, replay_peak_bytes(layer, early_stop) + replay_start_grad_bytes(layer, early_stop) + casts);
  if (!early_stop)
    for (const auto& b : layer.blocks)
      for (const OpDef& op : b.ops) c.transient_bytes += op.reentrant_held_bytes;
  if (choice.chunk_layers > 1) {
    c.chunk_replay_bytes = all_saved - c.kept_bytes;
    c.chunk_start = head;
  }
}

// Selective (Megatron's --recompute-modules): drop the saved tensors tagged
// with one of the modules and replay the ops tagged with them in backward.
// The attention half and the MLP/MoE half of a layer run their backward one
// after the other: the larger half's dropped tensors are alive at once.
// Under ordered backward the attention half's working set sits on what the
// MLP half no longer holds.
void selective_layer(LayerCost& c, const LayerDef& layer, ModuleTags modules, const HardwareSpec& hw) {
  double freed[2] = {0, 0}, grads[2] = {0, 0}, kept[2] = {0, 0};
  const size_t mlp_start = mlp_half_start(layer);
  for (size_t i = 0; i < layer.blocks.size(); ++i) {
    const Block& b = layer.blocks[i];
    const int half = i >= mlp_start ? 1 : 0;
    const double saved = saved_bytes(b), dropped = module_freed_bytes(b, modules);
    kept[half] += saved - dropped;
    grads[half] = std::max(grads[half], grad_working_bytes(b));
    freed[half] += dropped;
    for (const auto& op : b.ops)
      if (op.replayed_by & modules) add_recompute(c, op, hw, half == 1);
  }
  c.kept_bytes = kept[0] + kept[1];
  if (layer.ordered_backward)
    c.transient_bytes = std::max(freed[1] + grads[1], freed[0] + grads[0] - kept[1]);
  else
    c.transient_bytes = std::max(freed[0], freed[1]) + std::max(grads[0], grads[1]);
}

void per_block_layer(LayerCost& c, const LayerDef& layer, const LayerChoice& choice, bool early_stop,
                     const HardwareSpec& hw, BlockCostMemo& memo) {
  size_t next = 0;
  const size_t mlp_start = mlp_half_start(layer);
  std::vector<double> transient, kept;
  for (size_t i = 0; i < layer.blocks.size(); ++i) {
    BlockMode mode = BlockMode::keep;
    if (layer.recomputable[i] && choice.mode == LayerMode::blocks && next < choice.blocks.size())
      mode = choice.blocks[next];
    if (layer.recomputable[i]) ++next;
    const BlockCost& bc = memo.cost(layer.blocks[i], mode, early_stop);
    c.kept_bytes += bc.kept_bytes;
    c.offload_bytes += bc.offload_bytes;
    transient.push_back(mode == BlockMode::keep ? block_working_bytes(layer, layer.blocks[i], bc.transient_bytes, false)
                                                : bc.transient_bytes);
    kept.push_back(bc.kept_bytes);
    for (const OpDef* op : bc.recompute_ops) add_recompute(c, *op, hw, i >= mlp_start);
  }
  c.transient_bytes = largest_working_set(layer, transient, kept);
}

// A framework's host cost of one pass of a layer (apply_framework): a fixed cost per layer, and for an
// MoE layer a floor of host time under its MoE half. Megatron's token dispatcher waits for the GPU
// to finish attention before the host routes the tokens, and its local experts run one after
// another from Python: the MoE half takes the longer of its GPU and host times, attention adds to
// it. 2048-wide experts wait on the host, Mixtral-sized ones keep the GPU busy (reports/megatron).
double with_host_time(double gpu_s, double mlp_gpu_s, const LayerDef& layer, const HardwareSpec& hw) {
  const double t = gpu_s + hw.layer_overhead_s;
  return layer.local_experts > 0 ? t - mlp_gpu_s + std::max(mlp_gpu_s, hw.moe_layer_host_s) : t;
}

}  // namespace

void reduce_to_cost_key(LayerChoice& choice) {
  choice.chunk_layers = std::min<int64_t>(choice.chunk_layers, 2);
  choice.chunk_position = std::min<int64_t>(choice.chunk_position, 1);
}

std::vector<std::pair<const Block*, const OpDef*>> replay_ops(const LayerDef& layer, bool early_stop) {
  std::vector<std::pair<const Block*, const OpDef*>> replay;
  std::vector<const OpDef*> ops;
  for (const auto& b : layer.blocks)
    for (const auto& op : b.ops) replay.push_back({&b, &op}), ops.push_back(&op);
  replay.resize(replayed_op_count(ops, early_stop));
  return replay;
}

const BlockCost& BlockCostMemo::cost(const Block& block, BlockMode mode, bool early_stop) {
  const auto key = std::make_tuple(&block, mode, early_stop);
  auto it = costs_.find(key);
  if (it == costs_.end()) it = costs_.emplace(key, block_cost(block, mode, early_stop)).first;
  return it->second;
}

LayerCost layer_cost(const LayerDef& layer, const LayerChoice& choice, bool early_stop, const HardwareSpec& hw) {
  BlockCostMemo memo;
  return layer_cost(layer, choice, early_stop, hw, memo);
}

LayerCost layer_cost(const LayerDef& layer, const LayerChoice& choice, bool early_stop, const HardwareSpec& hw,
                     BlockCostMemo& memo, double autocast_cast_bytes) {
  LayerCost c;
  const size_t mlp_start = mlp_half_start(layer);
  for (size_t i = 0; i < layer.blocks.size(); ++i)
    for (const auto& op : layer.blocks[i].ops) add_op_times(c, op, hw, i >= mlp_start);
  switch (choice.mode) {
    case LayerMode::full:
      if (choice.stream_chunks > 1)  // StreamBP with D = 1 is layer checkpointing
        streambp_layer(c, layer, choice.stream_chunks, early_stop, hw);
      else
        full_layer(c, layer, choice, early_stop, hw, autocast_cast_bytes);
      break;
    case LayerMode::selective:
      selective_layer(c, layer, choice.modules, hw);
      break;
    case LayerMode::keep:
    case LayerMode::blocks:
      per_block_layer(c, layer, choice, early_stop, hw, memo);
      break;
  }
  // its forward, op by op, as a replay would run it, with the layer input alive beside it
  if (choice.mode == LayerMode::keep && layer.pytorch_autograd)
    c.forward_peak_bytes = layer.input_bytes + replay_peak_bytes(layer, false);
  const bool replays_moe = choice.mode == LayerMode::full ||
                           (choice.mode == LayerMode::selective && (choice.modules & module_bit(MegatronModule::moe)));
  c.host_bound = layer.local_experts > 0 && c.mlp_fwd_s < hw.moe_layer_host_s;
  c.fwd_s = with_host_time(c.fwd_s, c.mlp_fwd_s, layer, hw);
  c.bwd_s = with_host_time(c.bwd_s, c.mlp_bwd_s, layer, hw);
  if (c.recompute_s > 0)
    c.recompute_s =
        replays_moe ? with_host_time(c.recompute_s, c.mlp_recompute_s, layer, hw) : c.recompute_s + hw.layer_overhead_s;
  return c;
}

LayerChoice choice_for(Strategy s, const LayerDef& layer) {
  LayerChoice c;
  const auto blocks = [&](BlockMode m) {
    c.mode = LayerMode::blocks;
    c.blocks.assign(size_t(layer.recompute_block_count()), m);
  };
  switch (s) {
    case Strategy::none:
      c.mode = LayerMode::keep;
      break;
    case Strategy::full:
      c.mode = LayerMode::full;
      break;
    case Strategy::streambp:  // D = 1 here; estimate sets the training spec's D
      c.mode = LayerMode::full;
      c.stream_chunks = 1;
      break;
    case Strategy::selective:
      c.mode = LayerMode::selective;
      break;
    case Strategy::standard:
      blocks(BlockMode::standard);
      break;
    case Strategy::eagle:
      blocks(BlockMode::eagle);
      break;
    case Strategy::offload:
      blocks(BlockMode::offload);
      break;
  }
  return c;
}

LayerChoice offload_choice(const LayerDef& layer) { return choice_for(Strategy::offload, layer); }

}  // namespace remat
