#pragma once
// PNG slices of a volume as the commands write them: the three orthogonal central slices (fdk --slices, demo,
// snapshots) and a chosen slice "AXIS" or "AXIS:INDEX" (fdk --slice, compare --slice), parsed and bounded in one place.
#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "glrecon/image.h"
#include "glrecon/io.h"

namespace glrecon::app {

/// "y:64" (axis and index) or "y" (the central slice).
struct SliceSpec {
  SliceAxis axis;
  std::optional<int> index;
};
SliceSpec parseSliceSpec(const std::string& option, const std::string& text);
/// The spec's index (the central slice where none is given) on a volume of `size` voxels; UsageError naming `option`
/// beyond the last slice.
int sliceIndex(const std::string& option, const SliceSpec& spec, const std::array<int, 3>& size);
int axisNumber(SliceAxis axis);
const char* axisName(SliceAxis axis);

struct SliceWriting {
  std::optional<glm::dvec3> centre;  ///< slices through this world point (default: the volume's centre)
  RunOutputs* outputs = nullptr;     ///< tracks the files, so a failed or interrupted run leaves none
  bool announce = false;             ///< "wrote PATH" on stderr for each file
};
/// Writes DIR/STEM{axial,coronal,sagittal}.png: axial slices are x-z planes in RTK's frame (rotation axis y).
void writeOrthogonalSlices(const Image& volume, const std::filesystem::path& directory, const std::string& stem,
                           std::pair<double, double> range, bool overwrite, const SliceWriting& how = {});

}  // namespace glrecon::app
