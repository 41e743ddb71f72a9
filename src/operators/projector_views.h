#pragma once
// What every backend's forward and Adjoint back share: the per-view constants in float (as GPUs compute), so all agree
// bit for bit on their inputs. Internal to src/operators.
#include <string>
#include <vector>

#include "glrecon/geometry.h"
#include "glrecon/grid.h"

namespace glrecon::detail {

/// Coordinates: "index" = continuous voxel index (world - origin) / spacing.
struct ProjectorView {
  float sourceIndex[3];  ///< the source in voxel-index coordinates
  float e0[3];           ///< world vector from the source to the centre of pixel (0, 0)
  float eu[3], ev[3];    ///< world steps along a detector row / column
  float normal[3];       ///< unit detector normal (source -> detector)
  float weight;          ///< V_voxel * SDD^2 / |eu x ev| (the Adjoint weighting)
  float matrix[3][4];    ///< Geometry::matrix for the grid
  int mainAxis;          ///< the voxel axis the central ray runs most along: forward()'s sample planes (ray_march.h)
};
std::vector<ProjectorView> projectorViews(const Geometry& geometry, const VolumeGrid& grid);

/// The step OperatorOptions::step asks for (0: one sample per voxel plane, ray_march.h); throws GeometryError for one
/// outside the grid's bounds.
double projectorStep(double step, const VolumeGrid& grid);

/// Throws GeometryError when a ray has zero length (the source on a pixel centre) or the volume is not in front of every
/// source.
void checkProjectorGeometry(const Geometry& geometry, const VolumeGrid& grid, const std::string& context);

}  // namespace glrecon::detail
