// makeRegionOfInterest (glrecon/roi.h): the shapes are core's (shapeRegionOfInterest); a spec naming a file is a binary
// mask read here, on the output grid. In io because a spec may name a file: core reads none.
#include <algorithm>
#include <cmath>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/limits.h"
#include "glrecon/roi.h"

namespace glrecon {
namespace {

RegionOfInterest readMask(const std::string& spec, const VolumeGrid& grid) {
  std::string extension = spec.size() > 4 ? spec.substr(spec.size() - 4) : "";
  std::transform(extension.begin(), extension.end(), extension.begin(), ::tolower);
  if (extension != ".mha" && extension != ".mhd")
    throw UsageError(field("roi") + ": expected fov, cylinder:..., box:..., sphere:... or a mask file (.mha/.mhd), found '" + quoted(spec) + "'");

  std::string type;
  const Image mask = readMetaImage(spec, &type);
  if (type == "MET_FLOAT" || type == "MET_DOUBLE")
    throwInputError(spec, "ElementType", "an integer type for a binary mask (e.g. MET_UCHAR)", type);
  if (mask.size != grid.size)
    throwInputError(spec, "DimSize",
                    std::to_string(grid.size[0]) + " " + std::to_string(grid.size[1]) + " " + std::to_string(grid.size[2]) +
                        " (the output volume's size)",
                    std::to_string(mask.size[0]) + " " + std::to_string(mask.size[1]) + " " + std::to_string(mask.size[2]));
  for (int a = 0; a < 3; ++a) {
    const auto close = [](double x, double y) { return std::abs(x - y) <= 1e-6 * std::max(1.0, std::abs(y)); };
    if (!close(mask.spacing[a], grid.spacing[a]) || !close(mask.origin[a], grid.origin[a]))
      throwInputError(spec, "ElementSpacing/Offset", "the output volume's grid (spacing and origin)", "a different grid");
  }
  RegionOfInterest r;
  r.description = spec;
  r.size = grid.size;
  r.mask.assign(grid.voxelCount(), 0);
  for (std::size_t i = 0; i < mask.data.size(); ++i) {
    if (mask.data[i] != 0.0f && mask.data[i] != 1.0f)
      throwInputError(spec, "voxel " + std::to_string(i), "0 or 1 (a binary mask)", std::to_string(mask.data[i]));
    r.mask[i] = mask.data[i] != 0.0f;
  }
  r.updateSpans();
  return r;
}

}  // namespace

RegionOfInterest makeRegionOfInterest(const std::string& spec, const Geometry& geometry, const VolumeGrid& grid) {
  // The mask (a byte per voxel) and its row spans, checked before they are allocated: a 65536^3 grid asked for 256 TiB
  // (std::bad_alloc), one that fits the address space but not the memory met the OOM killer.
  const std::uint64_t rows = static_cast<std::uint64_t>(grid.size[1]) * static_cast<std::uint64_t>(grid.size[2]);
  checkHostMemory(spec, "a region-of-interest mask of " + std::to_string(grid.size[0]) + " x " + std::to_string(grid.size[1]) + " x " +
                            std::to_string(grid.size[2]) + " voxels",
                  rows * static_cast<std::uint64_t>(grid.size[0]) + rows * sizeof(std::pair<int, int>));
  std::optional<RegionOfInterest> region = shapeRegionOfInterest(spec, geometry, grid);
  if (!region) region = readMask(spec, grid);
  requireVoxelsInside(*region, spec, grid);
  return std::move(*region);
}

}  // namespace glrecon
