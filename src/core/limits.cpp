#include "glrecon/limits.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>

#include "glrecon/errors.h"
#include "glrecon/parallel.h"

namespace glrecon {
namespace {

constexpr std::uint64_t kUnknown = std::numeric_limits<std::uint64_t>::max();

std::uint64_t readNumber(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return kUnknown;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    return kUnknown;
  }
}

std::uint64_t memAvailable() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::uint64_t value = 0;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return value * 1024;  // meminfo counts kB
  }
  return kUnknown;
}

// The name of whichever figure is the binding one, for the message.
std::uint64_t available(std::string* source) {
  std::uint64_t best = memAvailable();
  if (source) *source = "MemAvailable in /proc/meminfo";
  std::ifstream cgroups("/proc/self/cgroup");
  const std::string text((std::istreambuf_iterator<char>(cgroups)), std::istreambuf_iterator<char>());
  std::string file;
  const std::uint64_t left = detail::cgroupMemoryLeft(text, "/sys/fs/cgroup", &file);
  if (left < best) {
    best = left;
    if (source) *source = "the cgroup limit in " + file;
  }
  if (const char* env = std::getenv("GLRECON_MEMORY_LIMIT_MB")) {
    char* end = nullptr;
    const double mb = std::strtod(env, &end);
    if (end != env && *end == '\0' && std::isfinite(mb) && mb > 0 &&
        mb * 1048576.0 < static_cast<double>(best)) {
      best = static_cast<std::uint64_t>(mb * 1048576.0);
      if (source) *source = "GLRECON_MEMORY_LIMIT_MB";
    }
  }
  return best;
}

}  // namespace

namespace detail {

std::uint64_t cgroupMemoryLeft(const std::string& procSelfCgroup, const std::string& root, std::string* file) {
  // A limit at or above 2^62 is "none" (cgroup v1 reports PAGE_COUNTER_MAX, 9223372036854771712, for unlimited).
  constexpr std::uint64_t kNoLimit = std::uint64_t{1} << 62;
  std::uint64_t best = kUnknown;
  // The tightest of a cgroup's limit and its ancestors' (a parent's limit binds its children), each less what that
  // cgroup uses now.
  const auto walk = [&](const std::string& mount, std::string path, const char* limitName, const char* usageName) {
    for (;;) {
      const std::string dir = mount + (path == "/" ? "" : path);
      const std::uint64_t limit = readNumber((dir + "/" + limitName).c_str());
      if (limit != kUnknown && limit < kNoLimit) {
        const std::uint64_t used = readNumber((dir + "/" + usageName).c_str());
        const std::uint64_t left = used != kUnknown && used < limit ? limit - used : (used == kUnknown ? limit : 0);
        if (left < best) {
          best = left;
          if (file) *file = dir + "/" + limitName;
        }
      }
      if (path.empty() || path == "/") break;
      const std::size_t slash = path.find_last_of('/');
      path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
    }
  };
  std::istringstream lines(procSelfCgroup);
  std::string line;
  while (std::getline(lines, line)) {
    // "hierarchy-ID:controllers:path": v2's single hierarchy is "0::/path", v1's memory controller "N:memory:/path".
    const std::size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (path.empty() || path[0] != '/') continue;
    bool memory = false;
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');) memory = memory || name == "memory";
    // Inside a container without its own cgroup namespace the path is the host's, not under the container's mount:
    // then the mount's root is the container's cgroup.
    if (line.compare(0, 3, "0::") == 0) {
      walk(root, path, "memory.max", "memory.current");
      if (path != "/") walk(root, "/", "memory.max", "memory.current");
    } else if (memory) {
      walk(root + "/memory", path, "memory.limit_in_bytes", "memory.usage_in_bytes");
      if (path != "/") walk(root + "/memory", "/", "memory.limit_in_bytes", "memory.usage_in_bytes");
    }
  }
  return best;
}

}  // namespace detail

