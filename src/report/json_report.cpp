#include "remat/report/json_report.hpp"
#include "remat/spec/lora_placement.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "remat/cost/params.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

int64_t bytes(double b) { return int64_t(std::llround(b)); }

const char* precision_name(Precision p) { return p == Precision::mixed ? "mixed" : "bf16"; }
const char* optimizer_name(Optimizer o) { return o == Optimizer::adam ? "adam" : o == Optimizer::sgd ? "sgd" : "none"; }

Json layer_choice_json(const LayerChoice& c) {
  Json j = {{"mode", to_string(c.mode)}};
  if (c.mode == LayerMode::blocks) {
    Json blocks = Json::array();
    for (BlockMode b : c.blocks) blocks.push_back(to_string(b));
    j["blocks"] = blocks;
  }
  return j;
}

Json stage_json(const StageEstimate& s, Strategy strategy) {
  Json per_layer = Json::array();
  for (const auto& c : s.per_layer) per_layer.push_back(layer_choice_json(c));
  const StageMemory& mem = s.memory_bytes;
  Json j = {
      {"index", s.index},
      // first and last layer, both included, as the tables print them ("0-15")
      {"layers", {s.first_layer, s.last_layer - 1}},
      {"num_layers", s.last_layer - s.first_layer},
      {"recompute", {{"strategy", to_string(strategy)}, {"layers", s.recompute_layers}, {"per_layer", per_layer}}},
      {"offload_layers", s.offload_layers},
      {"host_bound_layers", s.host_bound_layers},
      {"in_flight_microbatches", s.in_flight_microbatches},
      {"memory_bytes",
       {{"weights", bytes(mem.weights)},
        {"gradients", bytes(mem.gradients)},
        {"optimizer", bytes(mem.optimizer)},
        {"activations", bytes(mem.activations)},
        {"transient_peak", bytes(mem.transient_peak)},
        {"runtime", bytes(mem.runtime)},
        {"optimizer_step", bytes(mem.optimizer_step)},
        {"peak", bytes(mem.peak)},
        {"outside_allocator", bytes(mem.outside_allocator)}}},
      {"flops", {{"forward", s.flops.forward}, {"backward", s.flops.backward}, {"recompute", s.flops.recompute}}},
      {"time_s",
       {{"forward", s.time_s.forward},
        {"backward", s.time_s.backward},
        {"recompute", s.time_s.recompute},
        {"offload_exposed", s.time_s.offload_exposed},
        {"total", s.time_s.total}}},
      {"communication_s", s.comm_s},
      {"fits", s.fits},
  };
  // the adapters the step trains: PEFT's trainable parameters less those it never trains (a tower's,
  // DSA's indexer's)
  if (s.adapter_params > 0) j["lora_params"] = s.adapter_params;
  return j;
}

}  // namespace

Json meta_json(const ReportMeta& meta) {
  Json inputs = Json::array();
  for (const auto& in : meta.inputs)
    inputs.push_back({{"role", in.role}, {"source", in.source}, {"sha256", in.sha256}});
  return {{"schema_version", kSchemaVersion}, {"tool", "remat"},         {"tool_version", meta.tool_version},
          {"git_commit", meta.git_commit},    {"command", meta.command}, {"inputs", inputs}};
}

Json model_json(const ModelSpec& m) {
  Json j = {{"name", m.name},
            {"attention", m.attention() == AttentionKind::mla ? "mla" : "gqa"},
            {"hidden_size", m.hidden_size},
            {"intermediate_size", m.intermediate_size},
            {"num_attention_heads", m.num_attention_heads},
            {"num_key_value_heads", m.num_key_value_heads},
            {"vocab_size", m.vocab_size},
            {"num_hidden_layers", m.num_hidden_layers},
            {"tie_word_embeddings", m.tie_word_embeddings}};
  if (m.attention() == AttentionKind::gqa)
    j["head_dim"] = m.head_dim > 0 ? m.head_dim : m.hidden_size / m.num_attention_heads;
  if (m.is_moe()) {
    j["n_routed_experts"] = m.n_routed_experts;
    j["num_experts_per_tok"] = m.num_experts_per_tok;
    j["moe_intermediate_size"] = m.moe_intermediate_size;
    if (m.moe_latent_size > 0) j["moe_latent_size"] = m.moe_latent_size;
    j["n_shared_experts"] = m.n_shared_experts;
    if (m.shared_expert_intermediate_size > 0) j["shared_expert_intermediate_size"] = m.shared_expert_intermediate_size;
    j["first_k_dense_replace"] = m.first_k_dense_replace;
  }
  if (m.attention() == AttentionKind::mla) {
    j["q_lora_rank"] = m.q_lora_rank;
    j["kv_lora_rank"] = m.kv_lora_rank;
    j["qk_rope_head_dim"] = m.qk_rope_head_dim;
    j["qk_nope_head_dim"] = m.qk_nope_head_dim;
    j["v_head_dim"] = m.v_head_dim;
  }
  if (m.sparse_attention()) {
    j["index_n_heads"] = m.index_n_heads;
    j["index_head_dim"] = m.index_head_dim;
    j["index_topk"] = m.index_topk;
    if (!m.indexer_shared_layers.empty())
      j["indexer_layers"] = std::count(m.indexer_shared_layers.begin(), m.indexer_shared_layers.end(), false);
  }
  if (m.num_nextn_predict_layers > 0) j["num_nextn_predict_layers"] = m.num_nextn_predict_layers;
  if (!m.layer_variants.empty()) {  // layers of their own shapes (block_configs): each layer's, 0 where absent
    Json widths = Json::array(), kv_heads = Json::array();
    for (int64_t i = 0; i < m.num_hidden_layers; ++i) {
      widths.push_back(m.has_ffn(i) && !m.layer_is_moe(i) ? m.mlp_width(i) : 0);
      kv_heads.push_back(m.layer_has_attention(i) ? m.attention_shape(i).kv_heads : 0);
    }
    j["layer_mlp_widths"] = widths;
    j["layer_key_value_heads"] = kv_heads;
  }
  if (!m.notes.empty()) j["notes"] = m.notes;
  j["params"] = model_params(m, m.num_hidden_layers);
  if (m.num_nextn_predict_layers > 0) j["mtp_params"] = mtp_params(m, 1, 1).total();
  return j;
}

