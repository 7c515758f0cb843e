#include "arena.hpp"

#include <algorithm>
#include <stdexcept>

#include "check.hpp"

namespace remat::cuda {

namespace {
constexpr int64_t kAlignBytes = 256;
int64_t align_up(int64_t v) { return (v + kAlignBytes - 1) / kAlignBytes * kAlignBytes; }
}  // namespace

const char* mem_class_name(MemClass c) {
  switch (c) {
    case MemClass::activation: return "activation";
    case MemClass::weight: return "weight";
    case MemClass::weight_grad: return "weight_grad";
    case MemClass::persistent: return "persistent";
    case MemClass::check: return "check";
  }
  return "?";
}

Arena::Arena(int64_t capacity_bytes) : capacity_(align_up(capacity_bytes)) {
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, static_cast<size_t>(capacity_)));
  base_ = static_cast<char*>(p);
  free_[0] = capacity_;
}

Arena::~Arena() {
  if (base_ != nullptr) cudaFree(base_);
}

Buf Arena::alloc(const std::string& name, int64_t bytes, MemClass cls) {
  if (bytes <= 0) throw std::runtime_error("arena: non-positive allocation for " + name);
  const int64_t size = align_up(bytes);
  auto it = std::find_if(free_.begin(), free_.end(), [&](const auto& kv) { return kv.second >= size; });
  if (it == free_.end())
    throw std::runtime_error("arena: out of memory allocating " + std::to_string(bytes) + " bytes for " + name);
  const int64_t offset = it->first;
  const int64_t rest = it->second - size;
  free_.erase(it);
  if (rest > 0) free_[offset + size] = rest;
  Block blk{name, offset, size, bytes, cls};
  const int64_t id = next_id_++;
  used_.emplace(id, blk);
  const int c = static_cast<int>(cls);
  live_[c] += bytes;
  if (live_[c] > peak_[c]) {
    peak_[c] = live_[c];
    if (snapshot_ && cls == MemClass::activation) peak_list_ = live_list(MemClass::activation);
  }
  return Buf{base_ + offset, bytes, id};
}

void Arena::release(Buf& buf) {
  if (buf.id < 0) return;
  auto it = used_.find(buf.id);
  if (it == used_.end()) throw std::runtime_error("arena: double free");
  const Block blk = it->second;
  used_.erase(it);
  live_[static_cast<int>(blk.cls)] -= blk.bytes;
  auto next = free_.lower_bound(blk.offset);
  int64_t off = blk.offset, size = blk.size;
  if (next != free_.end() && next->first == off + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      off = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_[off] = size;
  buf = Buf{};
}

std::vector<NamedBytes> Arena::live_list(MemClass cls) const {
  std::vector<std::pair<int64_t, NamedBytes>> rows;
  for (const auto& [id, blk] : used_)
    if (blk.cls == cls) rows.push_back({id, NamedBytes{blk.name, blk.bytes}});
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<NamedBytes> out;
  out.reserve(rows.size());
  for (auto& r : rows) out.push_back(std::move(r.second));
  return out;
}

}  // namespace remat::cuda
