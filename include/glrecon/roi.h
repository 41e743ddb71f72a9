#pragma once
/// Regions of interest: the voxels a reconstruction computes (Xu & Mueller 2007, section 3.3, early fragment
/// kill). Outside the region voxels are 0; inside, values are bit for bit those of the unrestricted
/// reconstruction. Every backend applies the same mask. Tested in tests/core/roi*_test.cpp.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "glrecon/geometry.h"
#include "glrecon/image.h"

namespace glrecon {

struct RegionOfInterest {
  std::string description;            ///< e.g. "fov", "sphere 0,0,0,40", "mask.mha"
  std::array<int, 3> size{0, 0, 0};   ///< the volume grid's size
  std::vector<std::uint8_t> mask;     ///< 1 inside, 0 outside; x fastest, as Image
  /// For each x-row (index j + k * ny): the voxels [first, last) that hold every inside voxel of the row
  /// (first == last: none). Backends skip whole rows and the ends of rows with it.
  std::vector<std::pair<int, int>> rowSpans;

  std::size_t insideCount() const;
  bool inside(int i, int j, int k) const {
    return mask[(static_cast<std::size_t>(k) * size[1] + j) * size[0] + i] != 0;
  }
  /// Recomputes rowSpans from mask.
  void updateSpans();
};

/// Voxels whose centre projects onto the detector (within its pixel edges, u in [-0.5, nu - 0.5] and the
/// same for v) in every projection: the largest region all projections see. Exact per voxel: along an x-row
/// each of the four edge conditions is one linear inequality in i, so each projection cuts an interval.
RegionOfInterest fieldOfView(const Geometry& geometry, const VolumeGrid& grid);

/// The ROI a command-line spec describes (world millimetres, RTK's frame, rotation axis y):
///   fov                              the field of view above
///   fov-cylinder                     the conservative cylinder below (circular scans)
///   cylinder:X,Z,R,Y0,Y1             about the rotation axis: centre (x, z), radius R, from y = Y0 to Y1
///   box:X0,Y0,Z0,X1,Y1,Z1            an axis-aligned box
///   sphere:X,Y,Z,R                   a sphere
///   FILE.mha / FILE.mhd              a binary mask (integer element type, 0 and 1) on the output grid
/// Voxels count as inside when their centre is. Throws UsageError for a malformed spec or a region holding no voxel,
/// InputError for a bad mask file (naming the file and field). (In the io component, src/io/region_mask.cpp: a spec
/// may name a file.)
RegionOfInterest makeRegionOfInterest(const std::string& spec, const Geometry& geometry, const VolumeGrid& grid);
/// The region of a shape spec (fov, fov-cylinder, cylinder, box, sphere); nothing for another spec (a file's name).
std::optional<RegionOfInterest> shapeRegionOfInterest(const std::string& spec, const Geometry& geometry, const VolumeGrid& grid);
/// Throws UsageError, naming `spec` and the grid's extent, when the region holds no voxel centre.
void requireVoxelsInside(const RegionOfInterest& region, const std::string& spec, const VolumeGrid& grid);

/// The conservative cylinder of a circular scan: centred on the rotation axis, the radius every projection
/// sees at the narrowest half of the detector, the height its rows see at the far edge. As a spec for
/// makeRegionOfInterest ("cylinder:...").
std::string conservativeCylinder(const Geometry& geometry);

/// For each (x, y) column (index i + j * nx): the slices [first, last) holding all its inside voxels
/// (first == last: none). The compute and CUDA backends walk only these.
std::vector<std::pair<int, int>> columnZRanges(const RegionOfInterest& roi);

/// Sets every voxel outside the region to 0.
void applyRegion(Image& volume, const RegionOfInterest& roi);
/// The same on the region's grid's voxels at `data`.
void applyRegion(float* data, const RegionOfInterest& roi);

}  // namespace glrecon
