#pragma once
/// Splitting work over CPU threads. Work items are handed out dynamically in chunks, so uneven items
/// (detector rows that miss the phantom, slices outside the field of view) still balance.
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace glrecon {

/// Threads to use for `requested` (0 = all hardware threads).
int resolveThreadCount(int requested);

/// Calls body(begin, end) over [0, count) in chunks of at most `chunk` items on `threads` threads
/// (0 = all). The first exception thrown by any chunk is rethrown once all threads stop.
void parallelFor(std::size_t count, std::size_t chunk, int threads,
                 const std::function<void(std::size_t begin, std::size_t end)>& body);

/// target = min(target, value), for chunks that each report an index and want the first.
void lowerAtomically(std::atomic<std::size_t>& target, std::size_t value);

/// std::allocator, except that an element made without a value (resize(n), a vector of n) is left unwritten, so that
/// resizeZeroed can zero a large volume on every thread: std::vector's own fill runs on one thread, and held a 32 GiB
/// volume back until 4.2 s into a two-H200 run whose first slabs were done at 3.1 s.
template <typename T>
struct UnfilledAllocator : std::allocator<T> {
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = UnfilledAllocator<U>;
  };
  UnfilledAllocator() = default;
  template <typename U>
  UnfilledAllocator(const UnfilledAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
template <typename T, typename U>
bool operator==(const UnfilledAllocator<T>&, const UnfilledAllocator<U>&) noexcept {
  return true;
}

/// An image's voxels (Image::data): a std::vector whose resize() leaves new voxels unwritten; resizeZeroed zeroes them.
using Voxels = std::vector<float, UnfilledAllocator<float>>;

/// `data` resized to `count`, every new voxel zero, a large buffer's memory faulted in and zeroed on `threads` threads
/// (0 = all): a volume's page faults and zero fill on one thread cost more than reading or reconstructing it.
void resizeZeroed(Voxels& data, std::size_t count, int threads = 0);

}  // namespace glrecon
