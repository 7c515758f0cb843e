#include "remat/report/plan_report.hpp"

#include <fmt/format.h>

#include "remat/report/tables.hpp"
#include "remat/search/layer_plan_text.hpp"

namespace remat {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string r_text(const Candidate& c) {
  if (c.mode == SearchMode::per_layer) return "per layer";
  std::string s;
  for (size_t i = 0; i < c.r.size(); ++i) s += (i ? "," : "") + std::to_string(c.r[i]);
  return s;
}

std::string layer_plan_text(const Candidate& c, const SearchSpace& sp) {
  std::string out;
  for (size_t i = 0; i < c.per_layer.size(); ++i)
    out += (i ? ";" : "") + format_layer_plan(c.per_layer[i], sp.stages[i].base.first_layer, sp.model, sp.training);
  return out;
}

std::vector<std::string> candidate_row(const Candidate& c) {
  return {to_string(c.mode),
          c.mode == SearchMode::per_layer ? "mixed" : to_string(c.strategy),
          r_text(c),
          fmt::format("{:.2f}", c.peak_bytes / kGiB),
          c.fits ? "yes" : "NO",
          fmt::format("{:.3f}", c.time_s)};
}

const std::vector<std::string> kCandidateHeaders = {"mode", "strategy", "R per stage", "peak GiB", "fits", "iter s"};

MegatronArgs runnable_args(const SearchSpace& sp, const RunnablePlan& rp, bool te) {
  return megatron_args(sp.model, rp.training, rp.split, rp.best->setting, te);
}

Json runnable_json(const SearchSpace& sp, const PlanSearchResult& res, const RunnablePlan& rp, bool te) {
  if (!rp.best) return {{"fits", false}, {"reason", rp.reason}};
  const RunnableCandidate& b = *rp.best;
  const MegatronArgs a = runnable_args(sp, rp, te);
  Json j = {{"setting", describe(b.setting)},
            {"time_s", b.time_s},
            {"peak_bytes", int64_t(std::llround(b.peak_bytes))},
            {"fits", b.fits},
            {"layers_per_stage", rp.split.layers_per_stage},
            {"split_flags", split_flags(rp.split)},
            {"flags", a.all()},
            {"command_line", one_line(a.all())},
            {"recompute_flags", a.recompute},
            {"notes", a.notes},
            {"torchtitan", torchtitan_text(b.setting, rp.split)},
            {"pytorch", pytorch_text(b.setting, rp.split)},
            {"candidates", int64_t(rp.candidates.size())}};
  if (res.best)
    j["restriction_cost"] = {{"time_s", b.time_s - res.best->time_s},
                             {"peak_bytes", int64_t(std::llround(b.peak_bytes - res.best->peak_bytes))}};
  return j;
}

std::string runnable_table(const SearchSpace& sp, const PlanSearchResult& res, const RunnablePlan& rp, bool te) {
  if (!rp.best) return "\nMegatron-LM: " + rp.reason + "\n";
  const RunnableCandidate& b = *rp.best;
  std::string out = fmt::format("\nbest plan Megatron-LM runs as-is ({}): {:.3f} s per iteration, peak {:.2f} GiB",
                                describe(b.setting), b.time_s, b.peak_bytes / kGiB);
  if (res.best)
    out += fmt::format(" ({:+.3f} s, {:+.2f} GiB against the exact plan)", b.time_s - res.best->time_s,
                       (b.peak_bytes - res.best->peak_bytes) / kGiB);
  const MegatronArgs a = runnable_args(sp, rp, te);
  for (const auto& note : a.notes) out += "\nnote: " + note;
  // nothing inside or right after the block: a comment line there would end a pasted command
  out += "\nMegatron-LM flags (one setting for every stage; paste anywhere in the launch command):\n";
  out += paste_safe(a.all());
  out += "torchtitan: " + torchtitan_text(b.setting, rp.split) + "\n";
  out += "PyTorch: " + pytorch_text(b.setting, rp.split) + "\n";
  return out;
}

// The frontier, the checkpoint-interval rows and the candidate counts.
std::string frontier_and_intervals(const PlanSearchResult& res) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : res.frontier) rows.push_back(candidate_row(c));
  std::string out = "\nfrontier (no other plan is both faster and smaller):\n" + render_table(kCandidateHeaders, rows);
  rows.clear();
  for (const auto& r : res.intervals)
    rows.push_back({std::to_string(r.stage), std::to_string(r.layers), std::to_string(r.chen_k),
                    fmt::format("{:.2f}", r.chen_peak_bytes / kGiB), std::to_string(r.best_k),
                    fmt::format("{:.2f}", r.best_peak_bytes / kGiB)});
  if (!rows.empty())  // none where the stack runs no whole-layer recompute for this model
    out += "\ncheckpoint every k layers (full replay of each segment):\n" +
           render_table({"stage", "layers", "sqrt rule k", "peak GiB", "best k", "peak GiB"}, rows);
  out += fmt::format("\n{} candidates: {} over budget, {} slower than the best\n", res.evaluated, res.over_budget,
                     res.slower);
  return out;
}

}  // namespace

