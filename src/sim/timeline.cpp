#include "timeline.hpp"

#include <algorithm>

namespace remat {

double MemoryPoint::total() const {
  double sum = 0;
  for (double b : bytes) sum += b;
  return sum;
}

const char* to_string(MemCategory c) {
  switch (c) {
    case MemCategory::weights:
      return "weights";
    case MemCategory::gradients:
      return "gradients";
    case MemCategory::optimizer:
      return "optimizer";
    case MemCategory::activations:
      return "activations";
    case MemCategory::working:
      return "working";
    case MemCategory::offload:
      return "offload";
    case MemCategory::logits:
      return "logits";
    case MemCategory::comm:
      return "comm";
    case MemCategory::runtime:
      return "runtime";
  }
  return "?";
}

const char* to_string(SimStream s) {
  switch (s) {
    case SimStream::compute:
      return "compute";
    case SimStream::offload_out:
      return "offload out";
    case SimStream::offload_in:
      return "offload in";
    case SimStream::p2p:
      return "p2p";
  }
  return "?";
}

const char* to_string(SimOp k) {
  switch (k) {
    case SimOp::forward:
      return "forward";
    case SimOp::recompute:
      return "recompute";
    case SimOp::backward:
      return "backward";
    case SimOp::head_forward:
      return "head+loss forward";
    case SimOp::head_backward:
      return "head+loss backward";
    case SimOp::send:
      return "send";
    case SimOp::copy_out:
      return "copy to host";
    case SimOp::copy_in:
      return "copy to GPU";
    case SimOp::optimizer:
      return "optimizer step";
  }
  return "?";
}

namespace sim_detail {

namespace {

struct Change {
  double t_s;
  bool alloc;
  size_t buffer;
};

std::vector<Change> stage_changes(int64_t stage, const std::vector<SimBuffer>& buffers) {
  std::vector<Change> out;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].stage != stage) continue;
    out.push_back({buffers[i].alloc_s, true, i});
    out.push_back({buffers[i].free_s, false, i});
  }
  std::stable_sort(out.begin(), out.end(), [](const Change& a, const Change& b) {
    return a.t_s != b.t_s ? a.t_s < b.t_s : (!a.alloc && b.alloc);
  });
  return out;
}

}  // namespace

void build_timeline(StageTimeline& out, int64_t stage, const std::vector<SimBuffer>& buffers, int64_t top_buffers) {
  out.index = stage;
  MemoryPoint now;
  double peak = -1;
  for (const Change& c : stage_changes(stage, buffers)) {
    const SimBuffer& b = buffers[c.buffer];
    now.bytes[size_t(b.category)] += c.alloc ? b.bytes : -b.bytes;
    now.t_s = c.t_s;
    if (!out.memory.empty() && out.memory.back().t_s == c.t_s)
      out.memory.back() = now;
    else
      out.memory.push_back(now);
    const double total = now.total();
    if (c.alloc && total > peak) {
      peak = total;
      out.peak.bytes = total, out.peak.t_s = c.t_s, out.peak.by_category = now.bytes;
    }
  }
  // alive at the peak: allocated by then and freed after (frees at the peak time came first)
  for (const SimBuffer& b : buffers)
    if (b.stage == stage && b.alloc_s <= out.peak.t_s && b.free_s > out.peak.t_s) out.peak.top.push_back(b);
  std::stable_sort(out.peak.top.begin(), out.peak.top.end(),
                   [](const SimBuffer& a, const SimBuffer& b) { return a.bytes > b.bytes; });
  if (int64_t(out.peak.top.size()) > top_buffers) out.peak.top.resize(size_t(top_buffers));
}

}  // namespace sim_detail
}  // namespace remat
