#pragma once
/// Limits checked before work starts: host memory, input files that can be read without blocking, and the
/// quoting of untrusted text in messages. Tested in tests/core/limits_test.cpp and tests/app/bad_input_test.cpp.
#include <cstddef>
#include <cstdint>
#include <string>

namespace glrecon {

/// Bytes of host memory this process may still allocate: the smaller of /proc/meminfo's MemAvailable and
/// what its cgroups leave (their limits less their use: cgroup v2's memory.max and memory.current, v1's
/// memory.limit_in_bytes and memory.usage_in_bytes, for its own cgroup and every ancestor, found through
/// /proc/self/cgroup). The environment variable
/// GLRECON_MEMORY_LIMIT_MB, when set to a positive number, caps it (for tests and shared machines).
/// Returns UINT64_MAX when nothing is known.
std::uint64_t availableHostMemory();

namespace detail {
/// What the cgroups named in `procSelfCgroup` (the text of /proc/self/cgroup) leave under `root` (/sys/fs/cgroup): the
/// least over v2's and v1's memory limits of the process's cgroup and its ancestors, each less its use; UINT64_MAX when
/// none is set. `file` gets the binding limit's file. (Separate so that tests can give it made-up hierarchies.)
std::uint64_t cgroupMemoryLeft(const std::string& procSelfCgroup, const std::string& root, std::string* file);
}  // namespace detail

/// Throws InputError naming `where` and `what` when `bytes` do not fit in the host memory available now
/// ("needs 19.5 GiB, 7.2 GiB available (MemAvailable)").
void checkHostMemory(const std::string& where, const std::string& what, std::uint64_t bytes);

/// The bounds on a number a user gives (an option on the command line, an argument in Python), by the library's field
/// name: both front ends check against this one table, so a value refused by one is refused by the other.
struct ValueBounds {
  double lowest, highest;
  bool lowestIncluded, whole;
  const char* expected;  ///< the range in words, for the message
};
/// The bounds of `fieldName` ("threads", "supersample", "noiseI0", ...); nullptr where the table has none (then any
/// finite number).
const ValueBounds* valueBounds(const std::string& fieldName);
/// Whether `value` lies within `bounds` (finite, in range, whole where it must be).
bool withinBounds(const ValueBounds& bounds, double value);
/// Throws UsageError "FIELD: expected ..., found VALUE" when `value` is not finite or outside `fieldName`'s bounds. The
/// field shown is `shownField` where given (an argument whose name differs from the table's).
void checkValue(const std::string& fieldName, double value, const std::string& shownField = "");

/// Index of the first of values[0, count) that is NaN, infinite or larger than `limit` in magnitude; count
/// when there is none.
std::size_t firstValueOutside(const float* values, std::size_t count, double limit);
/// The same in chunks of `chunk` values on `threads` threads (0 = all), still the first in memory order.
std::size_t firstValueOutside(const float* values, std::size_t count, double limit, std::size_t chunk, int threads);

/// "1.5 GiB", "12.0 MiB", "512 bytes".
std::string formatBytes(std::uint64_t bytes);

/// Refuses, before opening it, anything but a readable regular file: a missing path, permission denied
/// (distinguished), a directory, a FIFO (which would block), a device or a socket. `field` names the
/// option or header field that gave the path.
void requireReadableFile(const std::string& path, const std::string& field);

/// Untrusted text for a message: printable ASCII kept, everything else as \xNN, at most `limit` characters
/// (then "..."), so binary garbage never reaches the terminal raw.
std::string quoted(const std::string& text, std::size_t limit = 80);

}  // namespace glrecon

namespace glrecon {
/// Physical bounds on lengths (mm): spacings of volumes and detectors, and how far from the origin any
/// position (origin, source, detector) may lie. Beyond them float arithmetic in the backprojectors loses
/// all precision or overflows.
inline constexpr double kMinSpacingMm = 1e-6;
inline constexpr double kMaxSpacingMm = 1e6;
inline constexpr double kMaxCoordinateMm = 1e7;
}  // namespace glrecon
