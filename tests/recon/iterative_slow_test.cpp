// The algebraic methods on few views against FDK, on the case (label slow: `ctest -LE slow` leaves it out):
// 15 views over 360 degrees of RTK's Shepp-Logan table, analytic projections of 128^2 pixels of 3 mm, 64^3 voxels of
// 4 mm, the RMSE inside the central half-cube (what `glrecon phantom ... --ground-truth`, `sirt --positivity` and
// `compare --roi box:-64,-64,-64,64,64,64` print; docs/iterative.md). With the positivity clamp SIRT and OS-SART reach
// below FDK at their best iteration; without it neither did (SIRT's best 0.0560, OS-SART's 0.0574, FDK 0.0520).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include <glm/glm.hpp>

#include "glrecon/fdk.h"
#include "glrecon/iterative.h"
#include "glrecon/operator.h"
#include "glrecon/phantom.h"
#include "test_support.h"

namespace glrecon {
namespace {

struct FewViews {
  Geometry geometry;
  VolumeGrid grid = VolumeGrid::centred({64, 64, 64}, glm::dvec3(4.0));
  Image projections, truth;
};

FewViews fewViews() {
  CircularScanSpec spec;
  spec.projections = 15;
  spec.nu = spec.nv = 128;
  spec.spacingU = spec.spacingV = 3.0;
  FewViews c;
  c.geometry = makeCircularScan(spec);
  const Phantom phantom = Phantom::sheppLogan(SheppLoganVariant::Rtk, 128.0);
  c.projections = projectPhantom(phantom, c.geometry, {});
  c.truth = voxelizePhantom(phantom, c.grid, 2);
  return c;
}

// Voxels whose centres lie within 64 mm of the centre on every axis: 32^3 of them.
double halfCubeRmse(const Image& volume, const FewViews& c) {
  double sum = 0;
  std::size_t n = 0;
  for (int k = 0; k < c.grid.size[2]; ++k)
    for (int j = 0; j < c.grid.size[1]; ++j)
      for (int i = 0; i < c.grid.size[0]; ++i) {
        const glm::dvec3 w = c.grid.worldOf(i, j, k);
        if (std::abs(w.x) > 64 || std::abs(w.y) > 64 || std::abs(w.z) > 64) continue;
        const double d = volume.at(i, j, k) - c.truth.at(i, j, k);
        sum += d * d;
        ++n;
      }
  EXPECT_EQ(n, 32u * 32u * 32u);
  return std::sqrt(sum / static_cast<double>(n));
}

// The documented best iterations (SIRT 30: 0.0489, OS-SART with 5 subsets 10: 0.0501, FDK 0.0520 when measured):
// each must stay below FDK; no tolerance, the comparison is the goal.
TEST(IterativeSlow, SirtAndOsSartWithPositivityBeatFdkOnFifteenViews) {
  const FewViews c = fewViews();
  FdkOptions fdkOptions;
  fdkOptions.backend = Backend::Cpu;
  const double fdk = halfCubeRmse(reconstructFdk(c.geometry, c.projections, c.grid, fdkOptions), c);
  auto op = makeOperator(Backend::Cpu, c.geometry, c.grid);
  IterativeOptions o;
  o.method = IterativeMethod::Sirt;
  o.iterations = 30;
  o.positivity = true;
  const double sirt = halfCubeRmse(reconstructIterative(*op, c.geometry, c.projections, c.grid, o), c);
  o.method = IterativeMethod::Sart;
  o.subsets = 5;
  o.iterations = 10;
  const double osSart = halfCubeRmse(reconstructIterative(*op, c.geometry, c.projections, c.grid, o), c);
  std::printf("15 views, central half-cube: FDK %.4f, SIRT 30 (x >= 0) %.4f, OS-SART 5 subsets 10 (x >= 0) %.4f\n", fdk, sirt, osSart);
  EXPECT_LT(sirt, fdk);
  EXPECT_LT(osSart, fdk);
}

}  // namespace
}  // namespace glrecon
