#include "remat/cost/op_time.hpp"

#include <algorithm>
#include <cmath>
#include <span>

namespace remat {

double gemm_efficiency(const Efficiency& eff, double flops) {
  const auto& pts = eff.gemm_by_flops;
  if (pts.empty()) return 0.7;
  if (flops <= pts.front().flops) return pts.front().fraction;
  if (flops >= pts.back().flops) return pts.back().fraction;
  for (size_t i = 1; i < pts.size(); ++i) {
    if (flops > pts[i].flops) continue;
    const double x0 = std::log10(pts[i - 1].flops), x1 = std::log10(pts[i].flops);
    const double w = (std::log10(flops) - x0) / (x1 - x0);
    return pts[i - 1].fraction + w * (pts[i].fraction - pts[i - 1].fraction);
  }
  return pts.back().fraction;
}

namespace {

struct Fractions {
  double fwd = 0, bwd = 0;
};

// Points ascending in key(p), each with fwd and bwd: their fractions at x, linear in log(x) between
// neighbours, clamped at the ends.
template <typename Points, typename Key>
Fractions log_interpolated(const Points& pts, double x, Key key) {
  if (x <= key(pts.front())) return {pts.front().fwd, pts.front().bwd};
  if (x >= key(pts.back())) return {pts.back().fwd, pts.back().bwd};
  size_t i = 1;
  while (x > key(pts[i])) ++i;
  const auto &a = pts[i - 1], &b = pts[i];
  const double w = std::log(x / key(a)) / std::log(key(b) / key(a));
  return {a.fwd + w * (b.fwd - a.fwd), a.bwd + w * (b.bwd - a.bwd)};
}

// Points ascending in outer(p), then inner(p): their fractions at (outer_x, inner_x), interpolated
// in log(inner) within one measured outer value, and between the measured outer values around outer_x
// (linear, or in log where log_outer), clamped at the ends.
template <typename Point, typename Outer, typename Inner>
Fractions grid_interpolated(const std::vector<Point>& pts, double outer_x, double inner_x, Outer outer, Inner inner,
                            bool log_outer) {
  double below = outer(pts.front()), above = outer(pts.back());
  for (const Point& p : pts) {
    if (outer(p) <= outer_x) below = outer(p);
    if (outer(p) >= outer_x && outer(p) < above) above = outer(p);
  }
  if (outer_x <= outer(pts.front())) below = above = outer(pts.front());
  if (outer_x >= outer(pts.back())) below = above = outer(pts.back());
  const auto at = [&](double value) {
    const auto first = std::find_if(pts.begin(), pts.end(), [&](const Point& p) { return outer(p) == value; });
    const auto last = std::find_if(first, pts.end(), [&](const Point& p) { return outer(p) != value; });
    return log_interpolated(std::span<const Point>(first, last), inner_x, inner);
  };
  const Fractions a = at(below);
  if (above == below) return a;
  const Fractions b = at(above);
  const double w =
      log_outer ? std::log(outer_x / below) / std::log(above / below) : (outer_x - below) / (above - below);
  return {a.fwd + w * (b.fwd - a.fwd), a.bwd + w * (b.bwd - a.bwd)};
}

}  // namespace

AttentionPoint attention_efficiency(const Efficiency& eff, double seq) {
  const auto& pts = eff.attention_by_seq;
  if (pts.empty()) return {seq, eff.attention_fwd, eff.attention_bwd};
  const Fractions f = log_interpolated(pts, seq, [](const AttentionPoint& p) { return p.seq; });
  return {seq, f.fwd, f.bwd};
}

AdapterGemmPoint adapter_gemm_efficiency(const Efficiency& eff, double flops, double rank) {
  const Fractions f = grid_interpolated(
      eff.adapter_gemm_by_flops, rank, flops, [](const AdapterGemmPoint& p) { return p.rank; },
      [](const AdapterGemmPoint& p) { return p.flops; }, true);
  return {flops, f.fwd, f.bwd, rank};
}

AttentionPoint attention_efficiency(const Efficiency& eff, double seq, double head_dim, bool dense_mask) {
  const bool masked = dense_mask && !eff.masked_attention_by_head_dim.empty();
  const auto& grid = masked ? eff.masked_attention_by_head_dim : eff.attention_by_head_dim;
  if (grid.empty() || head_dim <= 0) return attention_efficiency(eff, seq);
  const Fractions f = grid_interpolated(
      grid, head_dim, seq, [](const AttentionGridPoint& p) { return p.head_dim; },
      [](const AttentionGridPoint& p) { return p.seq; }, false);
  return {seq, f.fwd, f.bwd};
}

double link_bytes_per_s(const HardwareSpec& hw, int64_t ranks) {
  const auto& e = hw.efficiency;
  // NVLink figures are bidirectional totals: a ring uses one direction's half
  if (hw.nvlink_bytes_per_s > 0 && ranks <= hw.nvlink_domain_gpus) return hw.nvlink_bytes_per_s / 2 * e.nvlink;
  if (ranks <= kGpusPerNode) return hw.host_link_bytes_per_s * e.host_link;  // through the PCIe switch
  return hw.network_bytes_per_s * e.network;
}

bool over_nvlink(const HardwareSpec& hw, int64_t ranks) {
  return hw.nvlink_bytes_per_s > 0 && ranks <= hw.nvlink_domain_gpus;
}

std::vector<Problem> network_problems(const TrainingSpec& t, const HardwareSpec& hw, const std::string& hw_file) {
  std::vector<Problem> out;
  if (hw.network_bytes_per_s > 0) return out;
  const auto crosses = [&](int64_t ranks) { return !over_nvlink(hw, ranks) && ranks > kGpusPerNode; };
  const auto add = [&](const std::string& what) {
    out.push_back({hw_file, "network_GBps", "0",
                   "none, but " + what + " would cross nodes of " + std::to_string(kGpusPerNode) + " GPUs"});
  };
  if (crosses(t.tp)) add("tensor parallelism over --tp " + std::to_string(t.tp) + " GPUs");
  if (crosses(t.ep)) add("the expert all-to-all over --ep " + std::to_string(t.ep) + " GPUs");
  if (t.pp > 1 && t.gpus() > kGpusPerNode)
    add("pipeline sends among tp x pp x dp = " + std::to_string(t.gpus()) + " GPUs");
  return out;
}

double host_copy_bytes_per_s(const HardwareSpec& hw) { return hw.host_link_bytes_per_s * hw.efficiency.host_link; }

OpTime op_time(const OpDef& op, const HardwareSpec& hw) {
  if (op.forward_only) {
    OpDef forward = op;
    forward.forward_only = false;
    return {op_time(forward, hw).fwd_s, 0};
  }
  const auto& e = hw.efficiency;
  const double mem_bw = hw.hbm_bytes_per_s * e.memory_bound;
  switch (op.kind) {
    case OpKind::gemm: {
      const double rate = hw.peak_bf16_flops * gemm_efficiency(e, op.gemm_flops_each);
      return {op.fwd_flops / rate, op.bwd_exec_flops / rate};
    }
    case OpKind::attention: {
      if (op.materialized_scores) {  // gemm_flops_each: QK^T and PV over the whole square
        const double rate = hw.peak_bf16_flops * gemm_efficiency(e, op.gemm_flops_each / 2);
        return {op.gemm_flops_each / rate + op.fwd_bytes / mem_bw,
                2 * op.gemm_flops_each / rate + op.bwd_bytes / mem_bw};
      }
      const AttentionPoint a = attention_efficiency(e, op.attention_seq, op.attention_head_dim, op.dense_mask);
      return {op.fwd_flops / (hw.peak_bf16_flops * a.fwd), op.bwd_exec_flops / (hw.peak_bf16_flops * a.bwd)};
    }
    case OpKind::memory_bound: {
      if (op.fp32_compute_bound && e.fp32_gemm > 0 && hw.peak_fp32_flops > 0) {
        const double rate = hw.peak_fp32_flops * e.fp32_gemm;
        return {op.fp32_adapter_flops / rate, 2 * op.fp32_adapter_flops / rate};
      }
      if (op.fp32_adapter_flops > 0 && !e.adapter_gemm_by_flops.empty() && hw.peak_fp32_flops > 0) {
        const AdapterGemmPoint a =
            adapter_gemm_efficiency(e, op.gemm_flops_each, op.adapter_rank > 0 ? op.adapter_rank : 16);
        return {op.fp32_adapter_flops / (hw.peak_fp32_flops * a.fwd),
                2 * op.fp32_adapter_flops / (hw.peak_fp32_flops * a.bwd)};
      }
      return {op.fwd_bytes / mem_bw, op.bwd_bytes / mem_bw};
    }
    case OpKind::collective: {
      if (op.link_ranks <= 1) return {};
      const double bw = link_bytes_per_s(hw, op.link_ranks);
      return {op.fwd_bytes / bw, op.bwd_bytes / bw};
    }
    case OpKind::host_copy: {
      const double bw = host_copy_bytes_per_s(hw);
      return {op.fwd_bytes / bw, op.bwd_bytes / bw};
    }
  }
  return {};
}

}  // namespace remat
