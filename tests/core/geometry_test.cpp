// Geometry: vectors, matrices, validation.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "glrecon/geometry.h"
#include "test_support.h"

namespace glrecon {
namespace {

using test::expectError;

// A deliberately general scan: offsets, tilt, roll, non-square detector, anisotropic non-centred volume.
Geometry generalScan() {
  CircularScanSpec spec;
  spec.projections = 12;
  spec.arc = 330;
  spec.firstAngle = 17;
  spec.nu = 90;
  spec.nv = 70;
  spec.spacingU = 1.7;
  spec.spacingV = 2.3;
  spec.projectionOffsetX = 12.5;
  spec.projectionOffsetY = -8.0;
  spec.sourceOffsetX = 3.0;
  spec.sourceOffsetY = -2.0;
  spec.outOfPlaneAngle = 7.0;
  spec.inPlaneAngle = -4.0;
  return makeCircularScan(spec);
}

VolumeGrid generalGrid() {
  VolumeGrid g;
  g.size = {20, 14, 9};
  g.spacing = {1.5, 2.0, 3.0};
  g.origin = {-12.0, -10.0, 5.0};
  return g;
}

glm::dvec4 indexOf(const VolumeGrid& g, const glm::dvec3& world) {
  const glm::dvec3 i = (world - g.origin) / g.spacing;
  return {i, 1.0};
}

TEST(Geometry, MatrixMapsDetectorPixelCentresToTheirIndices) {
  const Geometry geometry = generalScan();
  const VolumeGrid grid = generalGrid();
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> uu(0, 89), vv(0, 69), tt(0.2, 0.95);
  for (std::size_t view = 0; view < geometry.size(); ++view) {
    const ProjectionMatrix p = geometry.matrix(view, grid);
    const ProjectionVectors& v = geometry.views[view];
    for (int s = 0; s < 20; ++s) {
      const double u = uu(rng), w = vv(rng);
      // The pixel centre itself, and points on the ray between source and pixel, map to (u, v).
      for (const double t : {1.0, tt(rng)}) {
        const glm::dvec3 world = v.source + t * (v.detectorPoint(u, w) - v.source);
        const glm::dvec3 h = p.apply(indexOf(grid, world));
        // Double arithmetic on millimetre-sized values: 1e-9 pixel is far below any float effect.
        EXPECT_NEAR(h.x / h.z, u, 1e-9);
        EXPECT_NEAR(h.y / h.z, w, 1e-9);
        // w is the depth along the detector normal over the source-to-isocentre distance.
        EXPECT_NEAR(h.z, glm::dot(world - v.source, v.detectorNormal()) / v.sourceToIsocentre(), 1e-12);
      }
    }
  }
}

TEST(Geometry, MatrixMapsTheSourceToInfinity) {
  const Geometry geometry = generalScan();
  const VolumeGrid grid = generalGrid();
  for (std::size_t view = 0; view < geometry.size(); ++view) {
    const glm::dvec3 h = geometry.matrix(view, grid).apply(indexOf(grid, geometry.views[view].source));
    EXPECT_NEAR(h.z, 0.0, 1e-12);  // w = 0: the homogeneous point at infinity
  }
}

TEST(Geometry, RtkMatrixAgreesWithTheVectorForm) {
  // Two independent derivations: RTK's composed matrix (world -> detector mm) and our vectors.
  const Geometry geometry = generalScan();
  VolumeGrid unit;  // index = world mm
  unit.size = {1, 1, 1};
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> c(-80, 80);
  for (std::size_t view = 0; view < geometry.size(); ++view) {
    const auto rtk = rtkProjectionMatrix(geometry.circular[view]);
    const ProjectionMatrix ours = geometry.matrix(view, unit);
    for (int s = 0; s < 10; ++s) {
      const glm::dvec4 x(c(rng), c(rng), c(rng), 1.0);
      double h[3];
      for (int r = 0; r < 3; ++r) h[r] = rtk[r][0] * x.x + rtk[r][1] * x.y + rtk[r][2] * x.z + rtk[r][3];
      const glm::dvec3 o = ours.apply(x);
      const DetectorLayout& d = geometry.detector;
      EXPECT_NEAR((h[0] / h[2] - d.originU) / d.spacingU, o.x / o.z, 1e-9);
      EXPECT_NEAR((h[1] / h[2] - d.originV) / d.spacingV, o.y / o.z, 1e-9);
    }
  }
}

// RTK's parallel geometry (SourceToDetectorDistance 0): its matrix (RTK's affine form, rows (R row, -offset) and
// (0, 0, 0, 1)) and glrecon's vectors are two derivations of the same lines, on the general scan's tilt, roll and
// offsets. The source offsets move no parallel ray (RTK's matrix cancels them): the same vectors with and without.
TEST(Geometry, RtkParallelMatrixAgreesWithTheVectorForm) {
  CircularScanSpec spec;
  spec.projections = 12;
  spec.arc = 330;
  spec.firstAngle = 17;
  spec.sdd = 0.0;
  spec.nu = 90;
  spec.nv = 70;
  spec.spacingU = 1.7;
  spec.spacingV = 2.3;
  spec.projectionOffsetX = 12.5;
  spec.projectionOffsetY = -8.0;
  spec.outOfPlaneAngle = 7.0;
  spec.inPlaneAngle = -4.0;
  const Geometry geometry = makeCircularScan(spec);
  ASSERT_TRUE(geometry.parallel());
  spec.sourceOffsetX = 3.0;
  spec.sourceOffsetY = -2.0;
  const Geometry offset = makeCircularScan(spec);
  VolumeGrid unit;  // index = world mm
  unit.size = {1, 1, 1};
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> c(-80, 80);
  for (std::size_t view = 0; view < geometry.size(); ++view) {
    const auto rtk = rtkProjectionMatrix(offset.circular[view]);
    EXPECT_EQ(rtk[2][0], 0.0);
    EXPECT_EQ(rtk[2][1], 0.0);
    EXPECT_EQ(rtk[2][2], 0.0);
    EXPECT_EQ(rtk[2][3], 1.0);
    const ProjectionMatrix ours = geometry.matrix(view, unit);
    EXPECT_EQ(offset.views[view].pixel00, geometry.views[view].pixel00);
    EXPECT_EQ(offset.views[view].ray, geometry.views[view].ray);
    for (int s = 0; s < 10; ++s) {
      const glm::dvec4 x(c(rng), c(rng), c(rng), 1.0);
      double h[3];
      for (int r = 0; r < 3; ++r) h[r] = rtk[r][0] * x.x + rtk[r][1] * x.y + rtk[r][2] * x.z + rtk[r][3];
      const glm::dvec3 o = ours.apply(x);
      const DetectorLayout& d = geometry.detector;
      // Double arithmetic on millimetre-sized values, as the cone's test above.
      EXPECT_NEAR((h[0] - d.originU) / d.spacingU, o.x, 1e-9);
      EXPECT_NEAR((h[1] - d.originV) / d.spacingV, o.y, 1e-9);
      EXPECT_EQ(o.z, 1.0);
    }
  }
}

// makeParallelScan is RTK's parallel geometry: its RTK parameters (sdd 0, the spec's sid, gantry angles, the detector
// offset as ProjectionOffsetX/Y) give its own vectors again; parameters that disagree with the views are refused.
TEST(Geometry, ParallelScanCarriesItsRtkParameters) {
  ParallelScanSpec spec;
  spec.projections = 4;
  spec.firstAngle = 10.0;
  spec.nu = 6;
  spec.nv = 4;
  spec.offsetU = 2.5;
  spec.offsetV = -1.0;
  const Geometry g = makeParallelScan(spec);
  ASSERT_EQ(g.circular.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(g.circular[i].sdd, 0.0);
    EXPECT_EQ(g.circular[i].sid, 1000.0);
    EXPECT_EQ(g.circular[i].gantryAngle, 10.0 + 45.0 * i);
    EXPECT_EQ(g.circular[i].projectionOffsetX, 2.5);
    EXPECT_EQ(g.circular[i].projectionOffsetY, -1.0);
  }
  const Geometry again = Geometry::fromCircular(g.circular, g.detector);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(again.views[i].ray, g.views[i].ray);
    EXPECT_EQ(again.views[i].pixel00, g.views[i].pixel00);
  }
  Geometry mixed = g;
  mixed.circular[2].sdd = 1536.0;
  expectError<GeometryError>([&] { mixed.validate("test"); },
                             {"projection 2 circular parameters", "SourceToDetectorDistance 0 for a parallel-beam view", "1536"});
  spec.sid = 0.0;
  expectError<GeometryError>([&] { makeParallelScan(spec); },
                             {"projection 0 circular parameters", "a positive SourceToIsocenterDistance", "found 0"});
}

TEST(Geometry, CircularVectorsFollowRtkFrame) {
  DetectorLayout d = DetectorLayout::centred(3, 3, 1.0, 1.0);
  CircularParams p;
  p.sid = 1000;
  p.sdd = 1500;
  p.gantryAngle = 90;
  const ProjectionVectors v = vectorsFromCircular(p, d);
  // Gantry 0 puts the source on +z; the gantry turns about +y, so 90 degrees puts it on +x.
  EXPECT_NEAR(v.source.x, 1000, 1e-9);
  EXPECT_NEAR(v.source.z, 0, 1e-9);
  EXPECT_NEAR(v.sourceToDetector(), 1500, 1e-9);
  EXPECT_NEAR(v.sourceToIsocentre(), 1000, 1e-9);
  const auto pierce = v.piercingPoint();
  EXPECT_NEAR(pierce[0], 1.0, 1e-9);
  EXPECT_NEAR(pierce[1], 1.0, 1e-9);
}

TEST(Geometry, ValidationNamesTheFault) {
  Geometry g = makeCircularScan(CircularScanSpec{});
  Geometry nan = g;
  nan.views[3].source.y = std::nan("");
  expectError<GeometryError>([&] { nan.validate("scan.xml"); }, {"scan.xml", "projection 3", "NaN"});
  Geometry zero = g;
  zero.views[5].uStep = glm::dvec3(0.0);
  expectError<GeometryError>([&] { zero.validate("scan"); }, {"projection 5", "non-zero u and v steps"});
  Geometry parallel = g;
  parallel.views[2].vStep = 3.0 * parallel.views[2].uStep;
  expectError<GeometryError>([&] { parallel.validate("scan"); }, {"projection 2", "span a plane"});
  Geometry onDetector = g;
  onDetector.views[1].source = onDetector.views[1].pixel00 + 5.0 * onDetector.views[1].uStep;
  expectError<GeometryError>([&] { onDetector.validate("scan"); }, {"projection 1", "off the detector plane"});
  Geometry zeroSpacing = g;
  zeroSpacing.detector.spacingU = 0.0;
  expectError<GeometryError>([&] { zeroSpacing.validate("scan"); }, {"detector spacing"});
  Geometry behind = g;
  behind.views[0].source = {0, 0, -400};  // between the detector (z = -536) and the isocentre
  expectError<GeometryError>([&] { behind.validate("scan"); }, {"projection 0", "world origin in front of the source"});
}

TEST(Geometry, VolumeBehindTheSourceIsRefused) {
  const Geometry g = makeCircularScan(CircularScanSpec{});  // source 1000 mm from the isocentre
  const VolumeGrid big = VolumeGrid::centred({64, 64, 64}, glm::dvec3(40.0));  // 2.5 m across
  expectError<GeometryError>([&] { g.checkVolumeInFront(big, "fdk"); }, {"fdk", "behind the source of projection"});
  EXPECT_NO_THROW(g.checkVolumeInFront(VolumeGrid::centred({64, 64, 64}, glm::dvec3(4.0)), "fdk"));
}

TEST(Geometry, ShortScanArcIsHalfTurnPlusFan) {
  const DetectorLayout d = DetectorLayout::centred(100, 10, 2.0, 2.0);  // 200 mm wide
  EXPECT_NEAR(shortScanArcDegrees(1000.0, d), 180.0 + 2.0 * std::atan(100.0 / 1000.0) * 180.0 / M_PI, 1e-12);
}

}  // namespace
}  // namespace glrecon

