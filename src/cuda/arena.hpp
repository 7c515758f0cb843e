// Counting device allocator: one cudaMalloc up front, first-fit sub-allocation, exact byte counts per class.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace remat::cuda {

// What a buffer is, for the counts: weights and weight gradients are reported apart from the rest.
enum class MemClass { activation = 0, weight = 1, weight_grad = 2, persistent = 3, check = 4 };
constexpr int kMemClasses = 5;
const char* mem_class_name(MemClass c);

struct Buf {
  void* ptr = nullptr;
  int64_t bytes = 0;  // requested bytes (what the counts add up)
  int64_t id = -1;
  template <class T>
  T* as() const { return static_cast<T*>(ptr); }
  bool valid() const { return ptr != nullptr; }
};

struct NamedBytes {
  std::string name;
  int64_t bytes = 0;
};

class Arena {
 public:
  explicit Arena(int64_t capacity_bytes);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  Buf alloc(const std::string& name, int64_t bytes, MemClass cls);
  void release(Buf& buf);  // no-op on an empty Buf

  int64_t live_bytes(MemClass cls) const { return live_[static_cast<int>(cls)]; }
  int64_t peak_bytes(MemClass cls) const { return peak_[static_cast<int>(cls)]; }
  void reset_peak(MemClass cls) {
    peak_[static_cast<int>(cls)] = live_[static_cast<int>(cls)];
    if (snapshot_ && cls == MemClass::activation) peak_list_ = live_list(cls);
  }
  // When on, every new activation peak stores the list of live activation buffers (name, bytes).
  void set_snapshot(bool on) { snapshot_ = on; }
  const std::vector<NamedBytes>& peak_snapshot() const { return peak_list_; }
  std::vector<NamedBytes> live_list(MemClass cls) const;
  int64_t capacity_bytes() const { return capacity_; }

 private:
  struct Block {
    std::string name;
    int64_t offset = 0;
    int64_t size = 0;  // aligned size actually reserved
    int64_t bytes = 0;
    MemClass cls = MemClass::activation;
  };
  char* base_ = nullptr;
  int64_t capacity_ = 0;
  int64_t next_id_ = 0;
  std::map<int64_t, int64_t> free_;  // offset -> size
  std::unordered_map<int64_t, Block> used_;
  int64_t live_[kMemClasses] = {};
  int64_t peak_[kMemClasses] = {};
  bool snapshot_ = false;
  std::vector<NamedBytes> peak_list_;
};

}  // namespace remat::cuda
