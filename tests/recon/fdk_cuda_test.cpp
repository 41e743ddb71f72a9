// FDK end to end on the cuda backend: parallel-beam FBP meets the cpu backend's phantom bounds (fdk_test.cpp). On the
// CUDA fixture.
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
using CudaFdk = test::CudaTest;

// As FdkBackends.ParallelBeamSheppLogan64OverHalfATurn (fdk_gl_test.cpp): the phantom's densities and RMSE bound, and the
// cpu backend's volume within 1e-3 of its largest value (the filter on the device sums the ramp directly, in float).
TEST_F(CudaFdk, ParallelBeamSheppLogan64OverHalfATurn) {
  FdkOptions options;
  options.backend = Backend::Cuda;
  const Phantom phantom = Phantom::sheppLogan();
  const Scan scan = simulateParallel(phantom, 180, 128);
  const VolumeGrid grid = VolumeGrid::centred({64, 64, 64}, glm::dvec3(4.0));
  FdkReport report;
  const Image recon = reconstructFdk(scan.geometry, scan.projections, grid, options, &report);
  EXPECT_EQ(report.backend.rfind("cuda", 0), 0u) << report.backend;
  const Metrics m = evaluate(recon, voxelizePhantom(phantom, grid, 4), phantom, scan.geometry, 2 * 4.0);
  EXPECT_LT(m.rmse, kRmse64Parallel);
  expectDensities(m, 0.02);
  const Image cpu = reconstructFdk(scan.geometry, scan.projections, grid, {});
  float largest = 0, worst = 0;
  for (std::size_t i = 0; i < cpu.data.size(); ++i) {
    largest = std::max(largest, std::abs(cpu.data[i]));
    worst = std::max(worst, std::abs(recon.data[i] - cpu.data[i]));
  }
  std::printf("cuda parallel FBP against cpu: largest |difference| %.3g of %.3g\n", worst, largest);
  EXPECT_LT(worst, 1e-3 * largest);
}

}  // namespace
}  // namespace glrecon
