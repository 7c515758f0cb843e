#include "remat/cost/block.hpp"

#include <algorithm>
#include <string_view>

#include "remat/spec/plan.hpp"

namespace remat {

size_t replayed_op_count(const std::vector<const OpDef*>& ops, bool early_stop) {
  size_t end = ops.size();
  if (!early_stop) return end;
  while (end > 0) {
    const OpDef& op = *ops[end - 1];
    if (op.kind == OpKind::attention) break;  // flash saves its own output
    --end;
    if (op.kind == OpKind::gemm) break;
  }
  return end;
}

double Block::tensor_bytes(std::string_view tensor) const {
  for (const auto& t : tensors)
    if (t.name == tensor) return t.bytes;
  return 0;
}

void Block::tag(ModuleTags modules, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    for (auto& t : tensors)
      if (t.name == n) t.freed_by |= modules;
    for (auto& op : ops)
      if (op.name == n) op.replayed_by |= modules;
  }
}

namespace {

// A set of tensor names: sorted and unique, viewing the block's own strings.
using NameSet = std::vector<std::string_view>;

void insert(NameSet& set, const std::vector<std::string>& names) { set.insert(set.end(), names.begin(), names.end()); }

NameSet sorted_unique(NameSet set) {
  std::sort(set.begin(), set.end());
  set.erase(std::unique(set.begin(), set.end()), set.end());
  return set;
}

bool contains(const NameSet& set, std::string_view name) { return std::binary_search(set.begin(), set.end(), name); }

NameSet saved_names(const Block& block) {
  NameSet names;
  size_t count = block.kept_outside.size() + (block.inputs_saved ? block.inputs.size() : 0);
  for (const auto& op : block.ops) count += op.saves.size();
  names.reserve(count);  // one allocation, not one per doubling
  if (block.inputs_saved) insert(names, block.inputs);
  insert(names, block.kept_outside);
  for (const auto& op : block.ops) insert(names, op.saves);
  return sorted_unique(std::move(names));
}

double sum_bytes(const Block& block, const NameSet& names) {
  double total = 0;
  for (const auto& n : names) total += block.tensor_bytes(n);
  return total;
}

std::vector<const OpDef*> replay_ops(const std::vector<OpDef>& ops, bool early_stop) {
  std::vector<const OpDef*> out;
  for (const auto& op : ops) out.push_back(&op);
  out.resize(replayed_op_count(out, early_stop));
  return out;
}

// EAGLE (Algorithms 2 and 4): no replay of the block's final linear (its
// gradients come analytically from the recomputed input) and no flash forward
// (its backward reads the kept output and softmax statistics).
std::vector<const OpDef*> eagle_ops(const Block& block) {
  std::vector<const OpDef*> out;
  for (size_t i = 0; i < block.ops.size(); ++i) {
    const OpDef& op = block.ops[i];
    const bool final_linear = i + 1 == block.ops.size() && op.kind == OpKind::gemm;
    if (final_linear || op.kind == OpKind::attention) continue;
    out.push_back(&op);
  }
  return out;
}

}  // namespace

double saved_bytes(const Block& block) { return sum_bytes(block, saved_names(block)); }

double module_freed_bytes(const Block& block, ModuleTags modules) {
  double total = 0;
  const NameSet saved = saved_names(block);
  for (const auto& t : block.tensors) {
    const bool is_saved = contains(saved, t.name);
    if (is_saved && (t.freed_by & modules)) total += t.bytes;
    if (!is_saved && (t.checkpoint_input_of & modules)) total -= t.bytes;
  }
  return total;
}

WorkingSite tensor_working_site(const Block& block) {
  WorkingSite site{0, block.ops.size()};
  const TensorDef* chosen = nullptr;
  for (const auto& t : block.tensors) {
    // a reader copy: its gradient, beside the saved copy; else `working_copies` of the tensor's size
    const double bytes = t.reader_copies > 0 ? t.bytes / t.reader_copies : t.working_copies * t.bytes;
    if (bytes > site.bytes) site.bytes = bytes, chosen = &t;
  }
  for (size_t i = 0; chosen && i < block.ops.size(); ++i) {
    const auto& saves = block.ops[i].saves;
    if (std::find(saves.begin(), saves.end(), chosen->name) != saves.end()) return {site.bytes, i};
  }
  return site;
}

double grad_working_bytes(const Block& block, bool early_stop) {
  double stated = 0;
  for (const auto& op : block.ops)
    stated = std::max(stated, op.working_bytes - (early_stop ? op.early_stop_released_bytes : 0));
  return stated > 0 ? stated : tensor_working_site(block).bytes;
}

BlockCost block_cost(const Block& block, BlockMode mode, bool early_stop) {
  BlockCost cost;
  for (const auto& op : block.ops) {
    cost.fwd_flops += op.fwd_flops;
    cost.bwd_flops += op.bwd_flops;
    cost.bwd_exec_flops += op.bwd_exec_flops;
  }
  const double all_saved = saved_bytes(block);
  const double grads = grad_working_bytes(block);
  NameSet kept;
  kept.reserve(block.inputs.size() + block.kept_outside.size() + block.attention_stats.size());
  insert(kept, block.inputs);
  insert(kept, block.kept_outside);

  switch (mode) {
    case BlockMode::keep:
      cost.kept_bytes = all_saved;
      cost.transient_bytes = grads;
      return cost;
    case BlockMode::offload:
      cost.kept_bytes = 0;
      cost.offload_bytes = all_saved;
      cost.transient_bytes = all_saved + grads;  // copied back before its backward
      return cost;
    case BlockMode::standard:
      cost.recompute_ops = replay_ops(block.ops, early_stop);
      break;
    case BlockMode::eagle:
      insert(kept, block.attention_stats);
      cost.recompute_ops = eagle_ops(block);
      break;
  }
  cost.kept_bytes = sum_bytes(block, sorted_unique(std::move(kept)));
  cost.transient_bytes = all_saved - cost.kept_bytes + grads;
  for (const OpDef* op : cost.recompute_ops) cost.recompute_flops += op->fwd_flops;
  return cost;
}

}  // namespace remat
