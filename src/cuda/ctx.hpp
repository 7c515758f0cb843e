// Execution context: streams, library handles, the counting arena, the per-op log and the
// phase marks (forward / recompute / backward) that the timings come from, and offload.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "arena.hpp"

namespace remat::cuda {

enum class Strategy { none, standard, eagle, offload, streambp };
const char* strategy_name(Strategy s);
Strategy parse_strategy(const std::string& s);

enum class Phase { forward, backward, recompute };
const char* phase_name(Phase p);

// One logical op (a kernel, or a loop of GEMM calls that the log counts as one).
struct OpInfo {
  std::string name;
  std::string kind;  // gemm | attention_fwd | attention_bwd | rmsnorm | swiglu | gather | scatter | router | copy | ...
  int64_t m = 0, n = 0, k = 0;
  double flops = 0;
  double bytes_moved = 0;
  int64_t calls = 1;
};

struct OpRecord {
  OpInfo info;
  Phase phase = Phase::forward;
  cudaEvent_t start = nullptr, stop = nullptr;
};

class Ctx {
 public:
  explicit Ctx(int64_t arena_bytes);
  ~Ctx();
  Ctx(const Ctx&) = delete;
  Ctx& operator=(const Ctx&) = delete;

  cudaStream_t stream() const { return stream_; }
  cudaStream_t copy_stream() const { return copy_stream_; }
  cublasLtHandle_t lt() const { return lt_; }
  cudnnHandle_t dnn() const { return dnn_; }
  Arena& arena() { return *arena_; }
  void* lt_workspace() const { return lt_ws_.ptr; }
  int64_t lt_workspace_bytes() const { return lt_ws_.bytes; }

  Buf act(const std::string& name, int64_t bytes) { return arena_->alloc(name, bytes, MemClass::activation); }
  void drop(Buf& b) { arena_->release(b); }
  void drop_all(std::initializer_list<Buf*> bufs) {
    for (Buf* b : bufs) arena_->release(*b);
  }

  // Per-op log (on only in profiled passes). With an op gap, each logged op starts on an idle GPU:
  // the stream is drained and the host sleeps `ms` first, so the op is timed clear of the power
  // limiter that back-to-back kernels run into (isolated kernel times, as nvbench's throttle guard).
  void set_profiling(bool on) { profiling_ = on; }
  void set_op_gap_ms(int ms) { op_gap_ms_ = ms; }
  bool profiling() const { return profiling_; }
  void op_begin(const OpInfo& info);
  void op_end();
  std::vector<OpRecord>& ops() { return ops_; }
  void clear_ops();

  // Phase marks inside backward: each mark closes the previous phase.
  void phase(Phase p);
  Phase current_phase() const { return phase_; }
  void begin_phases(Phase p);
  // (phase, seconds) segments in order since begin_phases (synchronises the stream).
  std::vector<std::pair<Phase, double>> end_phases();

  // Offload: keep() copies a kept buffer to pinned host memory on the copy stream while
  // forward goes on; finish_offload() waits for the copies and frees the device copies;
  // prefetch() brings them back before backward.
  void set_offload(bool on) { offload_ = on; }
  bool offload() const { return offload_; }
  void keep(Buf& b, const std::string& name);
  void finish_offload();
  void prefetch();
  struct OffloadTimes {
    double d2h_s = 0, h2d_s = 0;
    int64_t bytes = 0;
  };
  OffloadTimes offload_times();  // call after synchronising
  void clear_offload();

 private:
  cudaEvent_t event();
  cudaStream_t stream_ = nullptr, copy_stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  cudnnHandle_t dnn_ = nullptr;
  std::unique_ptr<Arena> arena_;
  Buf lt_ws_;
  bool profiling_ = false;
  int op_gap_ms_ = 0;
  std::vector<OpRecord> ops_;
  std::vector<cudaEvent_t> event_pool_;
  size_t event_next_ = 0;
  Phase phase_ = Phase::forward;
  std::vector<std::pair<Phase, cudaEvent_t>> marks_;
  bool offload_ = false;
  struct Offloaded {
    Buf* buf;
    std::string name;
    int64_t bytes;
    void* host;
    cudaEvent_t d2h_start, d2h_stop, h2d_start, h2d_stop;
  };
  std::vector<Offloaded> offloaded_;
  std::map<std::string, std::pair<void*, int64_t>> host_pool_;
};

// RAII op scope for the log.
class OpScope {
 public:
  OpScope(Ctx& c, const OpInfo& info) : c_(c) { c_.op_begin(info); }
  ~OpScope() { c_.op_end(); }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  Ctx& c_;
};

}  // namespace remat::cuda
