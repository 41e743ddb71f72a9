// libFuzzer target: the command line's value parsers (number lists, ranges, volume grids, slice axes) and
// the --roi specs on a small scan. The input is split at the first newline: the first part picks and feeds a
// parser. Only UsageError, InputError and GeometryError are expected.
#include <cstdint>
#include <string>

#include "glrecon/errors.h"
#include "glrecon/geometry.h"
#include "glrecon/io.h"
#include "glrecon/parse.h"
#include "glrecon/roi.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const int which = data[0] % 3;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  static const glrecon::Geometry geometry = [] {
    glrecon::CircularScanSpec spec;
    spec.projections = 8;
    spec.nu = 16;
    spec.nv = 8;
    spec.spacingU = spec.spacingV = 32.0;
    return glrecon::makeCircularScan(spec);
  }();
  static const glrecon::VolumeGrid grid = glrecon::VolumeGrid::centred({12, 10, 8}, glm::dvec3(16.0));
  try {
    switch (which) {
      case 0:
        (void)glrecon::parseNumberList("--size", text);
        break;
      case 1:
        (void)glrecon::parseSliceAxis(text);
        break;
      default: {
        // Mask files have their own target (fuzz_metaimage); here only the shape specs.
        if (text.size() >= 4 && (text.ends_with(".mha") || text.ends_with(".mhd") || text.ends_with(".MHA") ||
                                 text.ends_with(".MHD")))
          return 0;
        const glrecon::RegionOfInterest roi = glrecon::makeRegionOfInterest(text, geometry, grid);
        if (roi.mask.size() != grid.voxelCount()) __builtin_trap();
      }
    }
  } catch (const glrecon::UsageError&) {
  } catch (const glrecon::InputError&) {
  } catch (const glrecon::GeometryError&) {
  }
  return 0;
}