Json candidate_json(const Candidate& c, const SearchSpace& sp) {
  Json j = {{"mode", to_string(c.mode)},
            {"strategy", c.mode == SearchMode::per_layer ? "mixed" : to_string(c.strategy)},
            {"recompute_layers", c.r},
            {"time_s", c.time_s},
            {"peak_bytes", int64_t(std::llround(c.peak_bytes))},
            {"fits", c.fits}};
  if (c.mode == SearchMode::per_layer) j["layer_plan"] = layer_plan_text(c, sp);
  if (!c.reason.empty()) j["reason"] = c.reason;
  if (!c.search_note.empty()) j["search_note"] = c.search_note;
  return j;
}

Json shortfall_json(const Shortfall& s, const SearchSpace& sp) {
  return {{"candidate", candidate_json(s.smallest, sp)},
          {"stage", s.stage},
          {"in_flight_microbatches", s.in_flight_microbatches},
          {"memory_bytes",
           {{"weights", int64_t(std::llround(s.weights_bytes))},
            {"gradients", int64_t(std::llround(s.gradients_bytes))},
            {"optimizer", int64_t(std::llround(s.optimizer_bytes))},
            {"activations", int64_t(std::llround(s.activations_bytes))},
            {"transient_peak", int64_t(std::llround(s.transient_bytes))},
            {"peak", int64_t(std::llround(s.peak_bytes))}}},
          {"budget_bytes", int64_t(std::llround(s.budget_bytes))},
          {"over_budget_bytes", int64_t(std::llround(s.peak_bytes - s.budget_bytes))},
          {"transient", s.transient_is_head ? "lm_head_and_loss" : "layer_backward"},
          {"cause", to_string(s.cause)},
          {"why", s.why()}};
}

std::optional<Plan> reported_plan(const PlanSearchResult& res, const SearchSpace& sp) {
  if (res.best) return res.best_plan;
  if (res.shortfall) return to_plan(res.shortfall->smallest, sp);
  return std::nullopt;
}

