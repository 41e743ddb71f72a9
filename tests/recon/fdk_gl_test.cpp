// FDK end to end on the GL backends: the same phantom bounds as the cpu backend (fdk_test.cpp).
#include <gtest/gtest.h>

#include <cmath>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "glrecon/phantom.h"
#include "device_fixtures.h"
#include "test_support.h"
#include "fdk_support.h"

namespace glrecon {
namespace {

using namespace test;  // fdk_support.h

// The same reconstruction through each graphics-pipeline backend meets the same phantom bounds (RTK runs one
// test body against every backend the same way). On the GL fixture: skipped where EGL finds no OpenGL device.
class FdkBackends : public test::GlTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(FdkBackends, SheppLogan64FullScan) {
  FdkOptions options;
  options.backend = test::backendOf(GetParam());
  options.window = 8;
  const Phantom phantom = Phantom::sheppLogan();
  const Scan scan = simulate(phantom, 360, 360, 128);
  const VolumeGrid grid = VolumeGrid::centred({64, 64, 64}, glm::dvec3(4.0));
  FdkReport report;
  const Image recon = reconstructFdk(scan.geometry, scan.projections, grid, options, &report);
  EXPECT_EQ(report.backend.rfind(GetParam(), 0), 0u) << report.backend;
  const Metrics m = evaluate(recon, voxelizePhantom(phantom, grid, 4), phantom, scan.geometry, 2 * 4.0);
  EXPECT_LT(m.rmse, kRmse64);
  expectDensities(m, 0.02);
}

// Parallel-beam FBP on each GL backend, its filter on the device: the cpu backend's bounds against the phantom
// (fdk_test.cpp); then the backprojection alone against the cpu backend's, within the texture units' derived bound
// (expectBackprojectionMatchesCpu, fdk_support.h).
TEST_P(FdkBackends, ParallelBeamSheppLogan64OverHalfATurn) {
  FdkOptions options;
  options.backend = test::backendOf(GetParam());
  options.window = 8;
  const Phantom phantom = Phantom::sheppLogan();
  const Scan scan = simulateParallel(phantom, 180, 128);
  const VolumeGrid grid = VolumeGrid::centred({64, 64, 64}, glm::dvec3(4.0));
  FdkReport report;
  const Image recon = reconstructFdk(scan.geometry, scan.projections, grid, options, &report);
  EXPECT_EQ(report.backend.rfind(GetParam(), 0), 0u) << report.backend;
  const Metrics m = evaluate(recon, voxelizePhantom(phantom, grid, 4), phantom, scan.geometry, 2 * 4.0);
  EXPECT_LT(m.rmse, kRmse64Parallel);
  expectDensities(m, 0.02);

  expectBackprojectionMatchesCpu(scan, grid, options, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Gl, FdkBackends, ::testing::Values("graphics", "graphics-mp", "compute"), [](const auto& info) {
  const std::string name = info.param;
  return name == "graphics" ? std::string("AG") : name == "graphics-mp" ? std::string("MP") : std::string("Compute");
});

}  // namespace
}  // namespace glrecon
