// The commands' PNG slices (slice_files.h).
#include "slice_files.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "glrecon/errors.h"
#include "glrecon/limits.h"

namespace glrecon::app {

SliceSpec parseSliceSpec(const std::string& option, const std::string& text) {
  const auto colon = text.find(':');
  SliceSpec spec{parseSliceAxis(text.substr(0, colon)), std::nullopt};
  if (colon != std::string::npos) {
    const std::string digits = text.substr(colon + 1);
    char* end = nullptr;
    const double index = std::strtod(digits.c_str(), &end);
    if (digits.empty() || end != digits.c_str() + digits.size() || !(index >= 0 && index <= 65535) || index != std::floor(index))
      throw UsageError(option + ": expected AXIS:INDEX with a voxel index, found '" + glrecon::quoted(text) + "'");
    spec.index = static_cast<int>(index);
  }
  return spec;
}

int sliceIndex(const std::string& option, const SliceSpec& spec, const std::array<int, 3>& size) {
  const int slices = size[axisNumber(spec.axis)];
  const int index = spec.index.value_or(slices / 2);
  if (index >= slices)
    throw UsageError(option + ": expected an index from 0 to " + std::to_string(slices - 1) + " along " + axisName(spec.axis) +
                     ", found " + std::to_string(index));
  return index;
}

int axisNumber(SliceAxis axis) { return axis == SliceAxis::X ? 0 : axis == SliceAxis::Y ? 1 : 2; }
const char* axisName(SliceAxis axis) { return axis == SliceAxis::X ? "x" : axis == SliceAxis::Y ? "y" : "z"; }

void writeOrthogonalSlices(const Image& volume, const std::filesystem::path& directory, const std::string& stem,
                           std::pair<double, double> range, bool overwrite, const SliceWriting& how) {
  const struct {
    const char* name;
    SliceAxis axis;
  } views[] = {{"axial", SliceAxis::Y}, {"coronal", SliceAxis::Z}, {"sagittal", SliceAxis::X}};
  for (const auto& v : views) {
    const std::string path = (directory / (stem + v.name + ".png")).string();
    const int a = axisNumber(v.axis);
    int index = volume.size[a] / 2;
    if (how.centre)
      index = std::clamp(static_cast<int>(std::lround(((*how.centre)[a] - volume.origin[a]) / volume.spacing[a])), 0, volume.size[a] - 1);
    if (how.outputs) how.outputs->track(path);
    writeSlicePng(path, volume, v.axis, index, range.first, range.second, overwrite);
    if (how.announce) std::cerr << "wrote " << path << '\n';
  }
}

}  // namespace glrecon::app
