#pragma once
/// A 3D float image with ITK/MetaImage geometry: the world position (mm) of voxel (i,j,k) is
/// origin + (i*spacing[0], j*spacing[1], k*spacing[2]); x varies fastest in memory.
/// Volumes and projection stacks share this type: a stack has size (nu, nv, projections), its
/// origin and spacing in detector millimetres for the first two axes (as RTK writes them).
#include <array>
#include <cstddef>
#include <vector>

#include "glrecon/grid.h"
#include "glrecon/parallel.h"

namespace glrecon {

struct Image {
  std::array<int, 3> size{0, 0, 0};
  std::array<double, 3> spacing{1.0, 1.0, 1.0};
  std::array<double, 3> origin{0.0, 0.0, 0.0};
  Voxels data;  // std::vector<float> but for resize()'s fill (glrecon/parallel.h)

  Image() = default;
  /// Zeroed voxels; a large image's memory is faulted in on all threads (resizeZeroed).
  Image(std::array<int, 3> size_, std::array<double, 3> spacing_, std::array<double, 3> origin_)
      : size(size_), spacing(spacing_), origin(origin_) {
    resizeZeroed(data, countOf(size_));
  }
  explicit Image(const VolumeGrid& grid)
      : Image(grid.size, {grid.spacing.x, grid.spacing.y, grid.spacing.z},
              {grid.origin.x, grid.origin.y, grid.origin.z}) {}

  static std::size_t countOf(std::array<int, 3> s) {
    return static_cast<std::size_t>(s[0]) * s[1] * static_cast<std::size_t>(s[2]);
  }
  std::size_t voxelCount() const { return countOf(size); }
  std::size_t sliceStride() const { return static_cast<std::size_t>(size[0]) * size[1]; }
  std::size_t index(int i, int j, int k) const {
    return static_cast<std::size_t>(k) * sliceStride() + static_cast<std::size_t>(j) * size[0] + i;
  }
  float& at(int i, int j, int k) { return data[index(i, j, k)]; }
  float at(int i, int j, int k) const { return data[index(i, j, k)]; }
  /// Pointer to slice k (for a projection stack: projection k, nv rows of nu pixels).
  float* slice(int k) { return data.data() + static_cast<std::size_t>(k) * sliceStride(); }
  const float* slice(int k) const { return data.data() + static_cast<std::size_t>(k) * sliceStride(); }

  VolumeGrid grid() const {
    return VolumeGrid{size, {spacing[0], spacing[1], spacing[2]}, {origin[0], origin[1], origin[2]}};
  }
};

}  // namespace glrecon
