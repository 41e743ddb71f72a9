#pragma once
// The region-of-interest cases shared by roi_test.cpp (cpu) and roi_gl_test.cpp (the GL backends).
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

namespace glrecon::test {

// A scan whose field of view is smaller than the volume: corners and top/bottom fall outside.
inline Geometry narrowScan(int projections = 90) {
  CircularScanSpec spec;
  spec.projections = projections;
  spec.nu = 96;
  spec.nv = 64;
  spec.spacingU = spec.spacingV = 4.0;  // 384 x 256 mm: FOV radius ~123 mm, height ~ +-110 mm at the axis
  spec.projectionOffsetX = 20;         // an offset detector makes the FOV off-centre too
  return makeCircularScan(spec);
}

inline const VolumeGrid kGrid = VolumeGrid::centred({40, 36, 40}, glm::dvec3(7.0));  // 280 x 252 x 280 mm

// Reconstructs the phantom with and without a region through `backend`; inside must be bit-identical.
// `substack`: the graphics backend's sub-stack stencil; for the others, culling coarser than the region.
inline void expectRegionExact(const std::string& backend, bool substack, const std::string& spec) {
  const Geometry g = narrowScan();
  const Image projections = projectPhantom(Phantom::sheppLogan(), g, {});
  FdkOptions plain;
  plain.backend = test::backendOf(backend);
  plain.window = 5;
  const Image full = reconstructFdk(g, projections, kGrid, plain);
  FdkOptions restricted = plain;
  restricted.roi = spec;
  restricted.substackStencil = substack;
  FdkReport report;
  const Image part = reconstructFdk(g, projections, kGrid, restricted, &report);
  const RegionOfInterest roi = makeRegionOfInterest(spec, g, kGrid);
  std::size_t insideDiffer = 0, outsideNonzero = 0;
  for (std::size_t i = 0; i < full.data.size(); ++i) {
    if (roi.mask[i])
      insideDiffer += std::memcmp(&full.data[i], &part.data[i], sizeof(float)) != 0;
    else
      outsideNonzero += part.data[i] != 0.0f;
  }
  EXPECT_EQ(insideDiffer, 0u) << backend << " " << spec;
  EXPECT_EQ(outsideNonzero, 0u) << backend << " " << spec;
  EXPECT_EQ(report.regionVoxels, roi.insideCount());
  if (!substack) {
    // Every backend but the sub-stack stencil culls exactly what the region leaves out (the CPU by row spans,
    // so for the convex shapes here exactly too).
    EXPECT_NEAR(report.culledFraction, 1.0 - double(roi.insideCount()) / kGrid.voxelCount(), 0.02) << backend << " " << spec;
  }
  std::printf("%s%s %s: %zu of %zu voxels inside, %.1f%% of updates culled\n", backend.c_str(),
              substack && backend == "graphics" ? " (substack)" : "",
              spec.c_str(), roi.insideCount(), kGrid.voxelCount(), 100 * report.culledFraction);
}

inline const char* kSpecs[] = {"fov", "cylinder:0,0,90,-60,80", "box:-50,-100,-20,70,40,90", "sphere:20,-10,0,75"};

// The density-range kill on the phantom: how far it departs from the full reconstruction, in voxels whose
// full value lies inside the range and outside it.
struct Departure {
  double maxInside = 0, rmsInside = 0, maxOutside = 0, rmsOutside = 0;
  std::size_t killed = 0;
  double culled = 0;
};

inline Departure densityKillDeparture(const std::string& backend, double after, double margin) {
  CircularScanSpec spec;
  spec.projections = 360;
  spec.nu = spec.nv = 128;
  spec.spacingU = spec.spacingV = 4.0;
  const Geometry g = makeCircularScan(spec);
  const Image projections = projectPhantom(Phantom::sheppLogan(), g, {});
  const VolumeGrid grid = VolumeGrid::centred({64, 64, 64}, glm::dvec3(4.0));
  FdkOptions options;
  options.backend = test::backendOf(backend);
  options.window = 8;
  const Image full = reconstructFdk(g, projections, grid, options);
  options.densityKill = {true, 0.95, 1.10, margin, after};  // soft tissue of the phantom; air (0) and skull (2) stop early
  FdkReport report;
  const Image killed = reconstructFdk(g, projections, grid, options, &report);
  Departure d;
  d.killed = report.killedVoxels;
  d.culled = report.culledFraction;
  std::size_t nIn = 0, nOut = 0;
  for (std::size_t i = 0; i < full.data.size(); ++i) {
    const double e = std::abs(double(killed.data[i]) - full.data[i]);
    if (full.data[i] >= 0.95 && full.data[i] <= 1.10) {
      d.maxInside = std::max(d.maxInside, e);
      d.rmsInside += e * e;
      ++nIn;
    } else {
      d.maxOutside = std::max(d.maxOutside, e);
      d.rmsOutside += e * e;
      ++nOut;
    }
  }
  d.rmsInside = std::sqrt(d.rmsInside / nIn);
  d.rmsOutside = std::sqrt(d.rmsOutside / nOut);
  std::printf("%s density kill 0.95:1.10:%.2f after %.0f%%: %zu voxels stopped, %.1f%% updates culled; departure inside the range "
              "max %.4f rms %.5f, outside max %.4f rms %.5f\n",
              backend.c_str(), margin, 100 * after, d.killed, 100 * d.culled, d.maxInside, d.rmsInside, d.maxOutside, d.rmsOutside);
  return d;
}

// What docs/algorithms.md's table says (64^3 Shepp-Logan, 360 projections, range 0.95:1.10): a characterization of
// the heuristic, not an accuracy bound, so the check is two-sided (within 10% of the stated figures).
struct Stated {
  double after, margin;
  std::size_t killed;
  double maxInside, rmsInside, maxOutside, rmsOutside;
};

inline const Stated kStated[] = {
    {0.25, 0.05, 198507, 1.010, 0.0577, 1.846, 0.468},
    {0.50, 0.20, 191552, 0.409, 0.00897, 1.150, 0.114},
};

inline void expectAsStated(const Departure& d, const Stated& s) {
  EXPECT_NEAR(static_cast<double>(d.killed), static_cast<double>(s.killed), 0.1 * s.killed);
  EXPECT_NEAR(d.maxInside, s.maxInside, 0.1 * s.maxInside);
  EXPECT_NEAR(d.rmsInside, s.rmsInside, 0.1 * s.rmsInside);
  EXPECT_NEAR(d.maxOutside, s.maxOutside, 0.1 * s.maxOutside);
  EXPECT_NEAR(d.rmsOutside, s.rmsOutside, 0.1 * s.rmsOutside);
}

}  // namespace glrecon::test
