// FDK end to end at 128^3 on the cpu backend (label slow: `ctest -LE slow` leaves it out).
#include <gtest/gtest.h>

#include <cmath>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "glrecon/phantom.h"
#include "test_support.h"
#include "fdk_support.h"

namespace glrecon {
namespace {

using namespace test;  // fdk_support.h

constexpr double kRmse128 = 0.029;      // first run: 0.02657 (360 projections of 256^2, 2 mm voxels)

TEST(FdkSlow, SheppLogan128FullScan) {
  const Phantom phantom = Phantom::sheppLogan();
  const Scan scan = simulate(phantom, 360, 360, 256);
  const VolumeGrid grid = VolumeGrid::centred({128, 128, 128}, glm::dvec3(2.0));
  const Image recon = reconstructFdk(scan.geometry, scan.projections, grid, {});
  const Metrics m = evaluate(recon, voxelizePhantom(phantom, grid, 4), phantom, scan.geometry, 2 * 2.0);
  EXPECT_LT(m.rmse, kRmse128);
  expectDensities(m, 0.02);
}

}  // namespace
}  // namespace glrecon
