#include "glrecon/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace glrecon {

int resolveThreadCount(int requested) {
  if (requested > 0) return requested;
  return std::max(1u, std::thread::hardware_concurrency());
}

void parallelFor(std::size_t count, std::size_t chunk, int threads,
                 const std::function<void(std::size_t, std::size_t)>& body) {
  if (count == 0) return;
  chunk = std::max<std::size_t>(1, chunk);
  const std::size_t chunks = (count + chunk - 1) / chunk;
  const std::size_t workers = std::min<std::size_t>(resolveThreadCount(threads), chunks);
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failureMutex;
  auto work = [&] {
    for (;;) {
      const std::size_t c = next.fetch_add(1);
      if (c >= chunks) return;
      try {
        body(c * chunk, std::min(count, (c + 1) * chunk));
      } catch (...) {
        std::lock_guard lock(failureMutex);
        if (!failure) failure = std::current_exception();
        next = chunks;  // stop handing out work
      }
    }
  };
  if (workers <= 1) {
    work();
  } else {
    std::vector<std::jthread> pool;
    for (std::size_t t = 1; t < workers; ++t) pool.emplace_back(work);
    work();
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace glrecon
