#pragma once
// What the app's set-up preview draws over a projection (docs/app.md): the volume grid's box and a region of interest,
// projected through the view's 3x4 matrix (glrecon/geometry.h) into continuous detector pixel coordinates (u, v), pixel
// centres at integers. Straight edges stay straight through a projection (the volume lies in front of every source:
// Geometry::checkVolumeInFront), so a box is its 12 projected edges exactly; round shapes are polylines through points on
// their silhouettes.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <glm/vec2.hpp>

#include "glrecon/geometry.h"

namespace glrecon::viewer {

/// A line in detector pixels: consecutive points joined (closed where the last equals the first).
using DetectorPolyline = std::vector<glm::dvec2>;

/// Where world point `p` (mm) lands on the detector of `view`: (u, v) in pixels; NaN for a point at or behind the
/// source's plane (a grid or region reaching there: FDK refuses such a grid).
glm::dvec2 projectToDetector(const Geometry& geometry, std::size_t view, const glm::dvec3& p);

/// The 12 edges of the grid's box (its outer voxel faces, half a voxel beyond the outer voxel centres) on the detector
/// of `view`, each as two points.
std::vector<DetectorPolyline> gridOutline(const Geometry& geometry, std::size_t view, const VolumeGrid& grid);

/// The outline of a region of interest spec (glrecon/roi.h) on the detector of `view`: a box's 12 edges, a sphere's
/// silhouette (the circle where the rays from the source touch it), a cylinder's end circles and its two silhouette
/// lines; fov-cylinder as its cylinder. Nothing for fov and mask files (the region is not a shape to draw), nor for a
/// spec that does not parse (the reconstruction's check names what is wrong).
std::vector<DetectorPolyline> regionOutline(const std::string& spec, const Geometry& geometry, std::size_t view);

}  // namespace glrecon::viewer