namespace glrecon {
namespace {

// ---- parallel beam ----

// A circular parallel scan by hand: at gantry angle a the rays run along Ry(a) (0, 0, -1), u along Ry(a) (1, 0, 0), v
// along y, the detector centred on the axis (plus its offsets). A world point x projects to u = (x . u_hat - offsetU) /
// su + (nu - 1)/2, v = (x . y - offsetV) / sv + (nv - 1)/2 wherever it lies along the ray, with w = 1.
TEST(Geometry, ParallelScanMatrixIsAffineAndProjectsAlongTheRays) {
  ParallelScanSpec spec;
  spec.projections = 3;
  spec.firstAngle = 30.0;
  spec.arc = 180.0;
  spec.nu = 40;
  spec.nv = 20;
  spec.spacingU = 1.5;
  spec.spacingV = 2.0;
  spec.offsetU = 4.0;
  spec.offsetV = -3.0;
  const Geometry g = makeParallelScan(spec);
  ASSERT_TRUE(g.parallel());
  VolumeGrid grid;
  grid.size = {10, 12, 14};
  grid.spacing = {1.0, 2.0, 3.0};
  grid.origin = {-5.0, 7.0, -20.0};
  for (std::size_t p = 0; p < g.size(); ++p) {
    const double a = (30.0 + 60.0 * p) * 3.14159265358979323846 / 180.0;
    const glm::dvec3 uHat(std::cos(a), 0.0, -std::sin(a)), ray(-std::sin(a), 0.0, -std::cos(a));
    EXPECT_NEAR(glm::length(glm::cross(g.views[p].ray, ray)), 0.0, 1e-12);
    const ProjectionMatrix m = g.matrix(p, grid);
    EXPECT_EQ(m.m[2][0], 0.0);
    EXPECT_EQ(m.m[2][3], 1.0);
    for (const glm::dvec3 index : {glm::dvec3(0, 0, 0), glm::dvec3(9, 11, 13), glm::dvec3(3.5, 2.25, 7)}) {
      const glm::dvec3 x = grid.worldOf(index.x, index.y, index.z);
      const glm::dvec3 h = m.apply(glm::dvec4(index, 1.0));
      EXPECT_NEAR(h.z, 1.0, 1e-15);
      EXPECT_NEAR(h.x, (glm::dot(x, uHat) - 4.0) / 1.5 + 19.5, 1e-9) << p;
      EXPECT_NEAR(h.y, (x.y + 3.0) / 2.0 + 9.5, 1e-9) << p;
      // Anywhere along the ray: the same pixel.
      const glm::dvec3 moved = (x + 123.0 * ray - grid.origin) / grid.spacing;
      const glm::dvec3 h2 = m.apply(glm::dvec4(moved, 1.0));
      EXPECT_NEAR(h2.x, h.x, 1e-9);
      EXPECT_NEAR(h2.y, h.y, 1e-9);
    }
  }
  // The angle the rays come from, as a cone's source angle (gantry angles 30, 90, 150 degrees).
  const std::vector<double> angles = g.sourceAngles();
  for (std::size_t p = 0; p < 3; ++p) EXPECT_NEAR(angles[p], (30.0 + 60.0 * p) * 3.14159265358979323846 / 180.0, 1e-12);
}

TEST(Geometry, ParallelValidationNamesTheFault) {
  Geometry g = test::parallelScan(4, 8);
  Geometry mixed = g;
  mixed.views[2].ray = glm::dvec3(0.0);
  mixed.views[2].source = glm::dvec3(0, 0, 1000);
  test::expectError<GeometryError>([&] { mixed.validate("scan"); }, {"projection 2 ray", "parallel-beam view", "a cone-beam view"});
  Geometry along = g;
  along.views[1].ray = along.views[1].uStep;  // rays in the detector plane
  test::expectError<GeometryError>([&] { along.validate("scan"); }, {"projection 1 ray", "crosses the detector plane"});
  Geometry nan = g;
  nan.views[0].ray.x = std::nan("");
  test::expectError<GeometryError>([&] { nan.validate("scan"); }, {"projection 0", "NaN"});
}

}  // namespace
}  // namespace glrecon
