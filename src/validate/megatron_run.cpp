#include "remat/validate/megatron_run.hpp"

#include <algorithm>
#include <charconv>
#include <map>

#include "remat/spec/framework.hpp"
#include "remat/spec/pipeline_split.hpp"
#include "remat/spec/problems.hpp"
#include "remat/spec/validate.hpp"

namespace remat {

namespace {

// Every integer argument remat reads is at most this: products of two stay in int64.
constexpr int64_t kMaxArgument = 1'000'000'000;

// Arguments as Megatron-LM prints them (Python reprs), read with the log's
// name in every error.
struct ArgReader {
  const MegatronLog& log;
  std::vector<Problem> problems;

  const std::string* find(const std::string& key) {
    const auto it = log.args.find(key);
    if (it != log.args.end()) return &it->second;
    problems.push_back({log.file, key, "", "argument missing from the log's argument block"});
    return nullptr;
  }
  bool is_none(const std::string& key) {
    const auto it = log.args.find(key);
    return it == log.args.end() || it->second == "None";
  }
  int64_t integer(const std::string& key, int64_t fallback_if_none = -1) {
    const std::string* v = find(key);
    if (!v) return 0;
    if (*v == "None" && fallback_if_none >= 0) return fallback_if_none;
    int64_t x = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
    if (v->empty() || ec != std::errc() || end != v->data() + v->size() || x < 0 || x > kMaxArgument) {
      problems.push_back({log.file, key, *v, "must be an integer between 0 and " + std::to_string(kMaxArgument)});
      return 0;
    }
    return x;
  }
  bool flag(const std::string& key) {
    const std::string* v = find(key);
    if (!v) return false;
    if (*v != "True" && *v != "False") problems.push_back({log.file, key, *v, "must be True or False"});
    return *v == "True";
  }
  std::string text(const std::string& key) {
    const std::string* v = find(key);
    return v ? *v : "";
  }
  // "['core_attn', 'mlp']" -> {"core_attn", "mlp"}
  std::vector<std::string> list(const std::string& key) {
    std::vector<std::string> out;
    const std::string* v = find(key);
    if (!v || *v == "None") return out;
    std::string item;
    bool quoted = false;
    for (char c : *v) {
      if (c == '\'') {
        if (quoted) out.push_back(item), item.clear();
        quoted = !quoted;
      } else if (quoted) {
        item += c;
      }
    }
    return out;
  }
  void refuse(const std::string& key, const std::string& value, const std::string& why) {
    problems.push_back({log.file, key, value, why});
  }
};

ModelSpec model_from(ArgReader& a, int64_t tp) {
  ModelSpec m;
  m.name = "Megatron-LM run";
  m.source = a.log.file;
  m.num_hidden_layers = a.integer("num_layers");
  m.hidden_size = a.integer("hidden_size");
  m.intermediate_size = a.integer("ffn_hidden_size");
  m.num_attention_heads = a.integer("num_attention_heads");
  m.num_key_value_heads = a.flag("group_query_attention") ? a.integer("num_query_groups") : m.num_attention_heads;
  m.head_dim = a.integer("kv_channels", m.num_attention_heads > 0 ? m.hidden_size / m.num_attention_heads : 0);
  // Megatron pads the vocabulary to a multiple of make_vocab_size_divisible_by x tp
  const int64_t multiple = std::max<int64_t>(1, a.integer("make_vocab_size_divisible_by") * tp);
  const int64_t vocab = a.integer("vocab_size");
  m.vocab_size = (vocab + multiple - 1) / multiple * multiple;
  m.tie_word_embeddings = !a.flag("untie_embeddings_and_output_weights");
  if (a.log.args.count("mtp_num_layers") && !a.is_none("mtp_num_layers"))
    m.num_nextn_predict_layers = a.integer("mtp_num_layers");
  if (!a.is_none("num_experts")) {
    m.n_routed_experts = a.integer("num_experts");
    m.num_experts_per_tok = a.integer("moe_router_topk");
    m.moe_intermediate_size = a.integer("moe_ffn_hidden_size", m.intermediate_size);
    if (!a.is_none("moe_shared_expert_intermediate_size") && m.moe_intermediate_size > 0)
      m.set_shared_mlp_width(a.integer("moe_shared_expert_intermediate_size"));
    const std::string freq = a.text("moe_layer_freq");
    if (freq != "1") a.refuse("moe_layer_freq", freq, "remat models MoE in every layer (moe_layer_freq 1) here");
  }
  if (!a.flag("swiglu")) a.refuse("swiglu", "False", "remat models SwiGLU MLPs only");
  if (a.text("normalization") != "RMSNorm") a.refuse("normalization", a.text("normalization"), "remat models RMSNorm");
  if (a.flag("add_bias_linear")) a.refuse("add_bias_linear", "True", "remat models linears without bias");
  if (a.flag("multi_latent_attention"))
    a.refuse("multi_latent_attention", "True", "MLA does not run under --transformer-impl local");
  return m;
}

TrainingSpec training_from(ArgReader& a) {
  TrainingSpec t;
  t.tp = a.integer("tensor_model_parallel_size");
  t.pp = a.integer("pipeline_model_parallel_size");
  t.ep = a.integer("expert_model_parallel_size");
  const int64_t world = a.integer("world_size");
  const int64_t cp = a.integer("context_parallel_size");
  if (cp != 1) a.refuse("context_parallel_size", std::to_string(cp), "remat models no context parallelism");
  t.dp = t.tp * t.pp > 0 ? world / (t.tp * t.pp) : 0;
  if (t.tp * t.pp > 0 && world % (t.tp * t.pp) != 0)
    a.refuse("world_size", std::to_string(world),
             "must be a multiple of tensor_model_parallel_size x pipeline_model_parallel_size = " +
                 std::to_string(t.tp * t.pp));
  t.mbs = a.integer("micro_batch_size");
  t.gbs = a.integer("global_batch_size");
  t.seq = a.integer("seq_length");
  t.sequence_parallel = a.flag("sequence_parallel");
  if (!a.flag("bf16")) a.refuse("bf16", "False", "remat models bf16 mixed precision runs");
  const std::string optimizer = a.text("optimizer");
  if (optimizer == "adam")
    t.optimizer = Optimizer::adam;
  else if (optimizer == "sgd")
    t.optimizer = Optimizer::sgd;
  else
    a.refuse("optimizer", optimizer, "remat models adam and sgd");
  const std::string impl = a.text("transformer_impl");
  if (impl != "local") a.refuse("transformer_impl", impl, "remat has a profile for --transformer-impl local only");
  if (!a.is_none("num_layers_per_virtual_pipeline_stage"))
    a.refuse("num_layers_per_virtual_pipeline_stage", a.text("num_layers_per_virtual_pipeline_stage"),
             "interleaved pipelines are not compared here");
  t = apply_framework(t, kMegatronLocalFramework);
  t.sequence_parallel = a.flag("sequence_parallel");
  t.zero_stage = a.flag("use_distributed_optimizer") ? 1 : 0;
  for (const char* key : {"account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"})
    if (a.log.args.count(key) && a.flag(key))
      a.refuse(key, "True", "remat does not model the embedding or loss counted as a layer of the split");
  return t;
}

// The split Megatron-LM built from --decoder-first/last-pipeline-num-layers or
// --pipeline-model-parallel-layout (empty: even).
std::vector<int64_t> split_from(ArgReader& a, int64_t layers, int64_t pp, int64_t mtp_layers) {
  MegatronSplitText text;
  const auto read = [&](const char* key, std::string& out) {
    if (a.log.args.count(key) && !a.is_none(key)) out = a.text(key);
  };
  read("decoder_first_pipeline_num_layers", text.first_stage_layers);
  read("decoder_last_pipeline_num_layers", text.last_stage_layers);
  read("pipeline_model_parallel_layout", text.layout);
  if (text.empty() || layers < 1 || pp < 1 || pp > layers) return {};
  return megatron_layers_per_stage(text, layers, pp, a.log.file, mtp_layers);
}

Plan plan_from(ArgReader& a, std::string& words) {
  Plan p;
  MegatronRecompute r;
  const std::string granularity = a.text("recompute_granularity");
  const bool moe_layer_recompute = a.log.args.count("moe_layer_recompute") && a.flag("moe_layer_recompute");
  if (moe_layer_recompute && granularity == "full")
    a.refuse("moe_layer_recompute", "True", "Megatron-LM refuses it with full recompute granularity");
  if (a.log.args.count("distribute_saved_activations") && a.flag("distribute_saved_activations"))
    a.refuse("distribute_saved_activations", "True", "remat does not model saved inputs split across tp ranks");
  if (a.log.args.count("cpu_offloading") && a.flag("cpu_offloading"))
    a.refuse("cpu_offloading", "True", "remat does not model Megatron-LM's CPU activation offloading");
  if (granularity == "full") {
    r.granularity = MegatronGranularity::full;
    const std::string method = a.text("recompute_method");
    r.num_layers = a.integer("recompute_num_layers");
    if (method == "block")
      r.method = MegatronMethod::block;
    else if (method != "uniform")
      a.refuse("recompute_method", method, "must be uniform or block with full granularity");
    p.strategy = Strategy::full;
  } else if (granularity == "selective" || moe_layer_recompute) {
    r.granularity = MegatronGranularity::selective;
    r.modules = 0;
    // TransformerConfig.__post_init__: recompute_modules None means ["core_attn"]; the
    // deprecated --moe-layer-recompute turns selective on and appends "moe"
    std::vector<std::string> names = a.list("recompute_modules");
    if (a.is_none("recompute_modules")) names = {"core_attn"};
    if (moe_layer_recompute) names.push_back("moe");
    for (const auto& name : names) {
      MegatronModule m;
      if (parse_megatron_module(name, m))
        r.modules |= module_bit(m);
      else
        a.refuse("recompute_modules", a.text("recompute_modules"), "names a module remat does not know: " + name);
    }
    p.strategy = Strategy::selective;
  } else if (granularity != "None") {
    a.refuse("recompute_granularity", granularity, "must be full, selective or None");
  }
  words = describe(r);
  p.megatron = r;
  return p;
}

// The checks name remat's keys and flags; a log's problems name its arguments
// and quote what the log says.
std::vector<Problem> in_log_terms(std::vector<Problem> problems, const MegatronLog& log) {
  static const std::map<std::string, std::string> argument = {{"--tp", "tensor_model_parallel_size"},
                                                              {"--pp", "pipeline_model_parallel_size"},
                                                              {"--dp", "world_size"},
                                                              {"--ep", "expert_model_parallel_size"},
                                                              {"--mbs", "micro_batch_size"},
                                                              {"--gbs", "global_batch_size"},
                                                              {"--seq", "seq_length"},
                                                              {"num_hidden_layers", "num_layers"},
                                                              {"intermediate_size", "ffn_hidden_size"},
                                                              {"num_key_value_heads", "num_query_groups"},
                                                              {"head_dim", "kv_channels"},
                                                              {"n_routed_experts", "num_experts"},
                                                              {"num_experts_per_tok", "moe_router_topk"},
                                                              {"moe_intermediate_size", "moe_ffn_hidden_size"}};
  for (Problem& p : problems) {
    const auto it = argument.find(p.key);
    if (it != argument.end()) p.key = it->second;
    p.file = log.file;
    const auto value = log.args.find(p.key);
    if (value != log.args.end()) p.value = value->second;
  }
  return problems;
}

}  // namespace

MegatronSetup megatron_setup(const MegatronLog& log) {
  ArgReader a{log, {}};
  MegatronSetup s;
  s.training = training_from(a);
  s.model = model_from(a, std::max<int64_t>(1, s.training.tp));
  s.plan = plan_from(a, s.recompute);
  if (!a.problems.empty()) throw InputError(a.problems);
  s.training.layers_per_stage =
      split_from(a, s.model.num_hidden_layers, s.training.pp, s.model.num_nextn_predict_layers);
  auto checks = validate_model(s.model, log.file);
  auto layout = validate_training(s.training, s.model);
  checks.insert(checks.end(), layout.begin(), layout.end());
  if (!checks.empty()) throw InputError(in_log_terms(checks, log));
  return s;
}

double steady_iteration_ms(const MegatronLog& log, int64_t* count) {
  std::vector<double> ms;
  for (const auto& [iteration, t] : log.iteration_ms)
    if (iteration > 2) ms.push_back(t);
  if (count) *count = int64_t(ms.size());
  return median(ms);
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

MegatronComparison compare_megatron(const MegatronLog& log, const HardwareSpec& hw) {
  MegatronComparison c;
  c.setup = megatron_setup(log);
  const TrainingSpec& t = c.setup.training;
  const HardwareSpec profiled = apply_framework(hw, kMegatronLocalFramework);
  c.estimate = estimate(c.setup.model, profiled, t, c.setup.plan, hw.hbm_bytes);
  constexpr double kMiB = 1024.0 * 1024.0;
  for (const auto& r : log.ranks) {
    MegatronRankRow row;
    row.rank = r.rank;
    row.stage = r.rank / (t.tp * t.dp);  // Megatron's rank order: tp fastest, pp slowest
    if (row.stage >= int64_t(c.estimate.stages.size()))
      throw InputError({{log.file, "[Rank " + std::to_string(r.rank) + "]", std::to_string(r.rank),
                         "is beyond the run's world size"}});
    const StageMemory& mem = c.estimate.stages.at(size_t(row.stage)).memory_bytes;
    row.predicted_peak_MiB = mem.peak / kMiB;
    row.predicted_outside_allocator_MiB = mem.outside_allocator / kMiB;
    row.measured_max_allocated_MiB = r.max_allocated_MiB;
    row.measured_max_reserved_MiB = r.max_reserved_MiB;
    row.measured_device_used_MiB = r.device_used_MiB;
    c.ranks.push_back(row);
  }
  std::vector<bool> reported(c.estimate.stages.size(), false);
  for (const MegatronRankRow& row : c.ranks) reported[size_t(row.stage)] = true;
  for (size_t stage = 0; stage < reported.size(); ++stage)
    if (!reported[stage])
      throw InputError({{log.file, "memory (MB)", "stage " + std::to_string(stage),
                         "no rank of this pipeline stage reports its memory (ranks missing from the log)"}});
  c.predicted_iteration_ms = c.estimate.iteration.time_s * 1000;
  c.measured_iteration_ms = steady_iteration_ms(log, &c.timed_iterations);
  if (c.timed_iterations == 0)
    throw InputError({{log.file, "elapsed time per iteration (ms)", std::to_string(log.iteration_ms.size()) + " lines",
                       "has no iteration after the second (the first two warm up): run with --train-iters 3 or more"}});
  return c;
}

}  // namespace remat
