#pragma once
// Predicted time of one op: FLOPs over (peak x efficiency) or bytes over
// (bandwidth x efficiency), whichever applies to its kind.
#include <string>
#include <vector>

#include "remat/cost/block.hpp"
#include "remat/spec/hardware_spec.hpp"
#include "remat/spec/problems.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

// GPUs in one node: collectives of more ranks cross the network.
constexpr int64_t kGpusPerNode = 8;

// Achieved fraction of the bf16 peak for one GEMM of `flops`, interpolated
// in log10(flops) between the hardware file's points, clamped at the ends.
double gemm_efficiency(const Efficiency& eff, double flops);
// Flash attention's achieved fractions of the bf16 peak (forward, backward) at
// sequence length `seq`: interpolated in log2(seq) between the hardware file's
// attention_by_seq points, clamped at the ends; the scalars when it has none.
AttentionPoint attention_efficiency(const Efficiency& eff, double seq);
// With a framework's measured kernel in effect (eff.attention_by_head_dim), its fractions at this
// head dim and seq: log2-interpolated in seq, linear in head dim between the measured ones, clamped
// at the ends; otherwise (or head_dim 0) the overload above. Under a dense mask, the framework's
// masked kernel where measured (eff.masked_attention_by_head_dim).
AttentionPoint attention_efficiency(const Efficiency& eff, double seq, double head_dim, bool dense_mask = false);
// adapter_gemm_by_flops (non-empty) at one adapter's forward FLOPs and rank: interpolated in log(flops)
// within a measured rank, in log(rank) between the measured ranks, clamped at the ends.
AdapterGemmPoint adapter_gemm_efficiency(const Efficiency& eff, double flops, double rank = 16);
// Achieved bytes/s per direction for a collective over `ranks` GPUs.
double link_bytes_per_s(const HardwareSpec& hw, int64_t ranks);
double host_copy_bytes_per_s(const HardwareSpec& hw);
// Whether a collective over `ranks` GPUs stays on NVLink (else it crosses
// each GPU's PCIe link, to a switch or to the network card).
bool over_nvlink(const HardwareSpec& hw, int64_t ranks);

// A layout whose collectives leave a node (tp or ep groups beyond NVLink and
// the node, pipeline sends between nodes) needs the network: on hardware
// without one (network_GBps 0) it cannot run. One problem naming `hw_file`
// and the key per collective that would cross it.
std::vector<Problem> network_problems(const TrainingSpec& t, const HardwareSpec& hw, const std::string& hw_file);

struct OpTime {
  double fwd_s = 0;
  double bwd_s = 0;
};
OpTime op_time(const OpDef& op, const HardwareSpec& hw);

}  // namespace remat
