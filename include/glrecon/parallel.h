#pragma once
/// Splitting work over CPU threads. Work items are handed out dynamically in chunks, so uneven items
/// (detector rows that miss the phantom, slices outside the field of view) still balance.
#include <atomic>
#include <cstddef>
#include <functional>
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

/// `data` (empty) resized to `count` zeros, a large buffer's memory faulted in on `threads` threads (0 = all)
/// first: a volume's page faults on one thread cost more than reading or reconstructing it.
void resizeZeroed(std::vector<float>& data, std::size_t count, int threads = 0);

}  // namespace glrecon