const ValueBounds* valueBounds(const std::string& fieldName) {
  // A value outside its bounds would otherwise hang (Poisson noise with a mean of 1e200), run for hours (supersampling
  // 100000^2), start 100000 threads, wrap around (an every of -1 into an unsigned count) or write NaN volumes.
  static const std::map<std::string, ValueBounds> table = {
      {"threads", {0, 4096, true, true, "a whole number of threads from 0 (all) to 4096"}},
      // 100000 covers any published schedule (TIGRE's and ASTRA's demos run up to a few thousand); 2^31 - 1, C's int,
      // was a run of days.
      {"iterations", {1, 1e5, true, true, "a whole number of iterations from 1 to 100000"}},
      {"stopResidual", {0, 1, true, false, "a fraction of ||b|| from 0 (off) to 1"}},
      {"stopChange", {0, 1, true, false, "a fraction of the residual from 0 (off) to 1"}},
      {"tvSteps", {1, 1000, true, true, "a whole number of TV steps from 1 to 1000"}},
      {"tvAlpha", {0, 1, false, false, "a fraction of the data step in (0, 1]"}},
      {"tvReduction", {0, 1, false, false, "a factor in (0, 1]"}},
      {"tvRatio", {0, 100, false, false, "a ratio in (0, 100]"}},
      {"lambdaReduction", {0, 1, false, false, "a factor in (0, 1]"}},
      {"tvWeight", {0, 100, true, false, "a weight from 0 (no TV) to 100"}},
      {"filterThreads", {0, 4096, true, true, "a whole number of threads from 0 (all) to 4096"}},
      {"every", {1, 1e9, true, true, "a positive whole number of projections"}},
      {"queue", {1, 1e6, true, true, "a whole number of projections from 1 to 1000000"}},
      {"batch", {1, 1e6, true, true, "a whole number of projections from 1 to 1000000"}},
      {"gpu", {0, 1023, true, true, "a device index from 0 (see glrecon devices)"}},
      {"projections", {1, 1e6, true, true, "a whole number of projections from 1 to 1000000"}},
      {"size", {1, 65536, true, true, "a whole number of voxels from 1 to 65536"}},
      {"detector", {1, 65536, true, true, "a whole number of pixels from 1 to 65536"}},
      {"supersample", {1, 16, true, true, "a whole number of rays per pixel side from 1 to 16"}},
      {"noiseI0", {0, 1e12, true, false, "0 (no noise) or a photon count up to 1e12 (beyond, the noise is below float precision)"}},
      {"densityScale", {-1e6, 1e6, true, false, "a finite factor within 1e6 in magnitude"}},
      {"phantomScale", {0, 1e7, false, false, "a positive size in mm up to 1e7"}},
      {"sid", {0, 1e7, false, false, "a positive distance in mm up to 1e7"}},
      {"sdd", {0, 1e7, false, false, "a positive distance in mm up to 1e7"}},
      {"arc", {-1e5, 1e5, true, false, "a finite angle in degrees within 1e5"}},
      {"firstAngle", {-1e6, 1e6, true, false, "a finite angle in degrees within 1e6"}},
      {"outOfPlane", {-1e6, 1e6, true, false, "a finite angle in degrees within 1e6"}},
      {"inPlane", {-1e6, 1e6, true, false, "a finite angle in degrees within 1e6"}},
      {"cutoff", {0, 1, false, false, "a fraction of the Nyquist frequency in (0, 1]"}},
      {"hann", {0, 1, false, false, "a cut-off fraction in (0, 1]"}},
      {"i0", {0, 3e38, false, false, "a positive finite unattenuated intensity"}},
      {"densityAfter", {0, 1, false, false, "a fraction of the projections in (0, 1]"}},
      {"rate", {0, 1e6, true, false, "0 (as fast as possible) or projections per second up to 1e6"}},
      {"simulate", {0, 1e6, true, false, "0 (as fast as possible) or projections per second up to 1e6"}},
      {"index", {0, 65535, true, true, "a voxel index from 0"}},
      {"screenshotAt", {0, 1e9, true, true, "a whole number of projections"}},
      {"closeAfter", {0, 1e9, true, true, "a whole number of projections"}},
  };
  const auto it = table.find(fieldName);
  return it == table.end() ? nullptr : &it->second;
}

