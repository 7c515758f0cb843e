// Megatron-LM flags: --recompute-granularity full|selective,
// --recompute-method block|uniform, --recompute-num-layers (full only),
// --recompute-modules (selective only: core_attn, moe_act, layernorm,
// mla_up_proj, mlp, moe, shared_experts), and fine-grained activation
// offloading (--fine-grained-activation-offloading --offload-modules
// attn_norm qkv_linear core_attn attn_proj mlp_norm expert_fc1 moe_act).
#include "remat/search/megatron_flags.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "remat/search/layer_plan_text.hpp"

namespace remat {

namespace {

// Megatron's selective modules closest to recomputing one of our blocks.
std::vector<std::string> recompute_modules_for(const std::string& block) {
  if (block == "gqa") return {"layernorm", "core_attn"};
  if (block == "mlp") return {"mlp"};
  if (block == "moe.shared") return {"shared_experts"};
  if (block == "moe.routed") return {"moe"};
  if (block == "mla.down") return {"layernorm"};
  if (block == "mla.up_attn") return {"mla_up_proj", "core_attn"};
  return {};
}

// Megatron's offload modules that cover one of our blocks' kept tensors.
std::vector<std::string> offload_modules_for(const std::string& block) {
  if (block == "gqa") return {"attn_norm", "qkv_linear", "core_attn", "attn_proj"};
  if (block == "mlp") return {"mlp_norm"};
  if (block == "moe.shared") return {"mlp_norm"};
  if (block == "moe.routed") return {"expert_fc1", "moe_act"};
  if (block == "mla.down") return {"attn_norm"};
  if (block == "mla.up_attn") return {"qkv_linear", "core_attn", "attn_proj"};
  return {};
}

std::string joined(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : " ") + x;
  return out;
}

bool all_equal(const std::vector<int64_t>& v) {
  for (int64_t x : v)
    if (x != v.front()) return false;
  return true;
}

void r_mode_flags(MegatronFlags& f, const Candidate& c, const SearchSpace& sp) {
  const int64_t r_max = *std::max_element(c.r.begin(), c.r.end());
  if (c.strategy == Strategy::none || r_max == 0) return f.notes.push_back("no recomputation: no recompute flags");
  if (c.strategy == Strategy::full) {
    f.flags = {"--recompute-granularity full", "--recompute-method block",
               fmt::format("--recompute-num-layers {}", r_max)};
  } else if (c.strategy == Strategy::selective) {
    f.flags = {"--recompute-granularity selective", "--recompute-modules core_attn"};
  } else {
    std::set<std::string> modules;
    for (const auto& name : recompute_block_names(sp.shapes.dense))
      for (auto& m : recompute_modules_for(name)) modules.insert(m);
    for (const auto& name : recompute_block_names(sp.shapes.moe))
      for (auto& m : recompute_modules_for(name)) modules.insert(m);
    f.flags = {"--recompute-granularity selective", "--recompute-modules " + joined(modules)};
    f.notes.push_back("Megatron's selective recompute applies to every layer; it has no R for selective modules");
    if (c.strategy == Strategy::eagle)
      f.notes.push_back(
          "EAGLE (analytical gradients of a block's last linear, flash backward without a forward "
          "replay) is not in Megatron-LM: these flags give the same memory at the standard replay cost");
  }
  if (!all_equal(c.r)) {
    std::string listing;
    for (size_t i = 0; i < c.r.size(); ++i) listing += fmt::format("{}stage {}: R = {}", i ? ", " : "", i, c.r[i]);
    f.notes.push_back(
        "Megatron-LM applies one --recompute-num-layers to every stage; this plan recomputes per stage: " + listing);
  }
}

void per_layer_flags(MegatronFlags& f, const Candidate& c, const SearchSpace& sp) {
  std::set<std::string> recompute, offload;
  bool full = false, selective = false;
  for (size_t i = 0; i < c.per_layer.size(); ++i)
    for (size_t j = 0; j < c.per_layer[i].size(); ++j) {
      const LayerChoice& ch = c.per_layer[i][j];
      full = full || ch.mode == LayerMode::full;
      selective = selective || ch.mode == LayerMode::selective;
      if (ch.mode != LayerMode::blocks) continue;
      const auto names = recompute_block_names(sp.stages[i].kinds[j] ? sp.shapes.moe : sp.shapes.dense);
      for (size_t b = 0; b < ch.blocks.size(); ++b) {
        if (ch.blocks[b] == BlockMode::offload)
          for (auto& m : offload_modules_for(names[b])) offload.insert(m);
        if (ch.blocks[b] == BlockMode::standard || ch.blocks[b] == BlockMode::eagle)
          for (auto& m : recompute_modules_for(names[b])) recompute.insert(m);
      }
    }
  if (full) f.flags = {"--recompute-granularity full", "--recompute-method block"};
  if (full && (!recompute.empty() || selective))
    f.notes.push_back("the plan mixes full-layer and block recompute; Megatron-LM takes one granularity");
  if (!recompute.empty() || selective) {
    if (selective) recompute.insert("core_attn");
    f.flags = {"--recompute-granularity selective", "--recompute-modules " + joined(recompute)};
  }
  if (!offload.empty()) {
    f.flags.push_back("--fine-grained-activation-offloading");
    f.flags.push_back("--offload-modules " + joined(offload));
  }
  f.notes.push_back(
      "Megatron-LM sets recompute and offload modules for all layers at once; the per-layer plan below "
      "is exact (remat estimate --layer-plan takes it)");
  for (size_t i = 0; i < c.per_layer.size(); ++i)
    f.notes.push_back(fmt::format(
        "stage {}: {}", i, format_layer_plan(c.per_layer[i], sp.stages[i].base.first_layer, sp.model, sp.training)));
}

}  // namespace

MegatronFlags megatron_flags(const Candidate& c, const SearchSpace& sp) {
  MegatronFlags f;
  if (c.mode == SearchMode::per_layer)
    per_layer_flags(f, c, sp);
  else
    r_mode_flags(f, c, sp);
  return f;
}

}  // namespace remat
