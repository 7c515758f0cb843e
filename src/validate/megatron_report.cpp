#include "remat/validate/megatron_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "remat/report/json_text.hpp"
#include "remat/report/svg.hpp"

namespace remat {

namespace {

// Runs that differ only in their recompute settings share this key.
std::string layout_key(const MegatronSetup& s) {
  const ModelSpec& m = s.model;
  const TrainingSpec& t = s.training;
  std::string stages;
  for (int64_t n : t.layers_per_stage) stages += fmt::format("{},", n);
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", m.num_hidden_layers, m.hidden_size,
                     m.intermediate_size, m.num_attention_heads, m.num_key_value_heads, m.vocab_size,
                     m.n_routed_experts, m.num_experts_per_tok, m.moe_intermediate_size, t.tp, t.pp, t.dp, t.ep, t.mbs,
                     t.gbs, t.seq, t.zero_stage, t.num_layers_override, stages);
}

std::vector<std::string> layout_keys(const std::vector<MegatronRun>& runs) {
  std::vector<std::string> keys;
  for (const auto& run : runs) keys.push_back(layout_key(run.comparison.setup));
  return keys;
}

struct Extremes {
  double peak_abs = 0, time_abs = 0, ratio_abs = 0;
  int runs = 0, ranks = 0, ratios = 0;
};

// A recompute run set beside a no-recompute run of its own session (a none run is its own baseline).
bool has_recompute_ratio(const MegatronRun& run, const RecomputeRatio& ratio) {
  return ratio.has_baseline && run.comparison.setup.recompute != "none";
}

// Over the runs whose host-bound state is `host_bound`; peak over every run.
Extremes extremes(const std::vector<MegatronRun>& runs, const std::vector<RecomputeRatio>& ratios, bool host_bound) {
  Extremes e;
  for (size_t i = 0; i < runs.size(); ++i) {
    if ((runs[i].host_bound_layers() > 0) != host_bound) continue;
    ++e.runs;
    for (const auto& r : runs[i].comparison.ranks)
      e.peak_abs = std::max(e.peak_abs, std::fabs(r.error_pct())), ++e.ranks;
    e.time_abs = std::max(e.time_abs, std::fabs(runs[i].comparison.time_error_pct()));
    if (has_recompute_ratio(runs[i], ratios[i]))
      e.ratio_abs = std::max(e.ratio_abs, std::fabs(ratios[i].error_pct())), ++e.ratios;
  }
  return e;
}

std::string extremes_line(const Extremes& e) {
  return fmt::format(
      "peak (max allocated) within {:.2f}% ({} ranks); iteration time within {:.1f}%; "
      "time of each recompute setting over none within {:.1f}% ({} runs)",
      e.peak_abs, e.ranks, e.time_abs, e.ratio_abs, e.ratios);
}

Json repeats_json(const std::vector<MegatronRun>& runs) {
  Json list = Json::array();
  for (const auto& g : session_repeats(runs)) {
    Json logs = Json::array(), measured = Json::array();
    for (size_t j : g.runs) logs.push_back(runs[j].name), measured.push_back(runs[j].comparison.measured_iteration_ms);
    list.push_back({{"logs", logs}, {"measured_iteration_ms", measured}, {"spread_pct", g.spread_pct()}});
  }
  return list;
}

Json extremes_json(const Extremes& e) {
  return {{"runs", e.runs},
          {"ranks", e.ranks},
          {"max_abs_peak_error_pct", e.peak_abs},
          {"max_abs_time_error_pct", e.time_abs},
          {"max_abs_ratio_error_pct", e.ratio_abs},
          {"ratios", e.ratios}};
}

}  // namespace

int64_t MegatronRun::host_bound_layers() const { return remat::host_bound_layers(comparison.estimate); }

std::vector<RecomputeRatio> recompute_ratios(const std::vector<MegatronRun>& runs) {
  const std::vector<std::string> keys = layout_keys(runs);
  std::vector<RecomputeRatio> out(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const MegatronComparison& c = runs[i].comparison;
    std::vector<double> predicted_ms, measured_ms;
    for (size_t j = 0; j < runs.size(); ++j) {
      const MegatronComparison& b = runs[j].comparison;
      if (b.setup.recompute != "none" || keys[j] != keys[i] || runs[j].session != runs[i].session) continue;
      predicted_ms.push_back(b.predicted_iteration_ms);
      measured_ms.push_back(b.measured_iteration_ms);
    }
    if (measured_ms.empty()) continue;
    out[i] = {c.predicted_iteration_ms / median(predicted_ms), c.measured_iteration_ms / median(measured_ms), true,
              int(measured_ms.size())};
  }
  return out;
}