Json plan_search_report(const ReportMeta& meta, const SearchSpace& sp, const SearchOptions& o,
                        const PlanSearchResult& res, const Estimate* est, const RunnablePlan* runnable, bool te) {
  Json strategies = Json::array();
  for (Strategy s : o.strategies) strategies.push_back(to_string(s));
  Json j = {{"meta", meta_json(meta)},
            {"model", model_json(sp.model)},
            {"hardware", hardware_json(sp.hardware)},
            {"training", training_json(sp.training)},
            {"search",
             {{"strategies", strategies},
              {"uniform_r", o.uniform_r},
              {"per_stage_r", o.per_stage_r},
              {"per_layer", o.per_layer},
              {"offload", o.offload},
              {"budget_bytes", int64_t(std::llround(o.budget_bytes))},
              {"evaluated", res.evaluated},
              {"over_budget", res.over_budget},
              {"slower", res.slower}}},
            {"fits", res.best.has_value()}};
  if (res.best) {
    j["best"] = candidate_json(*res.best, sp);
  } else {
    j["reason"] = res.reason;
    if (res.shortfall) j["smallest_footprint"] = shortfall_json(*res.shortfall, sp);
  }
  if (runnable) j["megatron"] = runnable_json(sp, res, *runnable, te);
  const std::optional<Plan> plan = reported_plan(res, sp);
  if (est && plan) {
    const Json full = estimate_report(meta, sp.model, sp.hardware, sp.training, *plan, *est);
    j["stages"] = full["stages"];
    j["iteration"] = full["iteration"];
    j["peak_memory_bytes"] = full["peak_memory_bytes"];
  }
  for (const char* key : {"frontier", "best_by_strategy", "rejected"}) j[key] = Json::array();
  for (const auto& c : res.frontier) j["frontier"].push_back(candidate_json(c, sp));
  for (const auto& c : res.best_by_strategy) j["best_by_strategy"].push_back(candidate_json(c, sp));
  for (const auto& c : res.rejected) j["rejected"].push_back(candidate_json(c, sp));
  Json intervals = Json::array();
  for (const auto& r : res.intervals)
    intervals.push_back({{"stage", r.stage},
                         {"layers", r.layers},
                         {"chen_sqrt_k", r.chen_k},
                         {"chen_peak_bytes", int64_t(std::llround(r.chen_peak_bytes))},
                         {"best_k", r.best_k},
                         {"best_peak_bytes", int64_t(std::llround(r.best_peak_bytes))},
                         {"microbatch_s", r.time_s}});
  j["checkpoint_interval"] = intervals;
  return j;
}

namespace {

// Nothing fits: the reason, then the smallest footprint's stages and layer plan.
std::string no_fit_table(const SearchSpace& sp, const PlanSearchResult& res, const Estimate* est) {
  std::string out = res.reason + "\n";
  if (!res.shortfall) return out;
  const Shortfall& s = *res.shortfall;
  out += fmt::format(
      "\nsmallest footprint ({}, {}): stage {} peaks at {:.2f} GiB, {:.2f} GiB over the budget of "
      "{:.2f} GiB\n",
      to_string(s.smallest.mode), s.smallest.mode == SearchMode::per_layer ? "mixed" : to_string(s.smallest.strategy),
      s.stage, s.peak_bytes / kGiB, (s.peak_bytes - s.budget_bytes) / kGiB, s.budget_bytes / kGiB);
  const std::optional<Plan> plan = reported_plan(res, sp);
  if (est && plan) out += estimate_table(sp.model, sp.hardware, sp.training, *plan, *est);
  if (s.smallest.mode == SearchMode::per_layer) out += "--layer-plan '" + layer_plan_text(s.smallest, sp) + "'\n";
  if (!s.smallest.search_note.empty()) out += "note: " + s.smallest.search_note + "\n";
  return out + frontier_and_intervals(res);
}

}  // namespace

std::string plan_search_table(const SearchSpace& sp, const SearchOptions& o, const PlanSearchResult& res,
                              const Estimate* est, const RunnablePlan* runnable, bool te) {
  if (!res.best) return no_fit_table(sp, res, est) + (runnable ? runnable_table(sp, res, *runnable, te) : "");
  std::string out = fmt::format("best plan ({}, {}): {:.3f} s per iteration, peak {:.2f} GiB of {:.2f} GiB\n",
                                to_string(res.best->mode),
                                res.best->mode == SearchMode::per_layer ? "mixed" : to_string(res.best->strategy),
                                res.best->time_s, res.best->peak_bytes / kGiB, o.budget_bytes / kGiB);
  if (est) out += estimate_table(sp.model, sp.hardware, sp.training, res.best_plan, *est);
  if (res.best->mode == SearchMode::per_layer) out += "--layer-plan '" + layer_plan_text(*res.best, sp) + "'\n";
  if (!res.best->search_note.empty()) out += "note: " + res.best->search_note + "\n";
  if (runnable) out += runnable_table(sp, res, *runnable, te);
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : res.best_by_strategy) rows.push_back(candidate_row(c));
  out += "\nfastest fitting plan per strategy:\n" + render_table(kCandidateHeaders, rows);
  return out + frontier_and_intervals(res);
}

}  // namespace remat
