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

// Parallel-beam FBP on each GL backend, its filter on the device: the cpu backend's bounds (fdk_test.cpp), and the
// cpu backend's volume within 1e-3 of the largest value (the filter on the device sums the ramp directly, in float).
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
  const Image cpu = reconstructFdk(scan.geometry, scan.projections, grid, {});
  float largest = 0, worst = 0;
  for (std::size_t i = 0; i < cpu.data.size(); ++i) {
    largest = std::max(largest, std::abs(cpu.data[i]));
    worst = std::max(worst, std::abs(recon.data[i] - cpu.data[i]));
  }
  std::printf("%s parallel FBP against cpu: largest |difference| %.3g of %.3g\n", GetParam(), worst, largest);
  EXPECT_LT(worst, 1e-3 * largest);
}

INSTANTIATE_TEST_SUITE_P(Gl, FdkBackends, ::testing::Values("graphics", "graphics-mp", "compute"), [](const auto& info) {
  const std::string name = info.param;
  return name == "graphics" ? std::string("AG") : name == "graphics-mp" ? std::string("MP") : std::string("Compute");
});

}  // namespace
}  // namespace glrecon
