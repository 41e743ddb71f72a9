// libFuzzer target: the TIFF reader (libtiff underneath) on arbitrary bytes, header first as a projection source
// reads it, then the pixels. Any exception but InputError is a finding, as is every sanitizer report, hang or
// allocation beyond -malloc_limit_mb (libtiff's allocations included: the sanitizers intercept malloc).
// Run by scripts/fuzz.sh tiff SECONDS.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "glrecon/errors.h"
#include "glrecon/io.h"

namespace {
// readTiff takes a path: one scratch file per fuzzing process, in memory where /dev/shm exists.
const std::string& scratch() {
  static const std::string path = [] {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(dir) + "/glrecon-fuzz-" + std::to_string(getpid()) + ".tif";
  }();
  return path;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FILE* f = std::fopen(scratch().c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    const glrecon::Image header = glrecon::readTiffHeader(scratch());
    const glrecon::Image image = glrecon::readTiff(scratch());
    // A successful read is self-consistent, and the header promised what the pixels gave.
    if (image.data.size() != image.voxelCount() || image.size != header.size || image.spacing != header.spacing ||
        image.origin != header.origin)
      __builtin_trap();
  } catch (const glrecon::InputError&) {
  }
  return 0;
}
