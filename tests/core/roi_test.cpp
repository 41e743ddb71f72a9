// Regions of interest and the density-range kill: the field of view, shapes and mask files, and on the cpu backend
// bit-identical results inside and zeros outside; the density kill's departure as docs/algorithms.md states it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numbers>

#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "device/gl/context.h"
#include "glrecon/io.h"
#include "glrecon/phantom.h"
#include "glrecon/roi.h"
#include "test_support.h"
#include "roi_support.h"

namespace glrecon {
namespace {

using namespace test;  // roi_support.h

TEST(Roi, FieldOfViewMatchesBruteForceCoverage) {
  const Geometry g = narrowScan(30);
  const RegionOfInterest fov = fieldOfView(g, kGrid);
  std::size_t inside = 0, ambiguous = 0, mismatches = 0;
  for (int k = 0; k < kGrid.size[2]; ++k)
    for (int j = 0; j < kGrid.size[1]; ++j)
      for (int i = 0; i < kGrid.size[0]; ++i) {
        bool seen = true;
        double closest = 1e9;  // distance (pixels) of the nearest detector edge over all projections
        for (std::size_t p = 0; p < g.size(); ++p) {
          const glm::dvec3 h = g.matrix(p, kGrid).apply(glm::dvec4(i, j, k, 1));
          const double u = h.x / h.z, v = h.y / h.z;
          seen = seen && u >= -0.5 && u <= g.detector.nu - 0.5 && v >= -0.5 && v <= g.detector.nv - 0.5;
          closest = std::min({closest, std::abs(u + 0.5), std::abs(u - g.detector.nu + 0.5), std::abs(v + 0.5),
                              std::abs(v - g.detector.nv + 0.5)});
        }
        inside += seen;
        if (seen != fov.inside(i, j, k)) (closest < 1e-9 ? ambiguous : mismatches)++;
      }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_LE(ambiguous, 2u);  // voxels exactly on an edge may go either way in rounding
  EXPECT_EQ(fov.insideCount(), inside);
  EXPECT_GT(inside, kGrid.voxelCount() / 5);  // both outcomes occur: the test can fail either way
  EXPECT_LT(inside, kGrid.voxelCount() * 9 / 10);
}

TEST(Roi, ShapesSpecsAndTheConservativeCylinder) {
  const Geometry g = narrowScan(30);
  const RegionOfInterest sphere = makeRegionOfInterest("sphere:10,-20,5,60", g, kGrid);
  // Voxel count against the sphere's volume, within the voxels its surface crosses (area x voxel diagonal).
  const double voxel = 7.0 * 7.0 * 7.0, r = 60;
  EXPECT_NEAR(sphere.insideCount() * voxel, 4.0 / 3 * std::numbers::pi * r * r * r, 4 * std::numbers::pi * r * r * 7 * std::sqrt(3.0));
  const RegionOfInterest box = makeRegionOfInterest("box:-35,-35,-35,35,35,35", g, kGrid);
  EXPECT_EQ(box.insideCount(), 10u * 10u * 10u);  // centres at +-3.5 + 7n within +-35: 10 per axis
  EXPECT_THROW(makeRegionOfInterest("box:1,2,3", g, kGrid), UsageError);
  EXPECT_THROW(makeRegionOfInterest("sphere:0,0,0,-1", g, kGrid), UsageError);
  EXPECT_THROW(makeRegionOfInterest("torus:1,2", g, kGrid), UsageError);
  // The conservative cylinder lies inside the exact field of view.
  const RegionOfInterest cylinder = makeRegionOfInterest(conservativeCylinder(g), g, kGrid);
  const RegionOfInterest fov = fieldOfView(g, kGrid);
  std::size_t outsideFov = 0;
  for (std::size_t i = 0; i < cylinder.mask.size(); ++i) outsideFov += cylinder.mask[i] && !fov.mask[i];
  EXPECT_EQ(outsideFov, 0u);
  EXPECT_GT(cylinder.insideCount(), fov.insideCount() / 2);
  EXPECT_EQ(makeRegionOfInterest("fov-cylinder", g, kGrid).mask, cylinder.mask);
}

TEST(Roi, MaskFilesAreChecked) {
  const auto dir = test::scratchDir();
  const Geometry g = narrowScan(30);
  Image mask(kGrid);
  mask.at(3, 4, 5) = 1;
  writeMetaImage((dir / "float.mha").string(), mask, false);  // glrecon writes float: the wrong type for a mask
  test::expectError<InputError>([&] { makeRegionOfInterest((dir / "float.mha").string(), g, kGrid); },
                                {"float.mha", "ElementType", "integer", "MET_FLOAT"});
  // Hand-made uint8 masks: right, wrong size, not binary.
  const auto writeMask = [&](const std::string& name, std::array<int, 3> size, unsigned char value) {
    std::string header = "ObjectType = Image\nNDims = 3\nDimSize = " + std::to_string(size[0]) + " " + std::to_string(size[1]) + " " +
                         std::to_string(size[2]) + "\nElementSpacing = 7 7 7\nOffset = " + std::to_string(kGrid.origin.x) + " " +
                         std::to_string(kGrid.origin.y) + " " + std::to_string(kGrid.origin.z) +
                         "\nElementType = MET_UCHAR\nElementDataFile = LOCAL\n";
    std::string data(static_cast<std::size_t>(size[0]) * size[1] * size[2], '\0');
    data[0] = static_cast<char>(value);
    test::writeText(dir / name, header + data);
    return (dir / name).string();
  };
  const RegionOfInterest ok = makeRegionOfInterest(writeMask("ok.mha", kGrid.size, 1), g, kGrid);
  EXPECT_EQ(ok.insideCount(), 1u);
  test::expectError<InputError>([&] { makeRegionOfInterest(writeMask("small.mha", {40, 36, 39}, 1), g, kGrid); },
                                {"small.mha", "DimSize", "40 36 40", "40 36 39"});
  test::expectError<InputError>([&] { makeRegionOfInterest(writeMask("grey.mha", kGrid.size, 7), g, kGrid); },
                                {"grey.mha", "0 or 1", "7"});
}

TEST(Roi, CpuInsideIsBitIdenticalOutsideZero) {
  for (const char* spec : kSpecs) expectRegionExact("cpu", false, spec);
}

TEST(Roi, DensityKillDepartsAsTheReadmeSays) {
  for (const Stated& s : kStated) expectAsStated(densityKillDeparture("cpu", s.after, s.margin), s);
}

}  // namespace
}  // namespace glrecon
