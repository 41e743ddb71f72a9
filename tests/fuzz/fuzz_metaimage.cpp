// libFuzzer target: the MetaImage reader on arbitrary bytes. Any exception but InputError is a finding, as is
// every sanitizer report, hang or allocation beyond -rss_limit_mb. Run by scripts/fuzz.sh metaimage SECONDS.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "glrecon/errors.h"
#include "glrecon/io.h"

namespace {
// The reader takes a path: one scratch file per fuzzing process, in memory where /dev/shm exists.
const std::string& scratch() {
  static const std::string path = [] {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(dir) + "/glrecon-fuzz-" + std::to_string(getpid()) + ".mha";
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
    glrecon::Image image = glrecon::readMetaImage(scratch());
    // A successful read must be self-consistent.
    if (image.data.size() != image.voxelCount()) __builtin_trap();
  } catch (const glrecon::InputError&) {
  }
  return 0;
}
