// The app's preview outlines (viewer/grid_preview.h) on the CPU: the grid's box through the grid's own matrix, and each
// round shape's outline where the rays graze it, for a cone scan (tilted and offset, so no symmetry hides an error) and
// a parallel one. The drawn pixels are checked in app_setup_gl_test.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include <glm/geometric.hpp>

#include "viewer/grid_preview.h"

namespace glrecon {
namespace {

using viewer::DetectorPolyline;

Geometry tiltedScan() {
  CircularScanSpec spec;
  spec.projections = 8;
  spec.firstAngle = 17.0;
  spec.nu = 120;
  spec.nv = 90;
  spec.spacingU = 3.0;
  spec.spacingV = 2.5;
  spec.projectionOffsetX = 14.0;
  spec.sourceOffsetY = -6.0;
  spec.outOfPlaneAngle = 4.0;
  return makeCircularScan(spec);
}

// The ray from view `index`'s source (a parallel view: along its rays) through detector point (u, v): a point and a
// unit direction.
std::pair<glm::dvec3, glm::dvec3> rayThrough(const Geometry& g, std::size_t index, const glm::dvec2& uv) {
  const ProjectionVectors& v = g.views[index];
  const glm::dvec3 d = v.detectorPoint(uv.x, uv.y);
  if (v.parallel()) return {d, glm::normalize(v.ray)};
  return {v.source, glm::normalize(d - v.source)};
}

double distanceToRay(const glm::dvec3& p, const std::pair<glm::dvec3, glm::dvec3>& ray) {
  const glm::dvec3 w = p - ray.first;
  return glm::length(w - glm::dot(w, ray.second) * ray.second);
}

// The box's 12 edges: each end a corner of the outer voxel faces (indices -0.5 and n - 0.5) through the grid's matrix.
TEST(GridPreview, BoxEdgesAreTheGridsOuterCornersThroughItsMatrix) {
  const Geometry g = tiltedScan();
  VolumeGrid grid;
  grid.size = {20, 14, 9};
  grid.spacing = {3.0, 4.0, 5.5};
  grid.origin = {-31.0, -20.0, -12.0};
  for (std::size_t view : {std::size_t{0}, std::size_t{5}}) {
    const std::vector<DetectorPolyline> edges = viewer::gridOutline(g, view, grid);
    ASSERT_EQ(edges.size(), 12u);
    const ProjectionMatrix p = g.matrix(view, grid);
    std::vector<glm::dvec2> corners;
    for (int c = 0; c < 8; ++c) {
      const glm::dvec3 h = p.apply({c & 1 ? grid.size[0] - 0.5 : -0.5, c & 2 ? grid.size[1] - 0.5 : -0.5, c & 4 ? grid.size[2] - 0.5 : -0.5, 1.0});
      corners.emplace_back(h.x / h.z, h.y / h.z);
    }
    // Each edge joins two corners differing along one axis; every corner ends three edges.
    std::vector<int> ends(8, 0);
    for (const DetectorPolyline& e : edges) {
      ASSERT_EQ(e.size(), 2u);
      int a = -1, b = -1;
      for (int c = 0; c < 8; ++c) {
        if (glm::length(e[0] - corners[c]) < 1e-9) a = c;
        if (glm::length(e[1] - corners[c]) < 1e-9) b = c;
      }
      ASSERT_TRUE(a >= 0 && b >= 0) << "an edge end is no corner";
      const int differ = a ^ b;
      EXPECT_TRUE(differ == 1 || differ == 2 || differ == 4) << a << " to " << b;
      ++ends[a];
      ++ends[b];
    }
    for (int c = 0; c < 8; ++c) EXPECT_EQ(ends[c], 3) << "corner " << c;
  }
  // A point behind the source has no place on the detector (not a mirrored one); a point in front has.
  const ProjectionVectors& v = g.views[0];
  const glm::dvec3 towardsDetector = glm::normalize(v.detectorPoint(60, 45) - v.source);
  EXPECT_TRUE(std::isnan(viewer::projectToDetector(g, 0, v.source - 10.0 * towardsDetector).x));
  EXPECT_TRUE(std::isfinite(viewer::projectToDetector(g, 0, v.source + 10.0 * towardsDetector).x));
}

// A sphere's outline: every point's ray grazes it (its distance to the centre is the radius), on a cone and a parallel
// scan. The points lie on the silhouette circle exactly (rounding: 1e-9 of the radius).
TEST(GridPreview, SphereOutlineRaysGrazeTheSphere) {
  ParallelScanSpec parallel;
  parallel.projections = 6;
  parallel.firstAngle = 23.0;
  for (const Geometry& g : {tiltedScan(), makeParallelScan(parallel)}) {
    const std::vector<DetectorPolyline> lines = viewer::regionOutline("sphere:12,-7,20,35", g, 3);
    ASSERT_EQ(lines.size(), 1u);
    ASSERT_GT(lines[0].size(), 60u);
    EXPECT_EQ(lines[0].front(), lines[0].back()) << "closed";
    for (const glm::dvec2& uv : lines[0]) EXPECT_NEAR(distanceToRay({12, -7, 20}, rayThrough(g, 3, uv)), 35.0, 35e-9);
  }
}

// A cylinder about y: its two end circles (each point's ray meets the rim: at height y0 or y1, radius R from the axis)
// and its two silhouette lines (each point's ray, seen along y, touches the cross-section).
TEST(GridPreview, CylinderOutlineIsItsRimsAndTheLinesWhereRaysGrazeIt) {
  const Geometry g = tiltedScan();
  const double x = 10, z = -15, r = 40, y0 = -30, y1 = 25;
  const std::vector<DetectorPolyline> lines = viewer::regionOutline("cylinder:10,-15,40,-30,25", g, 2);
  ASSERT_EQ(lines.size(), 4u);
  for (int rim = 0; rim < 2; ++rim) {
    const double y = rim ? y1 : y0;
    for (const glm::dvec2& uv : lines[rim]) {
      // Where the ray crosses the plane of the rim, it is R from the axis.
      const auto [o, d] = rayThrough(g, 2, uv);
      const glm::dvec3 p = o + d * ((y - o.y) / d.y);
      EXPECT_NEAR(std::hypot(p.x - x, p.z - z), r, 1e-6);
    }
  }
  for (int side = 2; side < 4; ++side) {
    ASSERT_EQ(lines[side].size(), 2u);
    for (const glm::dvec2& uv : lines[side]) {
      // Seen along y, the ray (a line in x-z) touches the circle of radius R about (x, z).
      const auto [o, d] = rayThrough(g, 2, uv);
      const glm::dvec2 o2(o.x, o.z), d2 = glm::normalize(glm::dvec2(d.x, d.z)), w = glm::dvec2(x, z) - o2;
      EXPECT_NEAR(std::abs(w.x * d2.y - w.y * d2.x), r, 1e-6);
    }
  }
  // Boxes, fov-cylinder as its cylinder; nothing for what is no shape to draw.
  EXPECT_EQ(viewer::regionOutline("box:-10,-10,-10,20,30,40", g, 0).size(), 12u);
  EXPECT_EQ(viewer::regionOutline("fov-cylinder", g, 0).size(), 4u);
  EXPECT_TRUE(viewer::regionOutline("fov", g, 0).empty());
  EXPECT_TRUE(viewer::regionOutline("mask.mha", g, 0).empty());
  EXPECT_TRUE(viewer::regionOutline("sphere:1,2", g, 0).empty());
  EXPECT_TRUE(viewer::regionOutline("sphere:0,0,0,10", g, g.size()).empty());
}

}  // namespace
}  // namespace glrecon
