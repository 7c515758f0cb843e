#include "remat/cost/modules.hpp"

#include <algorithm>

#include "remat/cost/exact_blocks.hpp"
#include "remat/cost/op_time.hpp"
#include "remat/cost/paper_formulas.hpp"
#include "remat/spec/plan.hpp"

namespace remat {

namespace {

struct ModuleDef {
  std::string name;
  std::vector<Block> blocks;
  std::vector<bool> recomputable;
};

std::vector<ModuleDef> exact_modules(const ModelSpec& m, const RankShape& rank) {
  const RankShape r = with_model(rank, m);
  std::vector<ModuleDef> out;
  const bool mla = m.attention() == AttentionKind::mla;
  const AttentionShape a = m.attention_shape_of(true);  // q, k and v widths of the (windowed) layers
  const int64_t proj = mla ? 0 : a.heads * a.head_dim + a.kv_heads * (a.head_dim + a.value_head_dim);
  if (!mla) out.push_back({"rmsnorm_linear", {rmsnorm_linear_block(r, m.hidden_size, proj, "rmsnorm_linear")}, {true}});
  if (m.has_dense_mlp_layer(m.num_hidden_layers)) out.push_back({"mlp", {dense_mlp_block(r, m)}, {true}});
  if (m.is_moe()) {
    const Block shared = moe_shared_block(r, m), routed = moe_routed_block(r, m);
    out.push_back({"moe", {shared, routed}, {true, true}});
    out.push_back({"moe.shared", {shared}, {true}});
    out.push_back({"moe.routed", {routed}, {true}});
  }
  if (mla) {
    const Block down = mla_down_block(r, m), up = mla_up_attn_block(r, m);
    out.push_back({"rmsnorm_linear", {down}, {true}});  // norm + the fused down projections
    out.push_back({"mla", {down, up, attention_out_glue(r, m)}, {true, true, false}});
    out.push_back({"mla.down", {down}, {true}});
    out.push_back({"mla.up_attn", {up}, {true}});
  } else {
    out.push_back({"gqa", {gqa_block(r, m), attention_out_glue(r, m)}, {true, false}});
  }
  bool mamba = false, deltanet = false, short_conv = false, mamba1 = false, parallel = false, lightning = false;
  for (int64_t i = 0; i < m.num_hidden_layers; ++i) {
    mamba |= m.mixer(i) == Mixer::mamba2, deltanet |= m.mixer(i) == Mixer::gated_deltanet;
    short_conv |= m.mixer(i) == Mixer::short_conv, mamba1 |= m.mixer(i) == Mixer::mamba1;
    parallel |= m.mixer(i) == Mixer::attention_mamba2, lightning |= m.mixer(i) == Mixer::lightning;
  }
  if (parallel)
    out.push_back({"attention_mamba2", {attention_mamba2_block(r, m), attention_mamba2_glue(r, m)}, {true, false}});
  if (mamba) out.push_back({"mamba2", {mamba2_block(r, m), mixer_out_glue(r, m.hidden_size)}, {true, false}});
  if (deltanet)
    out.push_back({"gated_deltanet", {gated_deltanet_block(r, m), mixer_out_glue(r, m.hidden_size)}, {true, false}});
  if (short_conv)
    out.push_back({"short_conv", {short_conv_block(r, m), mixer_out_glue(r, m.hidden_size)}, {true, false}});
  if (mamba1) out.push_back({"mamba1", {mamba1_block(r, m), mixer_out_glue(r, m.hidden_size)}, {true, false}});
  if (lightning) out.push_back({"lightning", {lightning_block(r, m), mixer_out_glue(r, m.hidden_size)}, {true, false}});
  for (CompressedAttention kind :
       {CompressedAttention::sliding, CompressedAttention::sparse, CompressedAttention::heavy}) {
    bool present = false;
    for (int64_t i = 0; i < m.num_hidden_layers; ++i)
      present |= m.mixer(i) == Mixer::compressed_attention && m.compressed_layer(i) == kind;
    const char* names[] = {"v4_sliding", "v4_csa", "v4_hca"};
    if (present)
      out.push_back({names[int(kind)],
                     {compressed_attention_block(r, m, kind), hyper_connection_out_glue(r, m, "attn.out")},
                     {true, false}});
  }
  return out;
}

ModuleRow exact_row(const ModuleDef& def, BlockMode mode, bool early_stop, const HardwareSpec& hw) {
  ModuleRow row;
  row.block = def.name;
  row.strategy = to_string(mode == BlockMode::keep ? BlockMode::keep : mode);
  if (mode == BlockMode::keep) row.strategy = "none";
  row.formulas = "exact";
  for (size_t i = 0; i < def.blocks.size(); ++i) {
    const BlockCost c = block_cost(def.blocks[i], def.recomputable[i] ? mode : BlockMode::keep, early_stop);
    row.kept_bytes += c.kept_bytes;
    row.offload_bytes += c.offload_bytes;
    row.transient_bytes = std::max(row.transient_bytes, c.transient_bytes);
    for (const auto& op : def.blocks[i].ops) {
      const OpTime t = op_time(op, hw);
      row.fwd_s += t.fwd_s, row.bwd_s += t.bwd_s;
      row.fwd_flops += op.fwd_flops, row.bwd_flops += op.bwd_flops;
    }
    for (const OpDef* op : c.recompute_ops) {
      row.recompute_s += op_time(*op, hw).fwd_s;
      row.recompute_flops += op->fwd_flops;
    }
  }
  return row;
}

paper::Dims paper_dims(const ModelSpec& m, const TrainingSpec& t, paper::Module module) {
  paper::Dims d;
  d.b = double(t.mbs), d.s = double(t.seq), d.h = double(m.hidden_size);
  d.g = double(m.num_key_value_heads), d.d = double(gqa_head_dim(m));
  d.a = double(m.num_attention_heads);
  d.K = double(std::max<int64_t>(1, m.num_experts_per_tok));
  if (m.attention() == AttentionKind::mla) {
    d.d = double(m.qk_nope_head_dim), d.r = double(m.qk_rope_head_dim);
    d.h_q = double(m.q_lora_rank), d.h_kv = double(m.kv_lora_rank);
  }
  switch (module) {
    case paper::Module::rmsnorm_linear:
      d.h1 = m.attention() == AttentionKind::mla
                 ? d.h_tilde()
                 : double((m.num_attention_heads + 2 * m.num_key_value_heads) * gqa_head_dim(m));
      break;
    case paper::Module::moe:
      d.h1 = double(m.moe_intermediate_size);
      break;
    default:
      d.h1 = double(m.intermediate_size);
      break;
  }
  return d;
}

std::map<std::string, double> dims_map(const paper::Dims& d) {
  return {{"b", d.b}, {"s", d.s}, {"h", d.h},     {"h1", d.h1},     {"g", d.g}, {"d", d.d},
          {"a", d.a}, {"r", d.r}, {"h_q", d.h_q}, {"h_kv", d.h_kv}, {"K", d.K}};
}

// Table 1 rows. Time: F+B over the GPU's best GEMM rate (the table gives no split).
void add_paper_rows(std::vector<ModuleRow>& rows, const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t) {
  std::vector<std::pair<std::string, paper::Module>> mods = {{"rmsnorm_linear", paper::Module::rmsnorm_linear}};
  if (m.has_dense_mlp_layer(m.num_hidden_layers)) mods.push_back({"mlp", paper::Module::mlp});
  if (m.is_moe()) mods.push_back({"moe", paper::Module::moe});
  mods.push_back(m.attention() == AttentionKind::mla ? std::pair{"mla", paper::Module::mla}
                                                     : std::pair{"gqa", paper::Module::gqa});
  const double rate = hw.peak_bf16_flops * gemm_efficiency(hw.efficiency, 1e15);
  for (const auto& [name, module] : mods) {
    const paper::Dims d = paper_dims(m, t, module);
    const double none_flops = paper::table1(module, d, paper::Method::none).flops;
    for (auto [label, method] : {std::pair{"none", paper::Method::none},
                                 {"standard", paper::Method::standard},
                                 {"eagle", paper::Method::eagle}}) {
      const paper::Cell c = paper::table1(module, d, method);
      ModuleRow row;
      row.block = name, row.strategy = label, row.formulas = "paper", row.dims = dims_map(d);
      row.kept_bytes = c.memory_bytes;
      row.fwd_flops = none_flops / 3, row.bwd_flops = 2 * none_flops / 3;  // F+B = 3 forward
      row.recompute_flops = c.flops - none_flops;
      row.fwd_s = row.fwd_flops / rate, row.bwd_s = row.bwd_flops / rate, row.recompute_s = row.recompute_flops / rate;
      rows.push_back(row);
    }
  }
}

}  // namespace

std::vector<ModuleRow> module_rows(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, Formulas f) {
  std::vector<ModuleRow> rows;
  if (f == Formulas::paper) {
    add_paper_rows(rows, m, hw, t);
    return rows;
  }
  const RankShape r = rank_shape(t);
  const bool early = t.replay == RecomputeReplay::early_stop;
  for (const ModuleDef& def : exact_modules(m, r)) {
    const paper::Module pm = def.name.rfind("moe", 0) == 0   ? paper::Module::moe
                             : def.name.rfind("mla", 0) == 0 ? paper::Module::mla
                             : def.name == "mlp"             ? paper::Module::mlp
                             : def.name == "gqa"             ? paper::Module::gqa
                                                             : paper::Module::rmsnorm_linear;
    for (BlockMode mode : {BlockMode::keep, BlockMode::standard, BlockMode::eagle, BlockMode::offload}) {
      ModuleRow row = exact_row(def, mode, early, hw);
      row.dims = dims_map(paper_dims(m, t, pm));
      row.dims["tp"] = double(t.tp);
      row.dims["ep"] = double(t.ep);
      rows.push_back(row);
    }
  }
  return rows;
}

}  // namespace remat