Json hardware_json(const HardwareSpec& h) {
  return {{"name", h.name},
          {"peak_bf16_flops", h.peak_bf16_flops},
          {"hbm_bytes", bytes(h.hbm_bytes)},
          {"hbm_bytes_per_s", h.hbm_bytes_per_s},
          {"host_link_bytes_per_s", h.host_link_bytes_per_s},
          {"nvlink_bytes_per_s", h.nvlink_bytes_per_s},
          {"memory_reserve_bytes", bytes(h.memory_reserve_bytes)},
          {"calibrated_from", h.calibrated_from}};
}

Json training_core_json(const TrainingSpec& t);

Json training_json(const TrainingSpec& t) {
  Json j = training_core_json(t);
  // issue 6 fields, written only when set so that older reports stay as they were
  if (t.streambp_chunks != 1) j["streambp_chunks"] = t.streambp_chunks;
  if (t.lm_head_chunks != 1) j["lm_head_chunks"] = t.lm_head_chunks;
  if (t.objective != Objective::sft) j["objective"] = t.objective == Objective::grpo ? "grpo" : "dpo";
  if (t.objective == Objective::grpo) j["grpo_group"] = t.grpo_group;
  if (t.lora_rank > 0) {
    j["lora_rank"] = t.lora_rank;
    Json targets = Json::array();
    std::istringstream words(target_words(t.lora_targets));
    for (std::string word; std::getline(words, word, ',');) targets.push_back(word);
    j["lora_targets"] = targets;
    if (t.lora_dropout > 0) j["lora_dropout"] = t.lora_dropout;
  }
  return j;
}

Json training_core_json(const TrainingSpec& t) {
  return {{"framework", t.framework},  // the profile (--framework) every number was computed under
          {"tp", t.tp},
          {"pp", t.pp},
          {"dp", t.dp},
          {"ep", t.ep},
          {"mbs", t.mbs},
          {"gbs", t.gbs},
          {"microbatches", t.microbatches()},
          {"seq", t.seq},
          {"sequence_parallel", t.sequence_parallel && t.tp > 1},
          {"precision", precision_name(t.precision)},
          {"optimizer", optimizer_name(t.optimizer)},
          {"zero_stage", t.zero_stage},
          {"swiglu_fused", t.swiglu_fused},
          {"gqa_expand_kv", t.gqa_expand_kv},
          {"loss_fp32_logits", t.loss_fp32_logits},
          {"flash_attention", t.flash_attention},
          {"recompute_replay", t.replay == RecomputeReplay::full ? "full" : "early_stop"},
          {"layers_per_stage", t.layers_per_stage}};
}

Json plan_json(const Plan& p) {
  Json j = {{"strategy", to_string(p.strategy)},
            {"recompute_layers", p.recompute_layers},
            {"offload_layers", p.offload_layers}};
  if (p.megatron) j["megatron_recompute"] = describe(*p.megatron);
  return j;
}

Json estimate_report(const ReportMeta& meta, const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t,
                     const Plan& p, const Estimate& e) {
  Json stages = Json::array();
  for (const auto& s : e.stages) stages.push_back(stage_json(s, p.strategy));
  const auto& it = e.iteration;
  return {{"meta", meta_json(meta)},
          {"model", model_json(m)},
          {"hardware", hardware_json(hw)},
          {"training", training_json(t)},
          {"plan", plan_json(p)},
          {"stages", stages},
          {"iteration",
           {{"time_s", it.time_s},
            {"mfu", it.mfu},
            {"tokens_per_s", it.tokens_per_s},
            {"model_flops", it.model_flops},
            {"hardware_flops", it.hardware_flops},
            {"bubble_fraction", it.bubble_fraction},
            {"optimizer_step_s", it.optimizer_step_s}}},
          {"budget_bytes", bytes(e.budget_bytes)},
          {"peak_memory_bytes", bytes(e.peak_memory_bytes)},
          {"fits", e.fits}};
}

Json modules_report(const ReportMeta& meta, const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t,
                    const std::vector<ModuleRow>& rows) {
  Json list = Json::array();
  for (const auto& r : rows) {
    Json dims = Json::object();
    for (const auto& [k, v] : r.dims) dims[k] = v;
    list.push_back({{"block", r.block},
                    {"strategy", r.strategy},
                    {"formulas", r.formulas},
                    {"dims", dims},
                    {"kept_bytes", bytes(r.kept_bytes)},
                    {"transient_bytes", bytes(r.transient_bytes)},
                    {"offload_bytes", bytes(r.offload_bytes)},
                    {"flops",
                     {{"forward", r.fwd_flops},
                      {"backward", r.bwd_flops},
                      {"recompute", r.recompute_flops},
                      {"total", r.total_flops()}}},
                    {"time_s", {{"forward", r.fwd_s}, {"backward", r.bwd_s}, {"recompute", r.recompute_s}}}});
  }
  return {{"meta", meta_json(meta)},
          {"model", model_json(m)},
          {"hardware", hardware_json(hw)},
          {"training", training_json(t)},
          {"modules", list}};
}

}  // namespace remat
