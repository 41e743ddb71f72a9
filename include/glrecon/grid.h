#pragma once
/// Volume grids, ITK-style: `size` voxels, `spacing` mm, `origin` the world position of voxel (0,0,0)'s centre; the world
/// position of voxel (i,j,k) is origin + (i, j, k) * spacing; x varies fastest in memory.
#include <array>
#include <cstddef>

#include <glm/vec3.hpp>

namespace glrecon {

/// The sampling of a volume: size in voxels, spacing (mm) and the world position of voxel (0,0,0).
struct VolumeGrid {
  std::array<int, 3> size{0, 0, 0};
  glm::dvec3 spacing{1.0, 1.0, 1.0};
  glm::dvec3 origin{0.0, 0.0, 0.0};

  /// A grid of the given size and spacing centred on the world origin (rtkfdk's default).
  static VolumeGrid centred(std::array<int, 3> size, glm::dvec3 spacing);

  std::size_t voxelCount() const {
    return static_cast<std::size_t>(size[0]) * size[1] * static_cast<std::size_t>(size[2]);
  }
  glm::dvec3 worldOf(double i, double j, double k) const {
    return origin + glm::dvec3(i, j, k) * spacing;
  }
  /// Throws GeometryError when a size is not positive or a spacing is zero, negative or not finite.
  void validate(const char* context) const;
};

}  // namespace glrecon