std::vector<RepeatGroup> session_repeats(const std::vector<MegatronRun>& runs) {
  std::vector<std::string> keys = layout_keys(runs);
  for (size_t i = 0; i < runs.size(); ++i) keys[i] += "|" + runs[i].session + "|" + runs[i].comparison.setup.recompute;
  std::vector<RepeatGroup> groups;
  std::vector<bool> grouped(runs.size(), false);
  for (size_t i = 0; i < runs.size(); ++i) {
    if (grouped[i]) continue;
    RepeatGroup g;
    g.fastest_ms = g.slowest_ms = runs[i].comparison.measured_iteration_ms;
    for (size_t j = i; j < runs.size(); ++j) {
      if (grouped[j] || keys[j] != keys[i]) continue;
      g.runs.push_back(j), grouped[j] = true;
      g.fastest_ms = std::min(g.fastest_ms, runs[j].comparison.measured_iteration_ms);
      g.slowest_ms = std::max(g.slowest_ms, runs[j].comparison.measured_iteration_ms);
    }
    if (g.runs.size() > 1) groups.push_back(g);
  }
  return groups;
}

std::string megatron_table(const std::vector<MegatronRun>& runs, const std::string& hardware_name) {
  const auto ratios = recompute_ratios(runs);
  std::string out = fmt::format("Megatron-LM runs beside remat (--framework megatron-local, {})\n", hardware_name);
  out +=
      fmt::format("{:<46} {:>4} {:>5} {:>10} {:>10} {:>7} {:>9} {:>9} {:>7} {:>13} {:>4}\n", "run (recompute)", "rank",
                  "stage", "pred MiB", "meas MiB", "err %", "pred ms", "meas ms", "err %", "vs none err %", "host");
  out += std::string(135, '-') + "\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const MegatronComparison& c = runs[i].comparison;
    for (size_t k = 0; k < c.ranks.size(); ++k) {
      const MegatronRankRow& r = c.ranks[k];
      std::string time = k == 0 ? fmt::format("{:>9.1f} {:>9.1f} {:>+7.1f}", c.predicted_iteration_ms,
                                              c.measured_iteration_ms, c.time_error_pct())
                                : std::string(27, ' ');
      std::string ratio = k == 0 && has_recompute_ratio(runs[i], ratios[i])
                              ? fmt::format("{:>+13.1f}", ratios[i].error_pct())
                              : std::string(13, ' ');
      const std::string name = k == 0 ? runs[i].name : "  (" + c.setup.recompute + ")";
      const std::string host = k == 0 && runs[i].host_bound_layers() > 0 ? "  yes" : "";
      out += fmt::format("{:<46} {:>4} {:>5} {:>10.0f} {:>10.0f} {:>+7.2f} {} {}{}\n", name.substr(0, 46), r.rank,
                         r.stage, r.predicted_peak_MiB, r.measured_max_allocated_MiB, r.error_pct(), time, ratio, host);
    }
  }
  const Extremes gpu = extremes(runs, ratios, false), host = extremes(runs, ratios, true);
  out += "\n";
  if (gpu.runs > 0) out += fmt::format("{} runs GPU-bound: {}\n", gpu.runs, extremes_line(gpu));
  if (host.runs > 0)
    out +=
        fmt::format("{} runs host-bound (an MoE layer's forward below the framework's host time, \"host\" above): {}\n",
                    host.runs, extremes_line(host));
  const auto repeats = session_repeats(runs);
  if (!repeats.empty()) out += "Same flags run again in one session (the measurement's own spread):\n";
  for (const auto& g : repeats) {
    std::string names;
    for (size_t j : g.runs) names += (names.empty() ? "" : ", ") + runs[j].name;
    out +=
        fmt::format("  {}: {:.1f} to {:.1f} ms ({:.1f}% apart)\n", names, g.fastest_ms, g.slowest_ms, g.spread_pct());
  }
  std::string drifted;
  for (const auto& run : runs)
    if (const HostDrift d = host_drift(run); d.known && std::fabs(d.pct()) >= kHostDriftNotedPct)
      drifted += fmt::format("  {}: {:.2f} to {:.2f} us ({:+.1f}%)\n", run.name, d.launch_before_us, d.launch_after_us,
                             d.pct());
  if (!drifted.empty())
    out += fmt::format(
               "Host speed moved during the run (host_probe.py's kernel launch before / after, {:.0f}% or more):\n",
               kHostDriftNotedPct) +
           drifted;
  return out;
}

