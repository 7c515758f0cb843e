// The linear modules of a layer by the names PEFT's target_modules match, for the families that
// do not name them as LLaMA does (q_proj ... down_proj), read from each family's modeling code in
// transformers 5.17 (the remote code where transformers has no port).
#include <algorithm>
#include <string_view>
#include <vector>

#include "hf_families.hpp"
#include "remat/spec/model_spec.hpp"

namespace remat {

namespace {

struct FamilyModules {
  std::string_view families;  // space-separated model_types (remat's family names)
  std::vector<LinearModule> modules;
  bool complete = true;  // every nn.Linear of its layers listed
};

// LLaMA's attention names (q_proj ... o_proj), `extra`, then LLaMA's MLP names where `llama_mlp`.
std::vector<LinearModule> llama_with(std::vector<LinearModule> extra, bool llama_mlp) {
  std::vector<LinearModule> modules = {{"q_proj", "q"}, {"k_proj", "k"}, {"v_proj", "v"}, {"o_proj", "o"}};
  modules.insert(modules.end(), extra.begin(), extra.end());
  if (llama_mlp) modules.insert(modules.end(), {{"gate_proj", "gate"}, {"up_proj", "up"}, {"down_proj", "down"}});
  return modules;
}

// Where one name covers two modules, the entry carries the parent too (GPT-2's attn.c_proj and
// mlp.c_proj): PEFT's "c_proj" reaches both, "mlp.c_proj" one. "" marks a module remat prices no
// adapter on; a target reaching it is refused.
const std::vector<FamilyModules>& family_modules() {
  static const std::vector<FamilyModules> table = {
      // DeepSeek-V4's modules by their paths in a layer (DeepseekV4DecoderLayer): PEFT matches a target by
      // a path's end, so kv_proj reaches the attention's, the compressor's and the indexer's
      // (reports/hf/dsv4-lora-probe-h200.jsonl); o_a_proj's adapter raises (lora_targets.cpp refuses it).
      // Its router is a weight of its own module, not an nn.Linear; its experts are not converted.
      {"deepseek_v4",
       {{"self_attn.q_a_proj", "q_a"},
        {"self_attn.q_b_proj", "q_b"},
        {"self_attn.kv_proj", "kv_a"},
        {"self_attn.o_a_proj", ""},
        {"self_attn.o_b_proj", "o"},
        {"self_attn.compressor.kv_proj", "compress_kv"},
        {"self_attn.compressor.gate_proj", "compress_gate"},
        {"self_attn.compressor.indexer.kv_proj", "index_kv"},
        {"self_attn.compressor.indexer.gate_proj", "index_gate"},
        {"self_attn.compressor.indexer.q_b_proj", "wq_b"},
        {"self_attn.compressor.indexer.scorer.weights_proj", "weights_proj"},
        {"mlp.shared_experts.gate_proj", "gate"},
        {"mlp.shared_experts.up_proj", "up"},
        {"mlp.shared_experts.down_proj", "down"}}},
      // GPTNeoXAttention, FalconAttention, BloomAttention, PersimmonAttention; their MLPs
      {"gpt_neox falcon bloom persimmon",
       {{"query_key_value", "qkv"}, {"dense", "o"}, {"dense_h_to_4h", "up"}, {"dense_4h_to_h", "down"}}},
      // Conv1D modules, which PEFT adapts as linears (fan_in_fan_out)
      {"gpt2 openai-gpt gpt_bigcode",
       {{"c_attn", "qkv"}, {"attn.c_proj", "o"}, {"c_fc", "up"}, {"mlp.c_proj", "down"}}},
      {"gptj",
       {{"q_proj", "q"}, {"k_proj", "k"}, {"v_proj", "v"}, {"out_proj", "o"}, {"fc_in", "up"}, {"fc_out", "down"}}},
      {"codegen", {{"qkv_proj", "qkv"}, {"out_proj", "o"}, {"fc_in", "up"}, {"fc_out", "down"}}},
      {"gpt_neo",
       {{"q_proj", "q"}, {"k_proj", "k"}, {"v_proj", "v"}, {"out_proj", "o"}, {"c_fc", "up"}, {"c_proj", "down"}}},
      {"opt biogpt xglm",
       {{"q_proj", "q"}, {"k_proj", "k"}, {"v_proj", "v"}, {"out_proj", "o"}, {"fc1", "up"}, {"fc2", "down"}}},
      {"phi", {{"q_proj", "q"}, {"k_proj", "k"}, {"v_proj", "v"}, {"dense", "o"}, {"fc1", "up"}, {"fc2", "down"}}},
      {"phi-msft mixformer-sequential", {{"Wqkv", "qkv"}, {"out_proj", "o"}, {"fc1", "up"}, {"fc2", "down"}}},
      {"starcoder2",
       {{"q_proj", "q"}, {"k_proj", "k"}, {"v_proj", "v"}, {"o_proj", "o"}, {"c_fc", "up"}, {"c_proj", "down"}}},
      {"mpt", {{"Wqkv", "qkv"}, {"out_proj", "o"}, {"up_proj", "up"}, {"down_proj", "down"}}},
      // DbrxFFN's experts are parameters; its router a linear named layer
      {"dbrx", {{"Wqkv", "qkv"}, {"out_proj", "o"}, {"router.layer", "router"}}},
      {"ctrl", {{"Wq", "q"}, {"Wk", "k"}, {"Wv", "v"}, {"dense", "o"}, {"ffn.0", "up"}, {"ffn.2", "down"}}},
      {"phi3", {{"qkv_proj", "qkv"}, {"o_proj", "o"}, {"gate_up_proj", "gate_up"}, {"down_proj", "down"}}},
      // GlmMLP and Glm4MLP: one gate_up_proj
      {"glm glm4",
       {{"q_proj", "q"},
        {"k_proj", "k"},
        {"v_proj", "v"},
        {"o_proj", "o"},
        {"gate_up_proj", "gate_up"},
        {"down_proj", "down"}}},
      // ChatGLM's remote code: dense_h_to_4h is gate and up in one (split for SwiGLU)
      {"chatglm",
       {{"query_key_value", "qkv"}, {"dense", "o"}, {"dense_h_to_4h", "gate_up"}, {"dense_4h_to_h", "down"}}},
      {"internlm2", {{"wqkv", "qkv"}, {"wo", "o"}, {"w1", "gate"}, {"w3", "up"}, {"w2", "down"}}},
      {"baichuan",
       {{"W_pack", "qkv"}, {"o_proj", "o"}, {"gate_proj", "gate"}, {"up_proj", "up"}, {"down_proj", "down"}}},
      // Qwen 1's QWenMLP: w1(x) * silu(w2(x)), then c_proj
      {"qwen", {{"c_attn", "qkv"}, {"attn.c_proj", "o"}, {"w2", "gate"}, {"w1", "up"}, {"mlp.c_proj", "down"}}},
      // EXAONE 3's remote code: ExaoneGatedMLP's c_fc_0 is the gate
      {"exaone",
       {{"q_proj", "q"},
        {"k_proj", "k"},
        {"v_proj", "v"},
        {"out_proj", "o"},
        {"c_fc_0", "gate"},
        {"c_fc_1", "up"},
        {"c_proj", "down"}}},
      // TeleChat's remote code: keys and values in one key_value projection
      {"telechat",
       {{"query", "q"},
        {"key_value", ""},
        {"dense", "o"},
        {"gate_proj", "gate"},
        {"up_proj", "up"},
        {"down_proj", "down"}}},
      // Kimi Linear: MLA layers (q_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj) beside KDA layers (q_proj,
      // k_proj, v_proj, o_proj, beta's b_proj as Qwen3.5's in_proj_b, the forget gate's f_a_proj and
      // f_b_proj, the output gate's g_a_proj and g_b_proj; peft-all-linear-types-h200.jsonl)
      {"kimi_linear",
       {{"q_proj", "q"},
        {"k_proj", "k"},
        {"v_proj", "v"},
        {"o_proj", "o"},
        {"b_proj", "in_proj_b"},
        {"f_a_proj", "f_a"},
        {"f_b_proj", "f_b"},
        {"g_a_proj", "g_a"},
        {"g_b_proj", "g_b"},
        {"gate_proj", "gate"},
        {"up_proj", "up"},
        {"down_proj", "down"},
        {"kv_a_proj_with_mqa", "kv_a"},
        {"kv_b_proj", "kv_b"}}},
      // GraniteMoeShared's and Granite 4.0-H's shared MLP: input_linear is gate and up in one,
      // output_linear the down; Granite 4.0-H's Mamba-2 mixers' in_proj and out_proj
      {"granitemoeshared granitemoehybrid",
       llama_with(
           {{"input_linear", "gate_up"}, {"output_linear", "down"}, {"in_proj", "mixer_in"}, {"out_proj", "mixer_out"}},
           false)},
      // Nemotron-H: Mamba-2, attention, relu^2 MLP or MoE layers, each its block's `mixer` (a latent MoE's
      // fc1_latent_proj and fc2_latent_proj beside its shared experts); PEFT refuses out_proj here
      {"nemotron_h", llama_with({{"in_proj", "mixer_in"},
                                 {"out_proj", "mixer_out"},
                                 {"up_proj", "up"},
                                 {"down_proj", "down"},
                                 {"fc1_latent_proj", ""},
                                 {"fc2_latent_proj", ""}},
                                false)},
      // Llama 3.2 Vision's language model: LLaMA's names, which reach its cross-attention layers'
      // cross_attn.q/k/v/o_proj and MLPs too (held untrained: lora_held_layer_params)
      {"mllama_text_model", llama_with({}, true)},
      // Mamba-2 alone (Mamba2Mixer): its in_proj and out_proj, which PEFT refuses here
      {"mamba2", {{"in_proj", "mixer_in"}, {"out_proj", "mixer_out"}}},
      // Mamba-1 (MambaMixer, FalconMambaMixer): in_proj, x_proj, dt_proj and out_proj; PEFT refuses
      // out_proj here (reports/hf/mamba1-adapters-h200.jsonl)
      {"mamba falcon_mamba",
       {{"in_proj", "mixer_in"}, {"x_proj", "mamba_x"}, {"dt_proj", "mamba_dt"}, {"out_proj", "mixer_out"}}},
      // Jamba's Mamba-1 layers (JambaMambaMixer) beside LLaMA's attention and dense MLP; its routed
      // experts are stacked weights PEFT leaves alone, its router an nn.Linear (kRouterReadings)
      {"jamba",
       llama_with({{"in_proj", "mixer_in"}, {"x_proj", "mamba_x"}, {"dt_proj", "mamba_dt"}, {"out_proj", "mixer_out"}},
                  true)},
      // MiniMax-01: lightning attention's qkv_proj (q|k|v), output_gate and out_proj beside the full-attention
      // layers' q/k/v/o_proj; Mixtral's expert names, which PEFT converts (peft-all-linear-types-h200.jsonl)
      {"minimax", llama_with({{"qkv_proj", "mixer_in"},
                              {"output_gate", "mixer_gate"},
                              {"out_proj", "mixer_out"},
                              {"w1", "gate"},
                              {"w3", "up"},
                              {"w2", "down"}},
                             false)},
      // Bamba's and Falcon-H1's Mamba-2 layers beside LLaMA's attention and MLP
      {"bamba falcon_h1", llama_with({{"in_proj", "mixer_in"}, {"out_proj", "mixer_out"}}, true)},
      // Laguna's and Step 3.5's per-head attention gate g_proj (h x heads)
      {"laguna step3p5", llama_with({{"g_proj", "head_gate"}}, true)},
      // Lfm2Attention's out_proj beside Lfm2ShortConv's in_proj and out_proj; Lfm2MLP's w1, w3, w2
      {"lfm2 lfm2_moe",
       {{"q_proj", "q"},
        {"k_proj", "k"},
        {"v_proj", "v"},
        {"self_attn.out_proj", "o"},
        {"w1", "gate"},
        {"w3", "up"},
        {"w2", "down"},
        {"in_proj", "mixer_in"},
        {"conv.out_proj", "mixer_out"}}},
      // OLMo Hybrid's Gated DeltaNet names q_proj, k_proj, v_proj and o_proj as its attention does; its
      // g_proj, a_proj and b_proj play Qwen3.5's in_proj_z, in_proj_a and in_proj_b
      {"olmo_hybrid", llama_with({{"g_proj", "in_proj_z"}, {"a_proj", "in_proj_a"}, {"b_proj", "in_proj_b"}}, true)},
      // Qwen3-Next's Gated DeltaNet (in_proj_qkvz, in_proj_ba, out_proj) beside its gated attention
      {"qwen3_next",
       llama_with(
           {{"in_proj_qkvz", "in_proj_qkvz"}, {"in_proj_ba", "in_proj_ba"}, {"linear_attn.out_proj", "mixer_out"}},
           true)},
      // Qwen3.5's: in_proj_qkv, in_proj_z, in_proj_b and in_proj_a apart (ModelSpec::gdn_split_projections)
      {"qwen3_5_text qwen3_5_moe_text", llama_with({{"in_proj_qkv", "in_proj_qkv"},
                                                    {"in_proj_z", "in_proj_z"},
                                                    {"in_proj_b", "in_proj_b"},
                                                    {"in_proj_a", "in_proj_a"},
                                                    {"linear_attn.out_proj", "mixer_out"}},
                                                   true)},
  };
  return table;
}

// What PEFT's all-linear reaches of an MoE router that transformers 5.17 does not convert
// (reports/hf/peft-all-linear-*-h200.jsonl): an nn.Linear by this name, or "" where the router is a module
// of its own that PEFT leaves alone (a router target there is PEFT's "not supported" error). Converted
// families' routers are the "gate" PEFT retargets at gate.weight.
struct RouterReading {
  std::string_view families;
  std::string_view linear;
};
constexpr RouterReading kRouterReadings[] = {
    {"llama4_text phimoe jamba aria_text", "router"},
    {"qwen2_moe qwen3_5_moe_text granitemoe granitemoeshared granitemoehybrid laguna step3p5 mistral4 hy_v3 lfm2_moe "
     "nemotron_h qwen3_vl_moe_text kimi_linear",
     ""},
};

bool lists(std::string_view families, std::string_view family);

// The router's entry in linear_modules, and whether PEFT's reading of it is known.
void set_router_module(const std::string& family, ModelSpec& m) {
  if (m.experts_peft_converted) {
    m.linear_modules.push_back({"gate", "router"});
    m.router_reading_known = true;
    return;
  }
  for (const RouterReading& r : kRouterReadings) {
    if (!lists(r.families, family)) continue;
    if (!r.linear.empty()) m.linear_modules.push_back({std::string(r.linear), "router"});
    m.router_reading_known = true;
    // PhiMoE's and Llama 4's routers return a tuple, on which PEFT's adapter raises (AttributeError:
    // 'tuple' object has no attribute 'dtype'; all-linear-unpriced-h200.jsonl,
    // steps-vision-all-linear-blind2-h200.jsonl)
    m.router_adapter_raises = family == "phimoe" || family == "llama4_text";
    return;
  }
  m.linear_modules.push_back({"gate", "router"});  // transformers 5's name; what PEFT reaches unknown
}

bool lists(std::string_view families, std::string_view family) {
  while (!families.empty()) {
    const size_t space = families.find(' ');
    if (families.substr(0, space) == family) return true;
    if (space == std::string_view::npos) break;
    families.remove_prefix(space + 1);
  }
  return false;
}

}  // namespace

namespace {

const FamilyModules* listed_modules(const std::string& family) {
  for (const FamilyModules& f : family_modules())
    if (lists(f.families, family)) return &f;
  return nullptr;
}

// LLaMA's names as the family's layers change them
void adjust_llama_names(const std::string& family, ModelSpec& m) {
  // a two-matrix MLP under LLaMA's names (Apertus, Arcee, Jais 2, NanoChat, Nemotron) has up_proj
  // and down_proj only: PEFT's all-linear adapted no gate there (reports/hf/peft-all-linear-*-h200.jsonl)
  if (m.mlp_kind == MlpKind::two_matrix)
    std::erase_if(m.linear_modules, [](const LinearModule& l) { return l.name == "gate_proj"; });
  // DeepSeek's latent attention (and the families that build it so): q_proj only without a query
  // latent, no k_proj or v_proj
  if (m.attention() == AttentionKind::mla) {
    std::erase_if(m.linear_modules,
                  [](const LinearModule& l) { return l.matrix == "q" || l.matrix == "k" || l.matrix == "v"; });
    if (m.q_lora_rank == 0)
      m.linear_modules.push_back({"q_proj", "q"});
    else
      m.linear_modules.insert(m.linear_modules.end(), {{"q_a_proj", "q_a"}, {"q_b_proj", "q_b"}});
    m.linear_modules.insert(m.linear_modules.end(), {{"kv_a_proj_with_mqa", "kv_a"}, {"kv_b_proj", "kv_b"}});
  }
  // Mixtral's pattern: PEFT converts the pre-v5 expert names w1, w3 and w2
  if (m.experts_peft_converted && (family == "mixtral" || family == "minimax" || family == "minimax_m2"))
    for (LinearModule& l : m.linear_modules)
      if (l.matrix == "gate" || l.matrix == "up" || l.matrix == "down")
        l.name = l.matrix == "gate" ? "w1" : l.matrix == "up" ? "w3" : "w2";
}

}  // namespace

void set_linear_modules(const std::string& family, ModelSpec& m) {
  const FamilyModules* listed = listed_modules(family);
  if (listed) {
    m.linear_modules = listed->modules;
    m.linear_modules_complete = listed->complete;
    m.gdn_split_projections = family == "qwen3_5_text" || family == "qwen3_5_moe_text";
  } else {
    adjust_llama_names(family, m);
  }
  // a router the family's table names (DBRX's router.layer) is an nn.Linear
  if (std::any_of(m.linear_modules.begin(), m.linear_modules.end(),
                  [](const LinearModule& l) { return l.matrix == "router"; }))
    m.router_reading_known = true;
  else if (m.is_moe())
    set_router_module(family, m);
  if (m.shared_expert_gate) m.linear_modules.push_back({"shared_expert_gate", "shared_expert_gate"});
  // DSA's lightning indexer (DeepSeek-V3.2, GLM-5)
  if (m.index_n_heads > 0)
    m.linear_modules.insert(m.linear_modules.end(), {{"wq_b", "wq_b"}, {"wk", "wk"}, {"weights_proj", "weights_proj"}});
  // Mamba, Gated DeltaNet, lightning and convolution mixers name their projections in ways remat does
  // not list: a name not listed is refused there, not skipped
  if (!listed && m.is_hybrid()) m.linear_modules_complete = false;
  // PEFT 0.21 (tuners_utils.py, _check_lora_target_modules_mamba) raises on LoRA reaching a module
  // named out_proj or conv1d in these model_types
  m.peft_refuses_out_proj = family == "nemotron_h" || family == "falcon_h1" || family == "mamba" ||
                            family == "mamba2" || family == "falcon_mamba";
}

}  // namespace remat
