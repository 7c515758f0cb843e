// remat calibrate: efficiencies fitted to remat-bench's per-kernel times.
//
// Fits, each on the cases whose s is in the fit set (all strategies, all phases):
// - gemm_by_flops: GEMM and grouped-GEMM kernels grouped by the FLOPs of one
//   call (within 0.05 decades); a point per group at the geometric mean size,
//   its fraction the group's FLOPs over its time (what the group's time needs);
// - attention_fwd / attention_bwd: the cuDNN flash kernels, FLOPs counted as
//   the backend and op_time count them (forward 4 s^2 d heads / 2, backward 2.5x);
//   attention_by_seq: the same per fit length (a point per s);
// - memory_bound: per case, the cost model's memory-bound bytes over the
//   measured time of the backend's memory-bound kernels (norms, SwiGLU,
//   router, gather/scatter, key assembly) and HBM bandwidth;
// - host_link: offload cases, bytes copied over the D2H and H2D times.
// Scalars minimize the squared relative error of the times they predict:
// for samples of achieved efficiency e_i the fit is sum e_i^2 / sum e_i.
#include "remat/validate/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "remat/cost/op_time.hpp"
#include "remat/spec/problems.hpp"

namespace remat {

namespace {

struct GemmSample {
  double flops_each = 0, flops = 0, time_s = 0;
};

bool is_gemm(const std::string& kind) { return kind == "gemm" || kind == "gemm_grouped"; }
bool is_attention(const std::string& kind) { return kind == "attention_fwd" || kind == "attention_bwd"; }

// The efficiency e minimizing sum (e_i / e - 1)^2: predicted time relative errors.
double least_squares_efficiency(const std::vector<double>& achieved) {
  double s1 = 0, s2 = 0;
  for (double e : achieved) s1 += e, s2 += e * e;
  return s1 > 0 ? s2 / s1 : 0;
}

std::vector<EfficiencyPoint> fit_gemm(std::vector<GemmSample> samples, double peak) {
  std::sort(samples.begin(), samples.end(),
            [](const GemmSample& a, const GemmSample& b) { return a.flops_each < b.flops_each; });
  std::vector<EfficiencyPoint> points;
  size_t i = 0;
  while (i < samples.size()) {
    const double start = std::log10(samples[i].flops_each);
    double log_sum = 0, flops = 0, time = 0;
    size_t j = i;
    for (; j < samples.size() && std::log10(samples[j].flops_each) - start <= 0.05; ++j)
      log_sum += std::log10(samples[j].flops_each), flops += samples[j].flops, time += samples[j].time_s;
    const double fraction = std::min(1.0, flops / time / peak);
    points.push_back({std::pow(10.0, log_sum / double(j - i)), fraction});
    i = j;
  }
  return points;
}

struct FitData {
  std::vector<GemmSample> gemm;
  std::vector<double> memory_bound, host_link;
  std::map<int64_t, std::vector<double>> attention_fwd_by_s, attention_bwd_by_s;  // s -> samples
};

std::vector<double> all_lengths(const std::map<int64_t, std::vector<double>>& by_s) {
  std::vector<double> out;
  for (const auto& [s, samples] : by_s) out.insert(out.end(), samples.begin(), samples.end());
  return out;
}

std::vector<AttentionPoint> fit_attention_by_seq(const FitData& d) {
  std::vector<AttentionPoint> points;
  for (const auto& [s, fwd] : d.attention_fwd_by_s) {
    const auto bwd = d.attention_bwd_by_s.find(s);
    if (bwd == d.attention_bwd_by_s.end()) continue;
    points.push_back({double(s), least_squares_efficiency(fwd), least_squares_efficiency(bwd->second)});
  }
  return points;
}

// The cost model's memory-bound bytes of a case (its predicted time at
// efficiency 1 times the HBM bandwidth).
double model_memory_bytes(const BackendCase& c, const HardwareSpec& hw) {
  HardwareSpec unit = hw;
  unit.efficiency.memory_bound = 1;
  return predict_times_of_kind(c, unit, OpKind::memory_bound).total_s() * hw.hbm_bytes_per_s;
}

void collect_case(FitData& d, const MeasuredCase& mc, const BackendCase& c, const HardwareSpec& hw) {
  double memory_time = 0;
  for (const MeasuredKernel& k : mc.kernels) {
    if (k.time_s <= 0) continue;
    const double achieved = k.flops / k.time_s / hw.peak_bf16_flops;
    if (is_gemm(k.kind) && k.flops > 0) {
      d.gemm.push_back({k.flops / double(std::max<int64_t>(1, k.calls)), k.flops, k.time_s});
    } else if (k.kind == "attention_fwd") {
      d.attention_fwd_by_s[c.s].push_back(achieved);
    } else if (k.kind == "attention_bwd") {
      d.attention_bwd_by_s[c.s].push_back(achieved);
    } else if (!is_attention(k.kind) && !is_gemm(k.kind)) {
      memory_time += k.time_s;
    }
  }
  const double bytes = model_memory_bytes(c, hw);
  if (memory_time > 0 && bytes > 0) d.memory_bound.push_back(bytes / memory_time / hw.hbm_bytes_per_s);
  if (mc.offload.present && mc.offload.bytes > 0 && hw.host_link_bytes_per_s > 0) {
    if (mc.offload.d2h_s > 0) d.host_link.push_back(mc.offload.bytes / mc.offload.d2h_s / hw.host_link_bytes_per_s);
    if (mc.offload.h2d_s > 0) d.host_link.push_back(mc.offload.bytes / mc.offload.h2d_s / hw.host_link_bytes_per_s);
  }
}

void require(const std::vector<double>& v, const char* entry, const std::string& file, std::vector<Problem>& p) {
  if (v.empty()) p.push_back({file, "cases[].kernels", "", std::string("no samples to fit efficiency.") + entry});
}

void set_scalar(Calibration& cal, const char* entry, double& field, const std::vector<double>& samples,
                const std::string& how) {
  FitNote n{entry, int64_t(samples.size()), field, 0, how};
  field = least_squares_efficiency(samples);
  n.after = field;
  cal.notes.push_back(n);
}

}  // namespace

Calibration calibrate(const Measurements& m, const HardwareSpec& hw, const std::set<int64_t>& fit_lengths,
                      const std::set<int64_t>& check_lengths, const std::string& file) {
  Calibration cal;
  cal.before = hw, cal.after = hw;
  cal.fit_lengths = fit_lengths, cal.check_lengths = check_lengths;
  FitData d;
  for (size_t i = 0; i < m.cases.size(); ++i) {
    const MeasuredCase& mc = m.cases[i];
    const BackendCase c = backend_case(mc, m.deterministic_attention, file, "cases[" + std::to_string(i) + "]");
    if (fit_lengths.count(c.s)) collect_case(d, mc, c, hw);
  }
  std::vector<Problem> problems;
  if (d.gemm.empty()) problems.push_back({file, "cases[].kernels", "", "no GEMM kernels at the fit lengths"});
  const std::vector<double> attention_fwd = all_lengths(d.attention_fwd_by_s);
  const std::vector<double> attention_bwd = all_lengths(d.attention_bwd_by_s);
  require(attention_fwd, "attention_fwd", file, problems);
  require(attention_bwd, "attention_bwd", file, problems);
  require(d.memory_bound, "memory_bound", file, problems);
  if (!problems.empty()) throw InputError(std::move(problems));

  Efficiency& e = cal.after.efficiency;
  const double points_before = double(e.gemm_by_flops.size());
  e.gemm_by_flops = fit_gemm(d.gemm, hw.peak_bf16_flops);
  cal.notes.push_back({"gemm_by_flops", int64_t(d.gemm.size()), points_before, double(e.gemm_by_flops.size()),
                       "GEMM kernels grouped by FLOPs per call; fraction = group FLOPs / group time / peak"});
  set_scalar(cal, "attention_fwd", e.attention_fwd, attention_fwd, "cuDNN flash forward kernels");
  set_scalar(cal, "attention_bwd", e.attention_bwd, attention_bwd, "cuDNN flash backward kernels");
  const double seq_points_before = double(e.attention_by_seq.size());
  e.attention_by_seq = fit_attention_by_seq(d);
  cal.notes.push_back({"attention_by_seq", int64_t(attention_fwd.size() + attention_bwd.size()), seq_points_before,
                       double(e.attention_by_seq.size()),
                       "cuDNN flash kernels per fit length; forward and backward fraction of peak"});
  set_scalar(cal, "memory_bound", e.memory_bound, d.memory_bound,
             "per case: model memory-bound bytes / measured memory-bound kernel time / HBM bandwidth");
  if (!d.host_link.empty())
    set_scalar(cal, "host_link", e.host_link, d.host_link, "offload copies: bytes / D2H and H2D time / host link");

  const auto before = validate_cases(m, cal.before, file), after = validate_cases(m, cal.after, file);
  cal.fit_before = summarize(before, fit_lengths), cal.fit_after = summarize(after, fit_lengths);
  cal.check_before = summarize(before, check_lengths), cal.check_after = summarize(after, check_lengths);
  return cal;
}

}  // namespace remat
