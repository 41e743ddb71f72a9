#pragma once
// What every backend's forward and Adjoint back share: the per-view constants in float (as GPUs compute), so all agree
// bit for bit on their inputs. Internal to src/operators.
#include <string>
#include <vector>

#include "glrecon/geometry.h"
#include "glrecon/grid.h"

namespace glrecon::detail {

/// The grid's voxel spacing (x, y, z) in float, as the projectors and kernels take it (`const float spacing[3]`).
struct FloatSpacing {
  float h[3];
  explicit FloatSpacing(const VolumeGrid& grid)
      : h{static_cast<float>(grid.spacing.x), static_cast<float>(grid.spacing.y), static_cast<float>(grid.spacing.z)} {}
  operator const float*() const { return h; }
};

/// Coordinates: "index" = continuous voxel index (world - origin) / spacing.
/// Parallel beam (`parallel` 1) reads the same fields otherwise: every ray of the view has the direction e0 and starts
/// (t = 0) at its pixel's centre, sourceIndex + u eu + v ev in voxel-index coordinates; the Adjoint weight is `weight`
/// alone (the rays' density does not change with depth).
struct ProjectorView {
  float sourceIndex[3];  ///< the source in voxel-index coordinates (parallel: pixel (0, 0)'s centre)
  float e0[3];           ///< world vector from the source to the centre of pixel (0, 0) (parallel: the ray direction)
  float eu[3], ev[3];    ///< world steps along a detector row / column (parallel: in voxel-index units)
  float normal[3];       ///< unit detector normal (source -> detector)
  float weight;          ///< V_voxel * SDD^2 / |eu x ev| (the Adjoint weighting); parallel: V_voxel / |(du x dv) . ray/|ray||
  float matrix[3][4];    ///< Geometry::matrix for the grid
  int mainAxis;          ///< the voxel axis the central ray runs most along: forward()'s sample planes (ray_march.h)
  int parallel;          ///< 1 for a parallel-beam view
};
std::vector<ProjectorView> projectorViews(const Geometry& geometry, const VolumeGrid& grid);

/// The step OperatorOptions::step asks for (0: one sample per voxel plane, ray_march.h); throws GeometryError for one
/// outside the grid's bounds.
double projectorStep(double step, const VolumeGrid& grid);

/// ProjectorPair::DistanceDriven's geometry (plane_gather.h's planeGatherable for every view) and step (0: the
/// voxel planes); throws GeometryError naming the first view that is not of a gantry about y with an untilted
/// detector, UsageError for a step.
void checkDistanceDrivenGeometry(const Geometry& geometry, const VolumeGrid& grid, double step, const std::string& context);

/// Throws GeometryError when a ray has zero length (the source on a pixel centre) or the volume is not in front of every
/// source.
void checkProjectorGeometry(const Geometry& geometry, const VolumeGrid& grid, const std::string& context);

}  // namespace glrecon::detail