bool withinBounds(const ValueBounds& b, double value) {
  return std::isfinite(value) && (b.lowestIncluded ? value >= b.lowest : value > b.lowest) && value <= b.highest &&
         (!b.whole || value == std::floor(value));
}

void checkValue(const std::string& fieldName, double value, const std::string& shownField) {
  const ValueBounds* b = valueBounds(fieldName);
  if (b ? withinBounds(*b, value) : std::isfinite(value)) return;
  std::ostringstream found;
  found.precision(17);
  found << value;
  throw UsageError(field(shownField.empty() ? fieldName : shownField) + ": expected " + (b ? b->expected : "a finite number") + ", found " +
                   found.str());
}

std::uint64_t availableHostMemory() { return available(nullptr); }

std::string formatBytes(std::uint64_t bytes) {
  char text[64];
  if (bytes >= (1ull << 30))
    std::snprintf(text, sizeof text, "%.1f GiB", bytes / 1073741824.0);
  else if (bytes >= (1ull << 20))
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / 1048576.0);
  else
    std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
  return text;
}

void checkHostMemory(const std::string& where, const std::string& what, std::uint64_t bytes) {
  std::string source;
  const std::uint64_t limit = available(&source);
  if (limit == kUnknown || bytes <= limit) return;
  throwInputError(where, what, "at most " + formatBytes(limit) + " of memory (" + source + ")",
                  formatBytes(bytes) + " needed");
}

void requireReadableFile(const std::string& path, const std::string& field) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    const int error = errno;
    throwInputError(path, field, "a readable file",
                    error == ENOENT ? "no such file" : std::string(std::strerror(error)));
  }
  const char* kind = S_ISDIR(info.st_mode)    ? "a directory"
                     : S_ISFIFO(info.st_mode) ? "a FIFO (named pipe)"
                     : S_ISCHR(info.st_mode)  ? "a character device"
                     : S_ISBLK(info.st_mode)  ? "a block device"
                     : S_ISSOCK(info.st_mode) ? "a socket"
                     : S_ISREG(info.st_mode)  ? nullptr
                                              : "not a regular file";
  if (kind) throwInputError(path, field, "a regular file", kind);
  if (::access(path.c_str(), R_OK) != 0) {
    const int error = errno;
    throwInputError(path, field, "a readable file", std::strerror(error));
  }
}

std::string quoted(const std::string& text, std::size_t limit) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= limit) {
      out += "...";
      break;
    }
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    }
  }
  return out;
}

std::size_t firstValueOutside(const float* values, std::size_t count, double limit) {
  // The largest float not above the limit: comparing floats with it decides what comparing in double would.
  float bound = std::numeric_limits<float>::max();
  if (limit < bound) {
    bound = static_cast<float>(limit);
    if (static_cast<double>(bound) > limit) bound = std::nextafter(bound, 0.0f);
  }
  constexpr std::size_t kBlock = 1024;
  for (std::size_t b = 0; b < count; b += kBlock) {
    const std::size_t e = std::min(count, b + kBlock);
    // Without branches over a block (it vectorizes); the index searched for only in a block that has one.
    unsigned outside = 0;
    for (std::size_t i = b; i < e; ++i) outside |= !(std::fabs(values[i]) <= bound);
    if (outside)
      for (std::size_t i = b; i < e; ++i)
        if (!(std::fabs(values[i]) <= bound)) return i;
  }
  return count;
}

std::size_t firstValueOutside(const float* values, std::size_t count, double limit, std::size_t chunk, int threads) {
  std::atomic<std::size_t> first{count};
  parallelFor(count, std::max<std::size_t>(1, chunk), threads, [&](std::size_t begin, std::size_t end) {
    if (const std::size_t i = firstValueOutside(values + begin, end - begin, limit); i < end - begin) lowerAtomically(first, begin + i);
  });
  return first;
}

}  // namespace glrecon
