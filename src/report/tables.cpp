#include "remat/report/tables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "remat/spec/plan.hpp"

namespace remat {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

std::string gib(double b) { return fmt::format("{:.2f}", b / kGiB); }

template <class Row>
struct Column {
  std::string header;
  std::function<std::string(const Row&)> cell;
};

template <class Row>
std::string render(const std::vector<Column<Row>>& cols, const std::vector<Row>& rows) {
  std::vector<std::string> headers;
  for (const auto& c : cols) headers.push_back(c.header);
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows) {
    std::vector<std::string> line;
    for (const auto& c : cols) line.push_back(c.cell(r));
    cells.push_back(line);
  }
  return render_table(headers, cells);
}

std::string layer_summary(const StageEstimate& s) { return fmt::format("{}-{}", s.first_layer, s.last_layer - 1); }

}  // namespace

std::string render_table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(headers.size());
  for (size_t i = 0; i < headers.size(); ++i) width[i] = headers[i].size();
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size() && i < width.size(); ++i) width[i] = std::max(width[i], r[i].size());
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < width.size(); ++i) {
      const std::string& c = i < cells.size() ? cells[i] : std::string();
      out += (i ? "  " : "") + std::string(width[i] - c.size(), ' ') + c;
    }
    out += '\n';
  };
  line(headers);
  size_t total = 0;
  for (size_t w : width) total += w;
  out += std::string(total + 2 * (width.size() - 1), '-') + '\n';
  for (const auto& r : rows) line(r);
  return out;
}

std::string estimate_table(const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t, const Plan& p,
                           const Estimate& e) {
  using S = StageEstimate;
  const std::vector<Column<S>> cols = {
      {"stage", [](const S& s) { return std::to_string(s.index); }},
      {"layers", [](const S& s) { return layer_summary(s); }},
      {"R", [](const S& s) { return std::to_string(s.recompute_layers); }},
      {"offl", [](const S& s) { return std::to_string(s.offload_layers); }},
      {"in-flight", [](const S& s) { return std::to_string(s.in_flight_microbatches); }},
      {"weights", [](const S& s) { return gib(s.memory_bytes.weights); }},
      {"grads", [](const S& s) { return gib(s.memory_bytes.gradients); }},
      {"optim", [](const S& s) { return gib(s.memory_bytes.optimizer); }},
      {"activ", [](const S& s) { return gib(s.memory_bytes.activations); }},
      {"transient", [](const S& s) { return gib(s.memory_bytes.transient_peak); }},
      {"peak GiB", [](const S& s) { return gib(s.memory_bytes.peak); }},
      {"fits", [](const S& s) { return std::string(s.fits ? "yes" : "NO"); }},
      {"fwd s", [](const S& s) { return fmt::format("{:.3f}", s.time_s.forward); }},
      {"bwd s", [](const S& s) { return fmt::format("{:.3f}", s.time_s.backward); }},
      {"recomp s", [](const S& s) { return fmt::format("{:.3f}", s.time_s.recompute); }},
      {"offl s", [](const S& s) { return fmt::format("{:.3f}", s.time_s.offload_exposed); }},
  };
  std::string out =
      fmt::format("{} on {}  tp {} pp {} dp {} ep {}  mbs {} gbs {} ({} microbatches) seq {}  strategy {}\n", m.name,
                  hw.name, t.tp, t.pp, t.dp, t.ep, t.mbs, t.gbs, e.microbatches, t.seq,
                  p.megatron                  ? "Megatron " + describe(*p.megatron)
                  : p.layer_overrides.empty() ? std::string(to_string(p.strategy))
                                              : std::string("per layer"));
  out += render(cols, e.stages);
  const auto& it = e.iteration;
  out += fmt::format(
      "iteration {:.3f} s  MFU {:.1f}%  {:.0f} tokens/s  bubble {:.1f}%  peak {} GiB of budget {} GiB: {}\n", it.time_s,
      100 * it.mfu, it.tokens_per_s, 100 * it.bubble_fraction, gib(e.peak_memory_bytes), gib(e.budget_bytes),
      e.fits ? "fits" : "DOES NOT FIT");
  return out;
}

std::string modules_table(const ModelSpec& m, const HardwareSpec& hw, const std::vector<ModuleRow>& rows) {
  using R = ModuleRow;
  const auto gflop = [](double f) { return fmt::format("{:.1f}", f / 1e9); };
  const auto ms = [](double s) { return fmt::format("{:.3f}", s * 1e3); };
  const std::vector<Column<R>> cols = {
      {"block", [](const R& r) { return r.block; }},
      {"strategy", [](const R& r) { return r.strategy; }},
      {"kept MiB", [](const R& r) { return fmt::format("{:.1f}", r.kept_bytes / kMiB); }},
      {"transient MiB", [](const R& r) { return fmt::format("{:.1f}", r.transient_bytes / kMiB); }},
      {"fwd GFLOP", [&](const R& r) { return gflop(r.fwd_flops); }},
      {"bwd GFLOP", [&](const R& r) { return gflop(r.bwd_flops); }},
      {"recomp GFLOP", [&](const R& r) { return gflop(r.recompute_flops); }},
      {"fwd ms", [&](const R& r) { return ms(r.fwd_s); }},
      {"bwd ms", [&](const R& r) { return ms(r.bwd_s); }},
      {"recomp ms", [&](const R& r) { return ms(r.recompute_s); }},
  };
  std::string out =
      fmt::format("{} on {}, formulas: {}\n", m.name, hw.name, rows.empty() ? std::string("-") : rows.front().formulas);
  return out + render(cols, rows);
}

}  // namespace remat