namespace {

// host_probe.py's JSON as a JSON value; a hand-edited line that is not JSON is kept as text
Json probe_json(const std::string& line) {
  nlohmann::json probe;
  JsonParseFailure failure;  // nested deeper than kMaxJsonDepth, repeated keys, not JSON: kept as text
  return parse_json_bounded(line, probe, failure) ? Json(probe) : Json(line);
}

double launch_us(const Json& probe) {
  const auto it = probe.is_object() ? probe.find("launch_us") : probe.end();
  return it != probe.end() && it->is_number() ? it->get<double>() : 0;
}

HostDrift drift_between(const Json& before, const Json& after) {
  HostDrift d;
  d.launch_before_us = launch_us(before);
  d.launch_after_us = launch_us(after);
  d.known = d.launch_before_us > 0 && d.launch_after_us > 0;
  return d;
}

}  // namespace

HostDrift host_drift(const MegatronRun& run) { return drift_between(probe_json(run.host), probe_json(run.host_after)); }

Json megatron_report(const ReportMeta& meta, const std::vector<MegatronRun>& runs, const std::string& hardware_name) {
  const auto ratios = recompute_ratios(runs);
  Json list = Json::array();
  for (size_t i = 0; i < runs.size(); ++i) {
    const MegatronComparison& c = runs[i].comparison;
    Json ranks = Json::array();
    for (const auto& r : c.ranks)
      ranks.push_back({{"rank", r.rank},
                       {"stage", r.stage},
                       {"predicted_peak_MiB", r.predicted_peak_MiB},
                       {"measured_max_allocated_MiB", r.measured_max_allocated_MiB},
                       {"error_pct", r.error_pct()},
                       {"measured_max_reserved_MiB", r.measured_max_reserved_MiB},
                       {"measured_device_used_MiB", r.measured_device_used_MiB},
                       {"predicted_outside_allocator_MiB", r.predicted_outside_allocator_MiB}});
    Json run = {{"log", runs[i].name},
                {"recompute", c.setup.recompute},
                {"layout",
                 {{"tp", c.setup.training.tp},
                  {"pp", c.setup.training.pp},
                  {"dp", c.setup.training.dp},
                  {"ep", c.setup.training.ep},
                  {"mbs", c.setup.training.mbs},
                  {"gbs", c.setup.training.gbs},
                  {"seq", c.setup.training.seq}}},
                {"ranks", ranks},
                {"predicted_iteration_ms", c.predicted_iteration_ms},
                {"measured_iteration_ms", c.measured_iteration_ms},
                {"timed_iterations", c.timed_iterations},
                {"time_error_pct", c.time_error_pct()},
                {"host_bound_layers", runs[i].host_bound_layers()}};
    if (ratios[i].has_baseline)
      run["time_over_none"] = {{"predicted", ratios[i].predicted},
                               {"measured", ratios[i].measured},
                               {"error_pct", ratios[i].error_pct()},
                               {"none_runs", ratios[i].baseline_runs}};
    const Json host = probe_json(runs[i].host), host_after = probe_json(runs[i].host_after);
    if (!runs[i].host.empty()) run["host"] = host;
    if (!runs[i].host_after.empty()) run["host_after"] = host_after;
    if (const HostDrift d = drift_between(host, host_after); d.known) run["host_launch_change_pct"] = d.pct();
    list.push_back(run);
  }
  return {{"meta", meta_json(meta)},
          {"hardware", hardware_name},
          {"framework", "megatron-local"},
          {"runs", list},
          {"summary",
           {{"gpu_bound", extremes_json(extremes(runs, ratios, false))},
            {"host_bound", extremes_json(extremes(runs, ratios, true))},
            {"repeats", repeats_json(runs)}}}};
}

std::string megatron_svg(const std::vector<MegatronRun>& runs, const std::string& hardware_name) {
  constexpr double kMiBPerGiB = 1024;
  ScatterPanel peak{"peak, max allocated (GiB)", 3, {}}, time{"iteration time (ms)", 15, {}};
  ScatterPanel ratio{"time over none, same session", 5, {}};
  const auto ratios = recompute_ratios(runs);
  for (size_t i = 0; i < runs.size(); ++i) {
    const MegatronComparison& c = runs[i].comparison;
    const size_t group = runs[i].host_bound_layers() > 0 ? 1 : 0;
    for (const auto& r : c.ranks)
      peak.points.push_back({r.predicted_peak_MiB / kMiBPerGiB, r.measured_max_allocated_MiB / kMiBPerGiB, group});
    time.points.push_back({c.predicted_iteration_ms, c.measured_iteration_ms, group});
    if (has_recompute_ratio(runs[i], ratios[i]))
      ratio.points.push_back({ratios[i].predicted, ratios[i].measured, group});
  }
  return predicted_vs_measured_svg(
      fmt::format("Megatron-LM runs beside remat (--framework megatron-local, {})", hardware_name),
      {"GPU-bound", "host-bound MoE"}, {peak, time, ratio});
}

}  // namespace remat
