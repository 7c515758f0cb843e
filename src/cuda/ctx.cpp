#include "ctx.hpp"

#include <chrono>
#include <stdexcept>
#include <thread>

#include "check.hpp"

namespace remat::cuda {

namespace {
constexpr int64_t kLtWorkspaceBytes = 64ll << 20;
}

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::none:
      return "none";
    case Strategy::standard:
      return "standard";
    case Strategy::eagle:
      return "eagle";
    case Strategy::offload:
      return "offload";
    case Strategy::streambp:
      return "streambp";
  }
  return "?";
}

Strategy parse_strategy(const std::string& s) {
  if (s == "none") return Strategy::none;
  if (s == "standard") return Strategy::standard;
  if (s == "eagle") return Strategy::eagle;
  if (s == "offload") return Strategy::offload;
  if (s == "streambp") return Strategy::streambp;
  throw std::runtime_error("unknown strategy: " + s);
}

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::forward:
      return "forward";
    case Phase::backward:
      return "backward";
    case Phase::recompute:
      return "recompute";
  }
  return "?";
}

Ctx::Ctx(int64_t arena_bytes) {
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
  CUBLAS_CHECK(cublasLtCreate(&lt_));
  CUDNN_CHECK(cudnnCreate(&dnn_));
  CUDNN_CHECK(cudnnSetStream(dnn_, stream_));
  arena_ = std::make_unique<Arena>(arena_bytes);
  lt_ws_ = arena_->alloc("cublaslt_workspace", kLtWorkspaceBytes, MemClass::persistent);
}

Ctx::~Ctx() {
  cudaStreamSynchronize(stream_);
  cudaStreamSynchronize(copy_stream_);
  for (auto e : event_pool_) cudaEventDestroy(e);
  for (auto& [name, hp] : host_pool_) cudaFreeHost(hp.first);
  arena_.reset();
  cudnnDestroy(dnn_);
  cublasLtDestroy(lt_);
  cudaStreamDestroy(copy_stream_);
  cudaStreamDestroy(stream_);
}

cudaEvent_t Ctx::event() {
  if (event_next_ == event_pool_.size()) {
    cudaEvent_t e;
    CUDA_CHECK(cudaEventCreate(&e));
    event_pool_.push_back(e);
  }
  return event_pool_[event_next_++];
}

void Ctx::op_begin(const OpInfo& info) {
  if (!profiling_) return;
  if (op_gap_ms_ > 0) {
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::this_thread::sleep_for(std::chrono::milliseconds(op_gap_ms_));
  }
  OpRecord r;
  r.info = info;
  r.phase = phase_;
  r.start = event();
  r.stop = event();
  CUDA_CHECK(cudaEventRecord(r.start, stream_));
  ops_.push_back(std::move(r));
}

void Ctx::op_end() {
  if (!profiling_) return;
  CUDA_CHECK(cudaEventRecord(ops_.back().stop, stream_));
}

void Ctx::clear_ops() {
  ops_.clear();
  marks_.clear();
  offloaded_.clear();
  event_next_ = 0;
}

void Ctx::begin_phases(Phase p) {
  marks_.clear();
  phase(p);
}

void Ctx::phase(Phase p) {
  phase_ = p;
  cudaEvent_t e = event();
  CUDA_CHECK(cudaEventRecord(e, stream_));
  marks_.push_back({p, e});
}

std::vector<std::pair<Phase, double>> Ctx::end_phases() {
  cudaEvent_t e = event();
  CUDA_CHECK(cudaEventRecord(e, stream_));
  CUDA_CHECK(cudaEventSynchronize(e));
  std::vector<std::pair<Phase, double>> out;
  for (size_t i = 0; i < marks_.size(); ++i) {
    cudaEvent_t stop = (i + 1 < marks_.size()) ? marks_[i + 1].second : e;
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, marks_[i].second, stop));
    out.push_back({marks_[i].first, ms * 1e-3});
  }
  marks_.clear();
  return out;
}

void Ctx::keep(Buf& b, const std::string& name) {
  if (!offload_) return;
  auto& slot = host_pool_[name];
  if (slot.second < b.bytes) {
    if (slot.first != nullptr) CUDA_CHECK(cudaFreeHost(slot.first));
    CUDA_CHECK(cudaMallocHost(&slot.first, static_cast<size_t>(b.bytes)));
    slot.second = b.bytes;
  }
  Offloaded o{&b, name, b.bytes, slot.first, event(), event(), event(), event()};
  cudaEvent_t ready = event();
  CUDA_CHECK(cudaEventRecord(ready, stream_));
  CUDA_CHECK(cudaStreamWaitEvent(copy_stream_, ready, 0));
  CUDA_CHECK(cudaEventRecord(o.d2h_start, copy_stream_));
  CUDA_CHECK(cudaMemcpyAsync(o.host, b.ptr, static_cast<size_t>(b.bytes), cudaMemcpyDeviceToHost, copy_stream_));
  CUDA_CHECK(cudaEventRecord(o.d2h_stop, copy_stream_));
  offloaded_.push_back(o);
}

void Ctx::finish_offload() {
  if (!offload_) return;
  cudaEvent_t done = event();
  CUDA_CHECK(cudaEventRecord(done, copy_stream_));
  CUDA_CHECK(cudaStreamWaitEvent(stream_, done, 0));
  // The compute stream now runs nothing before the copies end, so the device copies can be reused.
  for (auto& o : offloaded_) arena_->release(*o.buf);
}

void Ctx::prefetch() {
  if (!offload_) return;
  cudaEvent_t ready = event();
  CUDA_CHECK(cudaEventRecord(ready, stream_));
  CUDA_CHECK(cudaStreamWaitEvent(copy_stream_, ready, 0));
  for (auto& o : offloaded_) {
    *o.buf = arena_->alloc(o.name, o.bytes, MemClass::activation);
    CUDA_CHECK(cudaEventRecord(o.h2d_start, copy_stream_));
    CUDA_CHECK(cudaMemcpyAsync(o.buf->ptr, o.host, static_cast<size_t>(o.bytes), cudaMemcpyHostToDevice, copy_stream_));
    CUDA_CHECK(cudaEventRecord(o.h2d_stop, copy_stream_));
  }
  cudaEvent_t done = event();
  CUDA_CHECK(cudaEventRecord(done, copy_stream_));
  CUDA_CHECK(cudaStreamWaitEvent(stream_, done, 0));
}

Ctx::OffloadTimes Ctx::offload_times() {
  OffloadTimes t;
  for (auto& o : offloaded_) {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, o.d2h_start, o.d2h_stop));
    t.d2h_s += ms * 1e-3;
    CUDA_CHECK(cudaEventElapsedTime(&ms, o.h2d_start, o.h2d_stop));
    t.h2d_s += ms * 1e-3;
    t.bytes += o.bytes;
  }
  return t;
}

void Ctx::clear_offload() { offloaded_.clear(); }

}  // namespace remat::cuda
