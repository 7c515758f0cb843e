#include "workers.hpp"

#include <atomic>
#include <chrono>
#include <exception>
#include <thread>
#include <vector>

namespace remat {

void run_workers(size_t threads, const std::function<void(size_t worker)>& work, const std::function<void()>& tick) {
  threads = std::max<size_t>(1, threads);
  std::vector<std::exception_ptr> errors(threads);
  std::atomic<size_t> finished{0};
  const auto guarded = [&](size_t worker) {
    try {
      work(worker);
    } catch (...) {
      errors[worker] = std::current_exception();
    }
    ++finished;
  };
  std::vector<std::thread> others;
  for (size_t w = 1; w < threads; ++w) others.emplace_back(guarded, w);
  guarded(0);
  while (tick && finished.load() < threads) {
    tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (auto& t : others) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace remat
