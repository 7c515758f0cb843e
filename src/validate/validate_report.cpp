// Reports of remat validate and remat calibrate.
#include "remat/validate/validate_report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <set>

namespace remat {

namespace {

Json times_json(const PhaseTimes& t) {
  return {{"forward_s", t.forward_s},
          {"backward_s", t.backward_s},
          {"recompute_s", t.recompute_s},
          {"total_s", t.total_s()}};
}

Json buffers_json(const std::vector<NamedBytes>& list) {
  Json out = Json::array();
  for (const auto& b : list) out.push_back({{"name", b.name}, {"bytes", int64_t(std::llround(b.bytes))}});
  return out;
}

Json case_json(const CaseValidation& c) {
  Json measured = times_json(c.measured), predicted = times_json(c.predicted);
  measured["kept_bytes"] = int64_t(std::llround(c.measured_kept_bytes));
  measured["peak_bytes"] = int64_t(std::llround(c.measured_peak_bytes));
  predicted["kept_bytes"] = int64_t(std::llround(c.memory.kept_bytes));
  predicted["peak_bytes"] = int64_t(std::llround(c.memory.peak_bytes));
  Json error = {{"forward", relative_error(c.predicted.forward_s, c.measured.forward_s)},
                {"backward", relative_error(c.predicted.backward_s, c.measured.backward_s)},
                {"recompute", relative_error(c.predicted.recompute_s, c.measured.recompute_s)},
                {"total", relative_error(c.predicted.total_s(), c.measured.total_s())},
                {"kept_bytes", relative_error(c.memory.kept_bytes, c.measured_kept_bytes)},
                {"peak_bytes", relative_error(c.memory.peak_bytes, c.measured_peak_bytes)}};
  if (c.measured_d2h_s > 0) {
    measured["offload_d2h_s"] = c.measured_d2h_s;
    predicted["offload_d2h_s"] = c.predicted_d2h_s;
    error["offload_d2h"] = relative_error(c.predicted_d2h_s, c.measured_d2h_s);
  }
  predicted["kept_buffers"] = buffers_json(c.memory.kept_buffers);
  predicted["peak_buffers"] = buffers_json(c.memory.peak_buffers);
  Json out = {{"block", c.block},     {"strategy", c.strategy}, {"s", c.s},
              {"measured", measured}, {"predicted", predicted}, {"error", error}};
  if (c.memory_only) {  // StreamBP cases: bytes only (times measured, not predicted)
    out["chunks"] = c.chunks;
    out["memory_only"] = true;
    for (const char* k : {"forward_s", "backward_s", "recompute_s", "total_s"}) out["predicted"].erase(k);
    for (const char* k : {"forward", "backward", "recompute", "total"}) out["error"].erase(k);
  }
  return out;
}

std::vector<CaseValidation> of_block(const std::vector<CaseValidation>& cases, const std::string& block) {
  std::vector<CaseValidation> out;
  for (const auto& c : cases)
    if (c.block == block) out.push_back(c);
  return out;
}

std::vector<std::string> blocks_in(const std::vector<CaseValidation>& cases) {
  std::vector<std::string> out;
  for (const auto& c : cases)
    if (std::find(out.begin(), out.end(), c.block) == out.end()) out.push_back(c.block);
  return out;
}

std::string pct(double e) { return fmt::format("{:+.1f}", 100 * e); }

}  // namespace

Json error_summary_json(const ErrorSummary& e) {
  return {{"cases", e.cases},
          {"timed_cases", e.timed_cases},
          {"mape_forward", e.mape_forward},
          {"mape_backward", e.mape_backward},
          {"mape_recompute", e.mape_recompute},
          {"mape_total", e.mape_total},
          {"mape_phases", e.mape_phases},
          {"mape_offload_d2h", e.mape_offload_d2h},
          {"max_abs_kept_error", e.max_kept_error},
          {"max_abs_peak_error", e.max_peak_error}};
}

Json validate_report(const ReportMeta& meta, const std::string& device, const HardwareSpec& hw,
                     const std::vector<CaseValidation>& cases) {
  Json r;
  r["meta"] = meta_json(meta);
  r["device"] = device;
  r["hardware"] = hardware_json(hw);
  Json list = Json::array();
  for (const auto& c : cases) list.push_back(case_json(c));
  r["cases"] = list;
  Json per_block;
  for (const auto& b : blocks_in(cases)) per_block[b] = error_summary_json(summarize(of_block(cases, b)));
  r["summary"] = {{"all", error_summary_json(summarize(cases))}, {"per_block", per_block}};
  return r;
}

std::string validate_table(const std::string& device, const HardwareSpec& hw,
                           const std::vector<CaseValidation>& cases) {
  std::string out = fmt::format("{} measurements predicted on {} ({})\n", device, hw.name,
                                hw.calibrated_from.empty() ? "uncalibrated" : "calibrated from " + hw.calibrated_from);
  out += fmt::format("{:>14} {:>6} {:>8} | {:>15} {:>15} {:>15} | {:>7} {:>7} {:>6} {:>6} | {:>6} {:>6}\n", "block",
                     "s", "strategy", "fwd ms (meas)", "bwd ms (meas)", "rc ms (meas)", "fwd %", "bwd %", "rc %",
                     "tot %", "kept %", "peak %");
  for (const auto& c : cases) {
    if (c.memory_only) {
      // streambp: the strategy column names the chunk count (C for the LM head, D for the layer)
      const std::string chunks = std::string(c.block == "lm_head" ? "C=" : "D=") + std::to_string(c.chunks);
      out += fmt::format("{:>14} {:>6} {:>8} | {:>15} {:>15} {:>15} | {:>7} {:>7} {:>6} {:>6} | {:>6} {:>6}\n", c.block,
                         c.s, chunks, "-", "-", "-", "-", "-", "-", "-",
                         pct(relative_error(c.memory.kept_bytes, c.measured_kept_bytes)),
                         pct(relative_error(c.memory.peak_bytes, c.measured_peak_bytes)));
      continue;
    }
    auto ms = [](double p, double m) { return fmt::format("{:6.3f} ({:6.3f})", 1e3 * p, 1e3 * m); };
    out += fmt::format(
        "{:>14} {:>6} {:>8} | {:>15} {:>15} {:>15} | {:>7} {:>7} {:>6} {:>6} | {:>6} {:>6}\n", c.block, c.s, c.strategy,
        ms(c.predicted.forward_s, c.measured.forward_s), ms(c.predicted.backward_s, c.measured.backward_s),
        ms(c.predicted.recompute_s, c.measured.recompute_s),
        pct(relative_error(c.predicted.forward_s, c.measured.forward_s)),
        pct(relative_error(c.predicted.backward_s, c.measured.backward_s)),
        c.measured.recompute_s > 0 ? pct(relative_error(c.predicted.recompute_s, c.measured.recompute_s)) : "-",
        pct(relative_error(c.predicted.total_s(), c.measured.total_s())),
        pct(relative_error(c.memory.kept_bytes, c.measured_kept_bytes)),
        pct(relative_error(c.memory.peak_bytes, c.measured_peak_bytes)));
  }
  out += fmt::format("\n{:>14} {:>5} | {:>7} {:>7} {:>7} {:>7} {:>7} | {:>9} {:>9}\n", "MAPE %", "cases", "fwd", "bwd",
                     "rc", "total", "phases", "max kept", "max peak");
  auto row = [&](const std::string& name, const ErrorSummary& e) {
    if (e.timed_cases == 0) {  // memory only
      out += fmt::format("{:>14} {:>5} | {:>7} {:>7} {:>7} {:>7} {:>7} | {:9.2f} {:9.2f}\n", name, e.cases, "-", "-",
                         "-", "-", "-", 100 * e.max_kept_error, 100 * e.max_peak_error);
      return;
    }
    out += fmt::format("{:>14} {:>5} | {:7.1f} {:7.1f} {:7.1f} {:7.1f} {:7.1f} | {:9.2f} {:9.2f}\n", name, e.cases,
                       100 * e.mape_forward, 100 * e.mape_backward, 100 * e.mape_recompute, 100 * e.mape_total,
                       100 * e.mape_phases, 100 * e.max_kept_error, 100 * e.max_peak_error);
  };
  for (const auto& b : blocks_in(cases)) row(b, summarize(of_block(cases, b)));
  row("all", summarize(cases));
  return out;
}

Json calibrate_report(const ReportMeta& meta, const Calibration& c) {
  Json notes = Json::array();
  for (const auto& n : c.notes)
    notes.push_back(
        {{"entry", n.entry}, {"samples", n.samples}, {"before", n.before}, {"after", n.after}, {"how", n.how}});
  Json points = Json::array();
  for (const auto& p : c.after.efficiency.gemm_by_flops)
    points.push_back({{"flops", p.flops}, {"fraction", p.fraction}});
  Json attention = Json::array();
  for (const auto& p : c.after.efficiency.attention_by_seq)
    attention.push_back({{"seq", p.seq}, {"fwd", p.fwd}, {"bwd", p.bwd}});
  return {{"meta", meta_json(meta)},
          {"fit_lengths", c.fit_lengths},
          {"check_lengths", c.check_lengths},
          {"fitted", notes},
          {"gemm_by_flops", points},
          {"attention_by_seq", attention},
          {"mape",
           {{"fit_before", error_summary_json(c.fit_before)},
            {"fit_after", error_summary_json(c.fit_after)},
            {"check_before", error_summary_json(c.check_before)},
            {"check_after", error_summary_json(c.check_after)}}}};
}

std::string calibrate_table(const Calibration& c) {
  std::string out = "entry            samples     before      after\n";
  for (const auto& n : c.notes)
    out += fmt::format("{:<16} {:>7} {:>10.3f} {:>10.3f}\n", n.entry, n.samples, n.before, n.after);
  out += "\nMAPE of predicted block times, %        fwd    bwd     rc  total  phases\n";
  auto row = [&](const std::string& name, const ErrorSummary& e) {
    out += fmt::format("{:<38} {:6.1f} {:6.1f} {:6.1f} {:6.1f} {:7.1f}\n", name, 100 * e.mape_forward,
                       100 * e.mape_backward, 100 * e.mape_recompute, 100 * e.mape_total, 100 * e.mape_phases);
  };
  std::string fit, check;
  for (int64_t s : c.fit_lengths) fit += (fit.empty() ? "" : ",") + std::to_string(s);
  for (int64_t s : c.check_lengths) check += (check.empty() ? "" : ",") + std::to_string(s);
  row("fit s=" + fit + ", before", c.fit_before);
  row("fit s=" + fit + ", after", c.fit_after);
  row("held-out s=" + check + ", before", c.check_before);
  row("held-out s=" + check + ", after", c.check_after);
  return out;
}

}  // namespace remat
